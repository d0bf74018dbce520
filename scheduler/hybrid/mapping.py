"""The hybrid's mapper: pooled start times -> a feasible schedule on the real nodes.

This is the PRB mapper of the paper's section 5.2, i.e. list scheduling with the CP start
times as release times (:func:`release_map`): at each event time it places the jobs released
by then, in PRB order, node by node with the real capacities and the full power model
(idle nodes and the non-linear first core counted); a job that does not fit is postponed to
the next event. Each postponement yields a conflict set.

Conflict sets: the paper takes the jobs running at the postponement; those did run together,
so we add the postponed job itself, giving a set that provably could not all run at that
instant. Duplicates are dropped and each job contributes at most its first postponement.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from wattsched.scheduler.hybrid.problem import weighted_queue_time
from wattsched.scheduler.listsched import PostponeHook, list_schedule, live_end
from wattsched.scheduler.mapper import ClusterState, StateCache
from wattsched.scheduler.model import Assignment, Job, Snapshot
from wattsched.scheduler.prb import prb_node_order


@dataclass(frozen=True, slots=True)
class MappedSchedule:
    """A schedule on the real nodes, its real objective, and what the mapper learned."""

    assignments: tuple[Assignment, ...]
    objective: float
    """Mean weighted queue time; ``inf`` when some job could not be placed at all."""
    conflicts: tuple[tuple[str, ...], ...]
    postponed: int
    source: str
    order: tuple[str, ...] = ()
    """The priority list (job ids) that list scheduling turns into this very schedule, when it
    came from one (``map_schedule`` with ``release=None``, a compiled decode); empty for a
    CP solution mapped by release times: its start order may decode to another schedule."""

    @property
    def complete(self) -> bool:
        """True when every job got a start."""
        return self.objective != float("inf")


def map_schedule(
    snap: Snapshot,
    cache: StateCache,
    jobs: Sequence[Job],
    *,
    release: Mapping[str, int] | None,
    source: str,
    max_conflicts: int = 64,
    wake_on_release: bool = False,
) -> MappedSchedule:
    """Map ``jobs`` (in priority order) from ``snap``; ``release=None`` is plain list scheduling.

    ``cache`` must have seen ``snap`` (its running placements are the ones of this snapshot).
    """
    state = cache.state(snap)
    ends = {rj.job.id: rj.end_estimate for rj in snap.running}
    seen: set[frozenset[str]] = set()
    postponed_jobs: set[str] = set()
    conflicts: list[tuple[str, ...]] = []

    def on_postpone(t: int, job: Job, running: list[str]) -> None:
        if job.id in postponed_jobs or len(conflicts) >= max_conflicts:
            return
        postponed_jobs.add(job.id)
        key = frozenset([*running, job.id])
        if len(key) >= 2 and key not in seen:
            seen.add(key)
            conflicts.append(tuple(sorted(key)))

    if release is None:
        res = list_schedule(
            state, cache, jobs, snap.time, ends, node_order=prb_node_order, full=True
        )
        assignments, unplaced, postponed = res.assignments, res.unplaced, res.postponements
    else:
        assignments, unplaced, postponed = release_map(
            state, cache, jobs, snap.time, ends, release, on_postpone, wake_on_release
        )
    starts = {a.job_id: a.start for a in assignments}
    objective = weighted_queue_time(jobs, starts, snap.max_ewt()) if not unplaced else math.inf
    return MappedSchedule(
        assignments=tuple(assignments),
        objective=objective,
        conflicts=tuple(conflicts),
        postponed=postponed,
        source=source,
        order=tuple(j.id for j in jobs) if release is None else (),
    )


def release_map(
    state: ClusterState,
    cache: StateCache,
    jobs: Sequence[Job],
    t0: int,
    running_ends: Mapping[str, int],
    release: Mapping[str, int],
    on_postpone: PostponeHook | None = None,
    wake_on_release: bool = False,
) -> tuple[list[Assignment], list[Job], int]:
    """The paper's mapper: :func:`list_schedule` with release times, event by event.

    With ``wake_on_release=True`` (the search's CP solutions) a release time is an event: a
    released job is tried at its release time, as the CP planned it. The plan is carried out
    at those times because the dispatcher publishes its next planned start
    (:attr:`~wattsched.scheduler.model.Plan.wake_at`) and the replay and the daemon run a
    cycle then. With ``False`` a released job starts at the next job end or cap change, or at
    once when nothing runs (every start on a time at which a cycle runs anyway).
    Returns (assignments, jobs never placed, postponements).
    """
    placements = cache.running_placements()
    ends: list[tuple[int, str]] = [(live_end(e, t0), jid) for jid, e in running_ends.items()]
    heapq.heapify(ends)
    booked = {jid: placements[jid] for jid in running_ends if jid in placements}
    waiting = list(jobs)
    out: list[Assignment] = []
    postponements = 0
    release_times = sorted({r for r in release.values() if r > t0})
    ri = 0
    t = t0
    while waiting:
        while ends and ends[0][0] <= t:
            _, jid = heapq.heappop(ends)
            jv, idx, cnt = booked.pop(jid)
            state.release(jv, idx, cnt)
        for gated in (True, False):
            # Second pass only when nothing runs after the first: no event would come.
            if not gated and (wake_on_release or booked or not waiting):
                break
            still: list[Job] = []
            for job in waiting:
                if gated and release.get(job.id, t0) > t:
                    still.append(job)
                    continue
                jv = cache.vec(job)
                placed = state.place(jv, prb_node_order(state), t)
                if placed is None:
                    still.append(job)
                    postponements += 1
                    if on_postpone is not None:
                        on_postpone(t, job, sorted(booked))
                    continue
                idx, cnt = placed
                state.commit(jv, idx, cnt)
                booked[job.id] = (jv, idx, cnt)
                heapq.heappush(ends, (t + job.walltime, job.id))
                out.append(Assignment(job.id, t, state.names_for(idx, cnt)))
            waiting = still
        if not waiting:
            break
        candidates: list[int] = []
        if ends:
            candidates.append(ends[0][0])
        while ri < len(release_times) and release_times[ri] <= t:
            ri += 1
        if wake_on_release and ri < len(release_times):
            candidates.append(release_times[ri])
        nc = state.cap.next_change(t)
        if nc is not None:
            candidates.append(nc)
        if not candidates:
            break  # nothing runs and nothing fits: these jobs fit nowhere
        t = min(candidates)
    return out, waiting, postponements
