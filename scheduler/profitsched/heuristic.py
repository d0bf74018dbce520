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
    horizon: int | None = None,
) -> DaySchedule:
    """Algorithm 1 on ``order`` (job indices). ``min_start`` raises some jobs' releases (the
    DelaySearch); ``fixed`` jobs keep a given start and nodes and are booked first.

    ``horizon`` (a slot): a job that cannot start before it is left unplaced (start -1) and
    holds nothing, as the paper's ``st_i <= H``: the daily protocol schedules it tomorrow."""
    prof = Profile(problem, limit=horizon)
    sched = DaySchedule.empty(problem.n_jobs)
    for j, (t, nodes) in (fixed or {}).items():
        if t < 0:
            continue
        prof.book(j, t, nodes)
        sched.start[j] = t
        sched.nodes[j] = nodes
    failed = _Failures(problem)
    for j in order:
        if fixed and j in fixed:
            continue
        r = int(problem.release[j])
        if min_start and j in min_start:
            r = max(r, min_start[j])
        if horizon is not None and r >= horizon:
            continue
        if failed.dominated(j, r):
            continue  # a job that asks no more found no room: the profile only fills up
        found = prof.earliest(j, r, horizon)
        if found is None:
            failed.add(j, r)
            continue
        t, nodes = found
        prof.book(j, t, nodes)
        sched.start[j] = t
        sched.nodes[j] = nodes
    return sched


class _Failures:
    """Jobs that found no start before the horizon. Bookings only take capacity away, so a
    later job that asks at least as much of everything (each resource of a unit, units,
    duration, power, release, the same placement rule) finds none either."""

    def __init__(self, problem: DayProblem) -> None:
        rule = np.zeros(problem.n_jobs, dtype=np.int64)
        if problem.max_per_node is not None:
            rule = rule * 2 + (problem.max_per_node == 1)
        if problem.pack is not None:
            rule = rule * 2 + problem.pack.astype(np.int64)
        # One row per job: need per resource, units, duration and power (then the release).
        self.keys = np.column_stack(
            [problem.need, problem.units, problem.duration, problem.power_w]
        ).astype(float)
        self.rule = rule
        self.rows: list[int] = []
        self.releases: list[int] = []
        self._stack: np.ndarray | None = None
        self._rules: np.ndarray = rule[:0]

    def add(self, j: int, release: int) -> None:
        """Job j found no start at or after ``release``."""
        self.rows.append(j)
        self.releases.append(release)
        self._stack = None

    def dominated(self, j: int, release: int) -> bool:
        """Some failed job asked no more than job j (released at ``release``) does."""
        if not self.rows:
            return False
        if self._stack is None:
            self._stack = np.column_stack(
                [self.keys[self.rows], np.asarray(self.releases, dtype=float)]
            )
            self._rules = self.rule[self.rows]
        mine = np.append(self.keys[j], float(release))
        ok = np.all(self._stack <= mine, axis=1) & (self._rules == self.rule[j])
        return bool(ok.any())


def rule_based(
    problem: DayProblem, order: Sequence[int], *, strict: bool, horizon: int | None = None
) -> DaySchedule:
    """The event-driven rule-based scheduler on ``order`` (see the module docstring).

    ``horizon`` (a slot): time stops there; the jobs not started yet stay unplaced (-1)."""
    prof = Profile(problem, limit=horizon)
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
    while left and (horizon is None or t < horizon):
        while a < len(arrivals) and problem.release[arrivals[a]] <= t:
            j = arrivals[a]
            queue.append((int(rank[j]), j))
            a += 1
        queue.sort()
        # Pooled totals now, for the whole queue at once: only jobs that pass are tried.
        idx = np.fromiter((j for _, j in queue), dtype=np.int64, count=len(queue))
        want = problem.need[idx][:, prof.ks] * problem.units[idx][:, None]
        prof._grow(t + 1)
        maybe = np.all(want <= prof.total[:, t][None, :], axis=1)
        maybe &= problem.power_w[idx] <= prof.power[t] + 1e-9
        units_free: dict[bytes, int] = {}  # units of one need the nodes hold now
        started: set[int] = set()
        stop = len(queue)
        if strict and not maybe.all():
            stop = int(np.argmin(maybe))  # the first job that cannot fit blocks the rest
        for pos in np.flatnonzero(maybe[:stop]):
            j = queue[pos][1]
            need = problem.need[j, prof.ks]
            key = need.tobytes()
            if key not in units_free:
                units_free[key] = prof.unit_capacity(need, t)
            if units_free[key] < problem.units[j] or problem.power_w[j] > prof.power[t] + 1e-9:
                if strict:
                    break
                continue
            nodes = prof.allocate(j, t, window=False, pooled_checked=True)
            assert nodes is not None
            prof.book(j, t, nodes)
            units_free.clear()
            started.add(j)
            sched.start[j] = t
            sched.nodes[j] = nodes
            heapq.heappush(ends, t + int(problem.duration[j]))
            left -= 1
        kept = [q for q in queue if q[1] not in started] if started else queue
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
