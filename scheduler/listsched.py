"""Forward list scheduling on the node model: the engine behind PRB (and the hybrid's PRB
baseline).

From a working :class:`ClusterState` at time ``t0`` (running jobs booked, ending at their
end estimates), jobs are taken in priority order at each event time (a job end or a cap
change); each job whose units all fit (resources and power) starts there, the others wait
for the next event. The hybrid's mapper with release times is
:func:`wattsched.scheduler.hybrid.mapping.release_map`.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from wattsched.scheduler.mapper import ClusterState, StateCache
from wattsched.scheduler.model import Assignment, Job
from wattsched.scheduler.node_arrays import IntArray, JobVec

OrderFn = Callable[[ClusterState], IntArray]


def live_end(end_estimate: int, now: int) -> int:
    """When a forward schedule from ``now`` lets a running job end: its end estimate, or, for a
    job past it (overrunning its walltime, or a late end report), the next second: it holds
    its nodes until the RMS says it ended, so nothing is placed on them at ``now``."""
    return end_estimate if end_estimate > now else now + 1


PostponeHook = Callable[[int, Job, list[str]], None]
"""Called as ``hook(t, job, running_job_ids)`` when an eligible job does not fit at ``t``."""


@dataclass(slots=True)
class ListResult:
    """Start time and nodes of each job the list scheduler placed; the rest are unplaced."""

    assignments: list[Assignment]
    unplaced: list[Job]
    postponements: int
    """Always 0 here (kept for the hybrid's mapper, which shares this result shape)."""


def list_schedule(
    state: ClusterState,
    cache: StateCache,
    jobs: Sequence[Job],
    t0: int,
    running_ends: Mapping[str, int],
    *,
    node_order: OrderFn,
    full: bool = True,
    horizon: int | None = None,
) -> ListResult:
    """Schedule ``jobs`` (already in priority order) forward from ``t0``.

    ``running_ends`` gives the end estimate of each running job booked in ``state`` (as in
    :meth:`StateCache.running_placements`). With ``full=False`` only time ``t0`` is tried
    (online dispatching: what starts now). ``horizon`` stops the search at that time.
    """
    placements = cache.running_placements()
    # Job ends matter only when looking past t0.
    track = full
    ends: list[tuple[int, str]] = (
        [(live_end(e, t0), jid) for jid, e in running_ends.items()] if track else []
    )
    heapq.heapify(ends)
    booked: dict[str, tuple[JobVec, IntArray, IntArray]] = (
        {jid: placements[jid] for jid in running_ends if jid in placements} if track else {}
    )
    waiting = list(jobs)
    out: list[Assignment] = []
    t = t0
    while waiting:
        # Release every job that has ended by t.
        while ends and ends[0][0] <= t:
            _, jid = heapq.heappop(ends)
            jv, idx, cnt = booked.pop(jid)
            state.release(jv, idx, cnt)
        still: list[Job] = []
        # Pooled prefilter for the whole pass: free resources only shrink while placing, so a
        # job whose total exceeds what is free at the start of the pass cannot start at t.
        f0, f1, f2, f3 = state.free_total_l
        vec = cache.vec
        order: IntArray | None = None
        failed: set[tuple[object, ...]] = set()  # kinds that did not fit since the last commit
        for job in waiting:
            jv = vec(job)
            placed = None
            tl = jv.total_l
            ok = tl[0] <= f0 and tl[1] <= f1 and tl[2] <= f2 and tl[3] <= f3
            if ok and jv.fit_kind not in failed:
                if order is None:
                    order = node_order(state)
                placed = state.place(jv, order, t)
                if placed is None and state.last_fail == "resources":
                    failed.add(jv.fit_kind)
            if placed is None:
                still.append(job)
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
        # Next event: a job end or a cap change.
        candidates: list[int] = []
        if ends:
            candidates.append(ends[0][0])
        nc = state.cap.next_change(t)
        if nc is not None:
            candidates.append(nc)
        if not candidates:
            break
        t_next = min(candidates)
        if horizon is not None and t_next > horizon:
            break
        t = t_next
    return ListResult(out, waiting, 0)
