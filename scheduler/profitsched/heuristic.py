"""The profit paper's job-based heuristic (its Algorithm 1) and rule-based schedulers.

- :func:`job_based`: jobs in the given order; each starts at the earliest slot at or after
  its release where all its units fit for its whole duration (and its power within the
  budget), given the jobs placed before it; it may go into a hole before jobs placed earlier.
- :func:`rule_based`: time goes forward from event to event (a release or an end); at each,
  the queued jobs are tried in the given order and start now if they fit now. ``strict``:
  the first job that does not fit stops the pass until the next end (no overtaking);
  otherwise later jobs may start past it. Nodes are taken in their lexicographic order.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence

import numpy as np

from wattsched.scheduler.profitsched.grid import Profile
from wattsched.scheduler.profitsched.problem import DayProblem, DaySchedule


def job_based(
    problem: DayProblem,
    order: Sequence[int],
    *,
    min_start: dict[int, int] | None = None,
    fixed: dict[int, tuple[int, np.ndarray]] | None = None,
) -> DaySchedule:
    """Algorithm 1 on ``order`` (job indices). ``min_start`` raises some jobs' releases (the
    DelaySearch); ``fixed`` jobs keep a given start and nodes and are booked first."""
    prof = Profile(problem)
    sched = DaySchedule.empty(problem.n_jobs)
    for j, (t, nodes) in (fixed or {}).items():
        prof.book(j, t, nodes)
        sched.start[j] = t
        sched.nodes[j] = nodes
    for j in order:
        if fixed and j in fixed:
            continue
        r = int(problem.release[j])
        if min_start and j in min_start:
            r = max(r, min_start[j])
        t, nodes = prof.earliest(j, r)
        prof.book(j, t, nodes)
        sched.start[j] = t
        sched.nodes[j] = nodes
    return sched


def rule_based(problem: DayProblem, order: Sequence[int], *, strict: bool) -> DaySchedule:
    """The event-driven rule-based scheduler on ``order`` (see the module docstring)."""
    prof = Profile(problem)
    sched = DaySchedule.empty(problem.n_jobs)
    rank = np.empty(problem.n_jobs, dtype=np.int64)
    rank[np.asarray(order, dtype=np.int64)] = np.arange(len(order))
    arrivals = sorted(range(problem.n_jobs), key=lambda j: (int(problem.release[j]), rank[j]))
    queue: list[tuple[int, int]] = []  # (rank, job), kept sorted
    ends: list[int] = [int(e) for e in prof.events]
    heapq.heapify(ends)
    a = 0
    t = 0
    left = problem.n_jobs
    while left:
        while a < len(arrivals) and problem.release[arrivals[a]] <= t:
            j = arrivals[a]
            queue.append((int(rank[j]), j))
            a += 1
        queue.sort()
        kept: list[tuple[int, int]] = []
        blocked = False
        for k, j in queue:
            if blocked:
                kept.append((k, j))
                continue
            nodes = prof.allocate(j, t, window=False)
            if nodes is None:
                kept.append((k, j))
                blocked = strict
                continue
            prof.book(j, t, nodes)
            sched.start[j] = t
            sched.nodes[j] = nodes
            heapq.heappush(ends, t + int(problem.duration[j]))
            left -= 1
        queue = kept
        nxt = []
        if a < len(arrivals):
            nxt.append(int(problem.release[arrivals[a]]))
        while ends and ends[0] <= t:
            heapq.heappop(ends)
        if ends:
            nxt.append(ends[0])
        if not nxt:
            if queue:  # pragma: no cover - an empty cluster fits any job (checked at build)
                raise RuntimeError("rule_based: jobs left with nothing running")
            break
        t = min(nxt)
    return sched
