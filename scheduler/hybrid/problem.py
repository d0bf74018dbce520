"""The pooled scheduling problem of the hybrid dispatcher (problem data, no solver code).

:func:`build_problem` turns a :class:`~wattsched.scheduler.model.Snapshot` into a
:class:`PooledProblem`: the relaxation of the power-capping paper (section 5.1) in which every
resource type is one pool (the sum of the capacities of the nodes the mapper may use: on and
available) and power is one more pooled resource whose capacity is the cap.

Power relaxation, stated exactly: a waiting job draws ``units x`` its unit power (its own
estimate, else the cheapest usable node's per-resource model: the paper's "cheapest nodes"
relaxation), a running job its units' power on the nodes it occupies; the first-core extra of
the non-linear model is left out (the paper's relaxation 3). Unlike the paper's relaxation 1,
the static draw of the nodes (idle power of the nodes that are on, transition or standby power
of the others) is subtracted from the cap: it is a constant of the planning pass (the
dispatcher switches no node), so the bound stays a relaxation and gets tighter.

Times are in grains of ``grain`` seconds counted from the snapshot time; durations are rounded
up and capacities rounded down, so that a pooled schedule never claims more room than exists.
Job ids are mapped to solver indices here and nowhere else.

Placement rules: an ``exclusive`` job books whole nodes, so its pooled need is at least that
many of the smallest usable node (``units`` nodes when ``scatter``, one otherwise), and a
running exclusive job holds its nodes' whole capacity. The pooled schedule only orders the
jobs; the mapper then places each by its rule (and refuses what the rule forbids).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from wattsched.scheduler.model import (
    RESOURCES,
    Assignment,
    Job,
    Placement,
    PowerState,
    Snapshot,
)

N_RES = len(RESOURCES) + 1
"""Pooled resources: the node resources, then power (index :data:`POWER`)."""
POWER = len(RESOURCES)


class ProblemError(ValueError):
    """A pooled problem was built from inconsistent values; the message names them."""


@dataclass(frozen=True, slots=True)
class PooledProblem:
    """The relaxed problem: one interval per waiting job on pooled capacities.

    Index ``i`` refers to ``jobs[i]`` everywhere (``duration``, ``demand``, ``weight``,
    ``release``). ``fixed`` holds the running jobs as ``(end_grain, demand)`` from grain 0 and
    ``cap_dips`` the cap steps as ``(start_grain, end_grain, watts_below_power_capacity)``.
    """

    now: int
    grain: int
    jobs: tuple[Job, ...]
    duration: tuple[int, ...]
    demand: tuple[tuple[int, ...], ...]
    weight: tuple[int, ...]
    release: tuple[int, ...]
    capacity: tuple[int, ...]
    """Pooled capacity per resource, power last (``power_limited`` False: power unused)."""
    power_limited: bool
    fixed: tuple[tuple[int, tuple[int, ...]], ...]
    cap_dips: tuple[tuple[int, int, int], ...]
    horizon: int
    weight_scale: float
    """``weight[i] = round(weight_scale * max_ewt / ewt_i)``."""

    def __post_init__(self) -> None:
        n = len(self.jobs)
        for name in ("duration", "demand", "weight", "release"):
            if len(getattr(self, name)) != n:
                raise ProblemError(
                    f"PooledProblem: {name} has {len(getattr(self, name))} rows, "
                    f"expected {n} (one per job)"
                )
        if self.grain < 1:
            raise ProblemError(f"PooledProblem: grain={self.grain!r} must be >= 1")
        if self.horizon < 0:
            raise ProblemError(f"PooledProblem: horizon={self.horizon!r} must be >= 0")
        for i, job in enumerate(self.jobs):
            if self.release[i] + self.duration[i] > self.horizon:
                raise ProblemError(
                    f"PooledProblem: job {job.id} (release {self.release[i]}, duration "
                    f"{self.duration[i]}) does not fit in the horizon {self.horizon}"
                )

    @property
    def index(self) -> dict[str, int]:
        """Job id -> solver index."""
        return {j.id: i for i, j in enumerate(self.jobs)}

    def to_grain(self, t: int) -> int:
        """A time as a grain offset from the snapshot time (rounded down, >= 0)."""
        return max(0, (t - self.now) // self.grain)

    def release_times(self, starts: Sequence[int]) -> dict[str, int]:
        """Pooled start grains as release times in seconds, by job id (the mapper's input)."""
        return {j.id: self.now + s * self.grain for j, s in zip(self.jobs, starts, strict=True)}

    def starts_of(self, assignments: Sequence[Assignment]) -> list[int | None]:
        """The grains at which a schedule starts each job (None for a job it leaves out)."""
        by_id = {a.job_id: a.start for a in assignments}
        out: list[int | None] = []
        for j in self.jobs:
            t = by_id.get(j.id)
            out.append(None if t is None else -(-(t - self.now) // self.grain))
        return out

    def pooled_objective(self, starts: Sequence[int]) -> int:
        """The CP objective of pooled start grains: ``sum weight_i * start_i``."""
        return sum(w * s for w, s in zip(self.weight, starts, strict=True))


def queue_weights(jobs: Sequence[Job], max_ewt: int) -> list[float]:
    """The objective's weights ``max EWT / EWT_i``."""
    return [max_ewt / j.ewt for j in jobs]


def weighted_queue_time(jobs: Sequence[Job], starts: Mapping[str, int], max_ewt: int) -> float:
    """Mean weighted queue time ``sum (max EWT / EWT_i) * (start_i - submit_i) / n``.

    Raises :class:`ProblemError` naming a job that has no start.
    """
    if not jobs:
        return 0.0
    total = 0.0
    for j in jobs:
        t = starts.get(j.id)
        if t is None:
            raise ProblemError(f"weighted_queue_time: job {j.id} has no start time")
        total += max_ewt / j.ewt * (t - j.submit)
    return total / len(jobs)


def _weight_scale(jobs: Sequence[Job], max_ewt: int) -> float:
    # Exact integers when every EWT divides the largest (Eurora's queues); else 1/100 precision.
    return 1.0 if all(max_ewt % j.ewt == 0 for j in jobs) else 100.0


def _unit_power(job: Job, snap: Snapshot, usable: Sequence[int]) -> float:
    if job.unit_power_w is not None:
        return job.unit_power_w
    return min((snap.nodes[k].power.unit_watts(job.unit) for k in usable), default=0.0)


def _exclusive_need(job: Job, snap: Snapshot, usable: Sequence[int]) -> tuple[int, ...]:
    """A valid pooled need for an exclusive job: the whole of the nodes it must book, each at
    least the smallest usable node's capacity."""
    n = job.units if job.placement is Placement.SCATTER else 1
    total = job.total.as_tuple()
    if not usable:
        return total
    low = [min(snap.nodes[k].capacity.as_tuple()[r] for k in usable) for r in range(len(total))]
    return tuple(max(t, n * c) for t, c in zip(total, low, strict=True))


def build_problem(
    snap: Snapshot,
    jobs: Sequence[Job],
    *,
    grain: int,
    horizon_end: int,
) -> PooledProblem:
    """The pooled problem of ``jobs`` (a subset of ``snap.queued``) from ``snap``.

    ``horizon_end`` is an absolute time (the PRB schedule's makespan, plus any slack): no job
    may end after it. Jobs are kept in the given order (the priority order of the search).
    """
    if grain < 1:
        raise ProblemError(f"build_problem: grain={grain!r} must be >= 1")
    now = snap.time
    usable = [k for k, n in enumerate(snap.nodes) if n.available and n.state is PowerState.ON]
    usable_set = set(usable)
    cap_res = [0] * len(RESOURCES)
    for k in usable:
        for r, v in enumerate(snap.nodes[k].capacity.as_tuple()):
            cap_res[r] += v
    static_w = sum(n.power.state_watts(n.state) for n in snap.nodes)
    max_ewt = snap.max_ewt()
    scale = _weight_scale(jobs, max_ewt)
    horizon = max(0, -(-(horizon_end - now) // grain))
    # A busy node pays its first-core extra once: a job's share of it is at least its cores
    # over the node's cores (on the node where that share is smallest), a valid lower bound.
    first_core_share = min(
        (snap.nodes[k].power.first_core_w / max(snap.nodes[k].capacity.cores, 1) for k in usable),
        default=0.0,
    )

    duration: list[int] = []
    demand: list[tuple[int, ...]] = []
    weight: list[int] = []
    release: list[int] = []
    for j in jobs:
        duration.append(max(1, -(-j.walltime // grain)))
        watts = math.ceil(
            _unit_power(j, snap, usable) * j.units + first_core_share * j.total.cores - 1e-9
        )
        need = j.total.as_tuple()
        if j.exclusive:
            need = _exclusive_need(j, snap, usable)
        demand.append((*need, watts))
        weight.append(max(1, round(scale * max_ewt / j.ewt)))
        release.append(max(0, -(-(j.submit - now) // grain)))
    horizon = max([horizon, *(r + d for r, d in zip(release, duration, strict=True))])

    index = snap.node_index()
    fixed: list[tuple[int, tuple[int, ...]]] = []
    for rj in snap.running:
        # A job past its end estimate still holds its nodes (until the RMS says it ended).
        end = max(1, -(-(rj.end_estimate - now) // grain))
        use = [0] * N_RES
        watts = 0.0
        whole: set[int] = set()
        for name in rj.nodes:
            k = index.get(name)
            if k is None:
                continue
            node = snap.nodes[k]
            watts += (
                rj.job.unit_power_w
                if rj.job.unit_power_w is not None
                else node.power.unit_watts(rj.job.unit)
            )
            if k in usable_set:
                if rj.job.exclusive:  # the whole node, once
                    held = node.capacity if k not in whole else None
                    whole.add(k)
                else:
                    held = rj.job.unit
                for r, v in enumerate(held.as_tuple() if held is not None else ()):
                    use[r] += v
        use[POWER] = math.floor(watts + 1e-9)
        fixed.append((min(end, horizon), tuple(use)))

    dips: list[tuple[int, int, int]] = []
    limited = False
    power_cap = 0
    end_t = now + horizon * grain
    points = {0}
    t: int | None = now
    while t is not None and t < end_t:
        t = snap.cap.next_change(t)
        if t is not None and t < end_t:
            points.add((t - now) // grain)
    seg_starts = sorted(points)
    segs: list[tuple[int, int, float]] = []
    for a, b in zip(seg_starts, [*seg_starts[1:], max(horizon, 1)], strict=True):
        if b > a:
            segs.append((a, b, snap.cap.min_over(now + a * grain, now + b * grain)))
    finite = [w for _, _, w in segs if math.isfinite(w)]
    if finite:
        limited = True
        top = max(w for _, _, w in segs)
        if math.isfinite(top):
            power_cap = max(0, math.floor(top - static_w + 1e-9))
        else:  # unlimited somewhere: room enough for everything at once there
            power_cap = sum(d[POWER] for d in demand) + sum(u[POWER] for _, u in fixed) + 1
        for a, b, w in segs:
            if not math.isfinite(w):
                continue
            room = max(0, math.floor(w - static_w + 1e-9))
            below = min(power_cap, power_cap - room)
            if below > 0:
                dips.append((a, b, below))
    return PooledProblem(
        now=now,
        grain=grain,
        jobs=tuple(jobs),
        duration=tuple(duration),
        demand=tuple(demand),
        weight=tuple(weight),
        release=tuple(release),
        capacity=(*cap_res, max(power_cap, 0)),
        power_limited=limited,
        fixed=tuple(fixed),
        cap_dips=tuple(dips),
        horizon=horizon,
        weight_scale=scale,
    )


def pooled_list_schedule(problem: PooledProblem, order: Sequence[int]) -> list[int] | None:
    """Serial schedule generation on the pooled problem: each job (solver indices, in
    ``order``) at the earliest grain where it fits for its whole duration, given the ones
    before. A pooled-feasible start per job (None if one fits nowhere in the horizon).

    Used to give CP-SAT a hint it can accept as a first solution.
    """
    import numpy as np

    h = problem.horizon
    room = np.tile(np.array(problem.capacity, dtype=np.int64), (h + 1, 1))
    if not problem.power_limited:
        room[:, POWER] = np.iinfo(np.int64).max // 4
    for end, use in problem.fixed:
        room[:end] -= np.array(use, dtype=np.int64)
    for a, b, below in problem.cap_dips:
        room[a:b, POWER] -= below
    starts = [0] * len(problem.jobs)
    for i in order:
        dem = np.array(problem.demand[i], dtype=np.int64)
        d = problem.duration[i]
        bad = (room < dem).any(axis=1).astype(np.int64)
        csum = np.concatenate(([0], np.cumsum(bad)))
        lo, hi = problem.release[i], h - d
        if hi < lo:
            return None
        cand = np.arange(lo, hi + 1)
        okw = (csum[cand + d] - csum[cand]) == 0
        hits = np.flatnonzero(okw)
        if hits.size == 0:
            return None
        s = int(cand[hits[0]])
        room[s : s + d] -= dem
        starts[i] = s
    return starts
