"""Re-timing a stored plan after early job ends (offline mode, real runtimes).

A plan is computed on walltimes; when jobs end before their walltime the planned starts are
needlessly late. Rather than search again at every early end (the issue-16 finding: 92
re-plans, 78 s, and worse than PRB), the queued jobs are list scheduled again from the
cluster as it is (milliseconds): in PRB's order once jobs are seen to end early (see
:func:`retime` for why), else in the better of the plan's order and PRB's.
"""

from __future__ import annotations

from collections.abc import Mapping

from wattsched.scheduler.dispatcher import prb_key, prb_order
from wattsched.scheduler.hybrid.mapping import MappedSchedule, map_schedule
from wattsched.scheduler.hybrid.problem import weighted_queue_time
from wattsched.scheduler.listsched import list_schedule
from wattsched.scheduler.mapper import StateCache
from wattsched.scheduler.model import Assignment, Job, Plan, RunningJob, Snapshot, SolverStats
from wattsched.scheduler.prb import prb_node_order


def ended_early(
    snap: Snapshot,
    schedule: Mapping[str, Assignment],
    walltime: Mapping[str, int],
    running_ends: Mapping[str, int],
) -> bool:
    """True when a job of the plan (planned, or running when it was made) has ended before
    the plan expected it to."""
    live = {rj.job.id for rj in snap.running} | {j.id for j in snap.queued}
    for jid, a in schedule.items():
        if jid not in live and a.start + walltime[jid] > snap.time:
            return True
    return any(jid not in live and end > snap.time for jid, end in running_ends.items())


def retime(
    snap: Snapshot, cache: StateCache, schedule: Mapping[str, Assignment], ratio: float = 1.0
) -> MappedSchedule:
    """The queued jobs list scheduled again after early ends.

    With ``ratio`` < 1 (jobs are seen to end before their walltime: runtime over walltime of
    the jobs ended so far) PRB's order: a plan's order optimised on walltimes lost to it
    (measured on hist_200_20140331_112449 at the tightest cap, real runtimes, PRB / hybrid:
    0.84 following the plan's order, 0.89 choosing the better of the two on durations scaled
    by ``ratio``, 0.95 choosing on walltimes, 1.00 with PRB's order). With ``ratio`` = 1 the
    better of the plan's order and PRB's on walltimes.
    """
    plan, prb = _orders(snap, cache, schedule)
    if ratio < 1.0:
        return prb
    return plan if plan.objective <= prb.objective else prb


def prb_if_better(
    snap: Snapshot, cache: StateCache, schedule: Mapping[str, Assignment]
) -> tuple[MappedSchedule, float] | None:
    """PRB's schedule and the plan's objective when PRB's order beats the stored plan.

    The guaranteed fallback (issue 16): the plan's queued jobs mapped again from the cluster
    as it is (their planned starts as release times and events; or their stored starts as
    they are, if that is better) against PRB's order decoded by the same mapper on the same
    state. A search's plan is never worse than PRB's when it is made
    (:func:`.search.hybrid_search` starts from it); this keeps it so at every later cycle
    that follows the plan. Every queued job must be in ``schedule``.
    """
    rest = sorted(snap.queued, key=lambda j: (schedule[j.id].start, j.id))
    release = {j.id: max(schedule[j.id].start, snap.time) for j in rest}
    planned = map_schedule(snap, cache, rest, release=release, source="plan",
                           wake_on_release=True)  # fmt: skip
    as_stored = weighted_queue_time(rest, release, snap.max_ewt())
    plan_obj = min(planned.objective, as_stored)
    prb = map_schedule(snap, cache, prb_order(snap.queued), release=None, source="prb")
    return (prb, plan_obj) if prb.objective < plan_obj - 1e-9 else None


def _orders(
    snap: Snapshot, cache: StateCache, schedule: Mapping[str, Assignment]
) -> tuple[MappedSchedule, MappedSchedule]:
    """The queued jobs list scheduled in the plan's start order, and in PRB's."""
    plan = map_schedule(snap, cache, plan_order(snap, schedule), release=None, source="retime")
    prb = map_schedule(snap, cache, prb_order(snap.queued), release=None, source="prb")
    return plan, prb


def plan_order(snap: Snapshot, schedule: Mapping[str, Assignment]) -> list[Job]:
    """The queued jobs in the stored plan's start order (unknown jobs last, PRB order)."""
    rank = {j.id: prb_key(j) for j in snap.queued}
    return sorted(
        snap.queued,
        key=lambda j: (schedule[j.id].start if j.id in schedule else 1 << 62, rank[j.id]),
    )


def prb_starts_now(snap: Snapshot, cache: StateCache) -> list[Assignment]:
    """The jobs the PRB rule starts now (its order and node order, from the cluster as it is)."""
    state = cache.state(snap)
    ends = {rj.job.id: rj.end_estimate for rj in snap.running}
    res = list_schedule(
        state, cache, prb_order(snap.queued), snap.time, ends,
        node_order=prb_node_order, full=False,
    )  # fmt: skip
    return list(res.assignments)


def prb_rule_plan(snap: Snapshot, cache: StateCache, status: str) -> Plan:
    """Jobs start by the PRB rule (its order and node order, from the cluster as it is):
    ``budget_spent``, the offline budget is spent; ``prb_rule``, with runtime ratios, PRB's
    plan was chosen or jobs ended early (:mod:`.robust`), until new jobs come."""
    return Plan(snap.time, tuple(prb_starts_now(snap, cache)), SolverStats(status=status))


def refit(
    snap: Snapshot,
    cache: StateCache,
    schedule: Mapping[str, Assignment],
    now: tuple[Assignment, ...],
) -> tuple[dict[str, Assignment], tuple[Assignment, ...]]:
    """A stored plan as carried out: the starts of this cycle ``now`` (the plan's and the
    fill's) and the plan's later starts mapped again around them (release at their planned
    start, in planned order). Returns the plan to store and its later starts; an empty plan
    and none when the plan's jobs no longer all fit (then the next cycle plans again)."""
    jobs = {j.id: j for j in snap.queued}
    started = {a.job_id: a for a in now}
    extra = [
        RunningJob(jobs[jid], snap.time, a.nodes, snap.time + jobs[jid].walltime)
        for jid, a in started.items()
    ]
    rest = sorted(
        (j for j in snap.queued if j.id not in started and j.id in schedule),
        key=lambda j: (schedule[j.id].start, j.id),
    )
    after = Snapshot(snap.time, snap.nodes, (*snap.running, *extra), tuple(rest), snap.cap)
    release = {j.id: max(schedule[j.id].start, snap.time) for j in rest}
    mapped = map_schedule(after, cache, rest, release=release, source="refit",
                          wake_on_release=True)  # fmt: skip
    if not mapped.complete or len(rest) + len(started) != len(jobs):
        return {}, ()
    return {**started, **{a.job_id: a for a in mapped.assignments}}, mapped.assignments
