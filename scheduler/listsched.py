"""Forward list scheduling on the node model: the engine behind PRB and the hybrid's mapper.

From a working :class:`ClusterState` at time ``t0`` (running jobs booked, ending at their
end estimates), jobs are taken in priority order at each event time (a job end, a release
time, a cap change); each job whose units all fit (resources and power) starts there, the
others wait for the next event. With ``release`` times (the hybrid's CP start times) a job
is only eligible from its release time on, and a job that is eligible but does not fit is
*postponed*: the ``on_postpone`` hook receives the jobs running at that moment (the conflict
set of the power-capping paper).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from wattsched.scheduler.mapper import ClusterState, IntArray, JobVec, StateCache
from wattsched.scheduler.model import Assignment, Job

OrderFn = Callable[[ClusterState], IntArray]
PostponeHook = Callable[[int, Job, list[str]], None]


@dataclass(slots=True)
class ListResult:
    """Start time and nodes of each job the list scheduler placed; the rest are unplaced."""

    assignments: list[Assignment]
    unplaced: list[Job]
    postponements: int


def list_schedule(
    state: ClusterState,
    cache: StateCache,
    jobs: Sequence[Job],
    t0: int,
    running_ends: Mapping[str, int],
    *,
    node_order: OrderFn,
    release: Mapping[str, int] | None = None,
    full: bool = True,
    on_postpone: PostponeHook | None = None,
    horizon: int | None = None,
) -> ListResult:
    """Schedule ``jobs`` (already in priority order) forward from ``t0``.

    ``running_ends`` gives the end estimate of each running job booked in ``state`` (as in
    :meth:`StateCache.running_placements`). With ``full=False`` only time ``t0`` is tried
    (online dispatching: what starts now). ``horizon`` stops the search at that time.
    """
    placements = cache.running_placements()
    # Job ends matter only when looking past t0 (or for conflict sets).
    track = full or release is not None
    ends: list[tuple[int, str]] = (
        [(e if e > t0 else t0, jid) for jid, e in running_ends.items()] if track else []
    )
    heapq.heapify(ends)
    booked: dict[str, tuple[JobVec, IntArray, IntArray]] = (
        {jid: placements[jid] for jid in running_ends if jid in placements} if track else {}
    )
    waiting = list(jobs)
    out: list[Assignment] = []
    postponements = 0
    release_times = sorted({r for r in (release or {}).values() if r > t0})
    ri = 0
    t = t0
    while waiting:
        # Release every job that has ended by t.
        while ends and ends[0][0] <= t:
            _, jid = heapq.heappop(ends)
            jv, idx, cnt = booked.pop(jid)
            state.release(jv, idx, cnt)
        still: list[Job] = []
        # Pooled prefilter for the whole pass: free resources only shrink while placing, so a
        # job whose total exceeds what is free now cannot start at t.
        vecs = [cache.vec(j) for j in waiting]
        fits = (np.array([v.total for v in vecs]) <= state.free_total).all(axis=1).tolist()
        order: IntArray | None = None
        failed: set[tuple[int, ...]] = set()  # shapes that did not fit since the last commit
        for job, jv, ok in zip(waiting, vecs, fits, strict=True):
            if release is not None and release.get(job.id, t0) > t:
                still.append(job)
                continue
            placed = None
            if ok and jv.shape not in failed:
                if order is None:
                    order = node_order(state)
                placed = state.place(jv, order, t)
                if placed is None and state.last_fail == "resources":
                    failed.add(jv.shape)
            if placed is None:
                still.append(job)
                if release is not None and on_postpone is not None:
                    postponements += 1
                    on_postpone(t, job, sorted(booked))
                continue
            idx, cnt = placed
            state.commit(jv, idx, cnt)
            order = None  # loads changed: the node order may too
            if track:
                booked[job.id] = (jv, idx, cnt)
                heapq.heappush(ends, (t + job.walltime, job.id))
            out.append(Assignment(job.id, t, state.names_for(idx, cnt)))
        waiting = still
        if not full or not waiting:
            break
        # Next event: a job end, a release time, or a cap change.
        candidates: list[int] = []
        if ends:
            candidates.append(ends[0][0])
        while ri < len(release_times) and release_times[ri] <= t:
            ri += 1
        if ri < len(release_times):
            candidates.append(release_times[ri])
        nc = state.cap.next_change(t)
        if nc is not None:
            candidates.append(nc)
        if not candidates:
            break
        t_next = min(candidates)
        if horizon is not None and t_next > horizon:
            break
        t = t_next
    return ListResult(out, waiting, postponements)
