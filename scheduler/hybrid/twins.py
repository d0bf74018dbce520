"""First come, first served among identical jobs: a plan's slots go to twins in PRB's order.

Jobs that ask for the same thing (queue, user, partition, units, unit, walltime, power
estimate, placement) are the same job to every plan the hybrid weighs: the same weight, the
same shape, the same predicted runtime (:mod:`wattsched.scheduler.runtime_predictor` predicts
by class). Which of them a search starts first is an accident of its moves (a swap of two
twins changes no objective), yet their real runtimes differ. On hist_400_20140401_000242
(session 24) the hybrid started the second of two 8-node, 4-hour jobs submitted one second
apart, PRB the first: 6,642 s against 2,747 s of runtime, so eight nodes stayed busy for
another hour just as a burst of 90 urgent jobs arrived, and the trace was lost to PRB (0.884)
on that coin alone. Users expect an earlier identical job not to be overtaken, and PRB, EASY
and FIFO all start twins in submit order; so does the hybrid now: within each class of twins
the plan's slots (start and nodes) are handed out again in PRB's order. The slots do not
move, and a twin has the same need and power estimate as the job whose slot it takes, so the
plan stays feasible, and its objective is unchanged when every twin is placed (the same
weights at the same starts).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Sequence

from wattsched.scheduler.dispatcher import prb_key
from wattsched.scheduler.model import Assignment, Job


def twin_key(job: Job, power: bool = True) -> Hashable:
    """What makes two queued jobs interchangeable to a plan (see the module doc); without
    ``power``, whatever their power estimates."""
    return (job.queue, job.ewt, job.user, job.partition, job.units, job.unit, job.walltime,
            job.unit_power_w if power else None, job.placement, job.exclusive,
            job.value_per_core_s)  # fmt: skip


def first_come_among_twins(
    assignments: Sequence[Assignment], queued: Sequence[Job], power: bool = True
) -> tuple[Assignment, ...]:
    """``assignments`` with each class of twins' slots given to its jobs in PRB's order: the
    earliest slot (start, then the order of the plan) to the twin PRB puts first, and a twin
    the plan leaves out is a later one. Slots of jobs not queued (running, or unknown), held
    jobs and jobs without a twin are left as they are. ``queued``: the jobs as the RMS gave
    them (with predicted walltimes two unlike jobs can look alike). Without ``power`` jobs
    that differ only in their power estimates are twins too: a slot may then go to a job
    that draws more than the one planned in it, so the plan's starts must be checked against
    the cap again (the dispatcher checks every start on the real cluster)."""
    classes: dict[Hashable, list[Job]] = defaultdict(list)
    for job in queued:
        if not job.held:
            classes[twin_key(job, power)].append(job)
    of = {j.id: key for key, js in classes.items() if len(js) > 1 for j in js}
    slots: dict[Hashable, list[int]] = defaultdict(list)
    for k, a in enumerate(assignments):
        if a.job_id in of:
            slots[of[a.job_id]].append(k)
    out = list(assignments)
    for key, ks in slots.items():
        ordered = sorted(ks, key=lambda k: (assignments[k].start, k))
        twins = sorted(classes[key], key=prb_key)
        for k, job in zip(ordered, twins, strict=False):
            out[k] = Assignment(job.id, assignments[k].start, assignments[k].nodes)
    return tuple(out)
