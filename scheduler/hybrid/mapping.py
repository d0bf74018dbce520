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
from wattsched.scheduler.listsched import PostponeHook, list_schedule
from wattsched.scheduler.mapper import EPS_W, ClusterState, IntArray, JobVec, StateCache
from wattsched.scheduler.model import Assignment, Job, Snapshot
from wattsched.scheduler.prb import prb_node_order


class ScreenedState(ClusterState):
    """A :class:`ClusterState` whose :meth:`place` first rejects, with scalar arithmetic, the
    jobs whose cheapest possible power or pooled cores already exceed what is left.

    The screen only returns None where :meth:`ClusterState.place` would, so schedules are
    identical; it makes the mapper several times faster under tight caps, where most tries
    fail on power.
    """

    @classmethod
    def of(cls, base: ClusterState) -> ScreenedState:
        """A screened working copy of ``base``."""
        out = cls(base.arrays, base.cap)
        out.free = base.free.copy()
        out.busy_units = base.busy_units.copy()
        out.power_w = base.power_w
        out.free_total = base.free_total.copy()
        out.free_total_l = list(base.free_total_l)
        out._min_w = {}
        return out

    _min_w: dict[int, tuple[float, int]]

    def place(
        self,
        jv: JobVec,
        order: IntArray,
        t: int,
        *,
        limit_k: IntArray | None = None,
        power_limit: float | None = None,
    ) -> tuple[IntArray, IntArray] | None:
        key = id(jv)
        hit = self._min_w.get(key)
        if hit is None:
            if jv.unit_power_w is not None:
                low = jv.unit_power_w * jv.units
            else:
                low = float((self.arrays.res_w @ jv.req.astype(float)).min()) * jv.units
            hit = (low, int(jv.total[0]))
            self._min_w[key] = hit
        limit = self.cap_limit(t, jv.walltime) if power_limit is None else power_limit
        # ``last_fail`` as ClusterState.place sets it (list_schedule memoises resource
        # failures by job shape; a power failure must not be taken for one).
        if hit[1] > int(self.free_total[0]):
            self.last_fail = "resources"
            return None
        if self.power_w + hit[0] > limit + EPS_W:
            self.last_fail = "power"
            return None
        return super().place(jv, order, t, limit_k=limit_k, power_limit=limit)


@dataclass(frozen=True, slots=True)
class MappedSchedule:
    """A schedule on the real nodes, its real objective, and what the mapper learned."""

    assignments: tuple[Assignment, ...]
    objective: float
    """Mean weighted queue time; ``inf`` when some job could not be placed at all."""
    conflicts: tuple[tuple[str, ...], ...]
    postponed: int
    source: str

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
    state = ScreenedState.of(cache.state(snap))
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

    Differs from ``list_schedule(release=...)`` in one optional point: with
    ``wake_on_release=False`` (the default) a release time is not an event of its own: a
    released job starts at the next job end or cap change, or at once when nothing runs. Every
    start then falls on a time at which a replay's control cycle runs (the simulated cluster
    wakes the cycle at arrivals, ends and cap steps only), so the plan is carried out exactly.
    Returns (assignments, jobs never placed, postponements).
    """
    placements = cache.running_placements()
    ends: list[tuple[int, str]] = [(max(e, t0), jid) for jid, e in running_ends.items()]
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
