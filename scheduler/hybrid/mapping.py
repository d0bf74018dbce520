"""The hybrid's mapper: pooled start times -> a feasible schedule on the real nodes.

This is the PRB mapper of the paper's section 5.2, i.e. :func:`list_schedule` with the CP
start times as release times: at each event time it places the jobs released by then, in PRB
order, node by node with the real capacities and the full power model (idle nodes and the
non-linear first core counted); a job that does not fit is postponed to the next event. Each
postponement yields a conflict set.

Conflict sets: the paper takes the jobs running at the postponement; those did run together,
so we add the postponed job itself, giving a set that provably could not all run at that
instant. Duplicates are dropped and each job contributes at most its first postponement.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from wattsched.scheduler.hybrid.problem import weighted_queue_time
from wattsched.scheduler.listsched import list_schedule
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
        if self.power_w + hit[0] > limit + EPS_W or hit[1] > int(self.free_total[0]):
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

    res = list_schedule(
        state,
        cache,
        jobs,
        snap.time,
        ends,
        node_order=prb_node_order,
        release=release,
        full=True,
        on_postpone=on_postpone if release is not None else None,
    )
    starts = {a.job_id: a.start for a in res.assignments}
    objective = (
        weighted_queue_time(jobs, starts, snap.max_ewt()) if not res.unplaced else float("inf")
    )
    return MappedSchedule(
        assignments=tuple(res.assignments),
        objective=objective,
        conflicts=tuple(conflicts),
        postponed=res.postponements,
        source=source,
    )
