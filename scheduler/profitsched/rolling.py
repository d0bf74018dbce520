"""The profit paper's daily protocol: at the start of each day, schedule what has arrived.

Each day ``[d, d + day_s)`` the scheduler gets every job submitted before the day ends that
has not started yet (released at its submit time, or at the day's start for jobs carried
over), with the jobs already running holding their nodes until they end. The jobs it starts
before the day ends are committed; the others wait for the next day's run. Pure: the caller
passes the scheduler (a rule, MultiSearch, DelaySearch) and reads the records.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from wattsched.scheduler.model import RESOURCES, Job, Node
from wattsched.scheduler.profitsched.problem import Busy, DayProblem, DaySchedule

DAY_S = 86_400

DayScheduler = Callable[[DayProblem, int], DaySchedule]
"""Called as ``scheduler(problem, day_end)``; returns the day's schedule."""
Progress = Callable[[int, int], None]
"""Called as ``progress(jobs_committed, jobs_total)`` after each day."""


@dataclass(frozen=True, slots=True)
class Placed:
    """A committed job: its start and end (seconds) and one node per unit."""

    job: Job
    start: int
    end: int
    nodes: tuple[str, ...]


@dataclass(slots=True)
class RollingResult:
    """Every committed job, and per day: its start, jobs planned and scheduler seconds."""

    placed: list[Placed] = field(default_factory=list)
    days: list[tuple[int, int, float]] = field(default_factory=list)


def rolling_days(
    nodes: Sequence[Node],
    jobs: Sequence[Job],
    scheduler: DayScheduler,
    *,
    power_w: Mapping[str, float],
    rate: Mapping[str, float],
    runtime: str = "real",
    slot_s: int = 60,
    day_s: int = DAY_S,
    power_budget_w: float | None = None,
    progress: Progress | None = None,
    clock: Callable[[], float] = time.perf_counter,
    max_days: int | None = None,
) -> RollingResult:
    """Run ``scheduler`` once a day over the workload (see the module docstring).

    ``runtime``: ``real`` (a job runs its trace runtime, known to the scheduler as in the
    paper's offline setting) or ``walltime`` (it runs its requested time). ``max_days``: stop
    after that many scheduling days (a profit horizon needs only its own days); the jobs not
    started by then are left out of the result.
    """
    if runtime not in ("real", "walltime"):
        raise ValueError(f"runtime {runtime!r}: expected real or walltime")
    todo = sorted(jobs, key=lambda j: (j.submit, j.id))
    out = RollingResult()
    if not todo:
        return out
    day = (todo[0].submit // day_s) * day_s
    nxt = 0
    carried: list[Job] = []
    while (nxt < len(todo) or carried) and (max_days is None or len(out.days) < max_days):
        end = day + day_s
        while nxt < len(todo) and todo[nxt].submit < end:
            carried.append(todo[nxt])
            nxt += 1
        if not carried:
            day = (todo[nxt].submit // day_s) * day_s
            continue
        busy = [
            Busy(n, _need(p.job), p.end, power_w[p.job.id] / p.job.units)
            for p in out.placed
            if p.end > day
            for n in p.nodes
        ]
        dur = [_duration(j, runtime) for j in carried]
        problem = DayProblem.build(
            nodes, carried, origin=day, slot_s=slot_s, durations=dur,
            power_w=[power_w[j.id] for j in carried], rate=[rate[j.id] for j in carried],
            busy=busy, power_budget_w=power_budget_w,
        )  # fmt: skip
        t0 = clock()
        sched = scheduler(problem, end)
        seconds = clock() - t0
        starts = sched.start_s(problem)
        left: list[Job] = []
        for i, job in enumerate(carried):
            if 0 <= starts[i] < end:
                names = tuple(problem.node_names[k] for k in sched.nodes[i])
                out.placed.append(Placed(job, int(starts[i]), int(starts[i]) + dur[i], names))
            else:
                left.append(job)
        out.days.append((day, len(carried), seconds))
        carried = left
        day = end
        if progress is not None:
            progress(len(out.placed), len(todo))
    return out


def _need(job: Job) -> tuple[int, ...]:
    return tuple(getattr(job.unit, r) for r in RESOURCES)


def _duration(job: Job, runtime: str) -> int:
    if runtime == "real" and job.runtime is not None:
        return max(1, job.runtime)
    return job.walltime
