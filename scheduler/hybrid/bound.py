"""Valid lower bounds on the mean weighted queue time of the jobs queued in a snapshot.

The CP model's own ``bound`` is no bound on the real problem (its durations are rounded up
and its horizon is cut at the incumbent's makespan), so the gap to optimal is measured here
on two relaxations that every real schedule satisfies:

- :func:`fluid_bound`, per pooled resource (cores, memory, GPUs, MICs, power): the resource is
  one machine that does ``capacity(t)`` units of work a second; a job is ``demand x walltime``
  units of work. In a real schedule a job's work is spread evenly over ``[S, S + d)``, so its
  mean busy time is ``S + d/2``; the weighted mean busy time of any fluid schedule is at least
  the one of the greedy fluid schedule (work by decreasing ``weight / work``, as early as the
  capacity allows; an exchange argument, Goemans' mean-busy-time relaxation). Exact in
  seconds, a few milliseconds.
- :func:`lp_bound`: a time-indexed LP on a grain of ``g`` seconds, solved with HiGHS through
  OR-Tools MathOpt. A start ``S`` in grain ``s = floor((S - now) / g)`` covers grains
  ``s+1 .. s+floor(d/g)-1`` whole, so each grain's pooled use by the jobs that cover it whole
  is at most the lowest capacity in that grain (running jobs counted only in grains they hold
  whole), and ``S - now >= s g``. The last grain is "at the horizon or later", without
  capacity: no horizon cut. Durations rounded down, starts rounded down: a relaxation.

Power demand is a lower estimate (the job's unit power times units, plus its share of a first
core, as in :mod:`.problem`); the static draw of the nodes is a constant of the pass.
"""

from __future__ import annotations

import datetime
import math
from collections.abc import Sequence
from dataclasses import dataclass

from wattsched.scheduler.hybrid.problem import _exclusive_need, _unit_power
from wattsched.scheduler.listsched import live_end
from wattsched.scheduler.model import RESOURCES, Job, PowerState, Snapshot

N_RES = len(RESOURCES) + 1
POWER = len(RESOURCES)


@dataclass(frozen=True, slots=True)
class _Relaxed:
    """Pooled data of a snapshot in seconds: demands, capacity steps, weights."""

    jobs: tuple[Job, ...]
    weight: tuple[float, ...]
    demand: tuple[tuple[float, ...], ...]
    capacity: tuple[float, ...]
    """Pooled capacity per resource (power: the highest cap minus the static draw; inf: none)."""
    running: tuple[tuple[int, tuple[float, ...]], ...]
    """(end, use) of each running job, end as seconds from now (at least 1)."""
    cap_steps: tuple[tuple[int, float], ...]
    """(seconds from now, power room) where the cap changes, from 0."""


def _relax(snap: Snapshot) -> _Relaxed:
    now = snap.time
    usable = [k for k, n in enumerate(snap.nodes) if n.available and n.state is PowerState.ON]
    cap_res = [0.0] * len(RESOURCES)
    for k in usable:
        for r, v in enumerate(snap.nodes[k].capacity.as_tuple()):
            cap_res[r] += v
    static_w = sum(n.power.state_watts(n.state) for n in snap.nodes)
    share = min(
        (snap.nodes[k].power.first_core_w / max(snap.nodes[k].capacity.cores, 1) for k in usable),
        default=0.0,
    )
    max_ewt = snap.max_ewt()
    jobs = tuple(j for j in snap.queued if not j.held)
    demand = []
    for j in jobs:
        need = _exclusive_need(j, snap, usable) if j.exclusive else j.total.as_tuple()
        watts = _unit_power(j, snap, usable) * j.units + share * j.total.cores
        demand.append((*map(float, need), watts))
    index = snap.node_index()
    running = []
    for rj in snap.running:
        use = [0.0] * N_RES
        for name in rj.nodes:
            k = index.get(name)
            if k is None:
                continue
            node = snap.nodes[k]
            use[POWER] += (
                rj.job.unit_power_w
                if rj.job.unit_power_w is not None
                else node.power.unit_watts(rj.job.unit)
            )
            if k in usable:
                for r, v in enumerate(rj.job.unit.as_tuple()):
                    use[r] += v
        running.append((live_end(rj.end_estimate, now) - now, tuple(use)))
    steps = [(0, snap.cap.at(now) - static_w)]
    t: int | None = now
    for _ in range(10_000):
        t = snap.cap.next_change(t) if t is not None else None
        if t is None:
            break
        steps.append((t - now, snap.cap.at(t) - static_w))
    top = max(w for _, w in steps)
    return _Relaxed(
        jobs=jobs,
        weight=tuple(max_ewt / j.ewt for j in jobs),
        demand=tuple(demand),
        capacity=(*cap_res, top),
        running=tuple(running),
        cap_steps=tuple(steps),
    )


def _offset(snap: Snapshot, rel: _Relaxed, weighted_starts: float) -> float:
    """``sum w_j (S_j - now)`` -> mean weighted queue time (``S_j - submit_j``)."""
    n = len(rel.jobs)
    back = sum(w * (snap.time - j.submit) for w, j in zip(rel.weight, rel.jobs, strict=True))
    return (max(weighted_starts, 0.0) + back) / max(n, 1)


def _room(rel: _Relaxed, r: int) -> list[tuple[float, float]]:
    """Capacity of resource ``r`` left by the running jobs, as (from time, rate) steps."""
    points = sorted({0, *(e for e, _ in rel.running), *(t for t, _ in rel.cap_steps)})
    out = []
    for t in points:
        c = rel.capacity[r]
        if r == POWER:
            c = max((w for s, w in rel.cap_steps if s <= t), default=rel.capacity[r])
        c -= sum(use[r] for end, use in rel.running if end > t)
        out.append((float(t), max(c, 0.0)))
    return out


def fluid_bound(snap: Snapshot) -> float:
    """The best of the per-resource fluid bounds, in mean weighted queue time seconds."""
    rel = _relax(snap)
    if not rel.jobs:
        return 0.0
    best = 0.0
    for r in range(N_RES):
        if not math.isfinite(rel.capacity[r]):
            continue
        best = max(best, _fluid_one(rel, r))
    return _offset(snap, rel, best)


def _fluid_one(rel: _Relaxed, r: int) -> float:
    """``sum w_j (S_j - now)`` bound from resource ``r`` alone (see the module doc)."""
    work = [d[r] * j.walltime for d, j in zip(rel.demand, rel.jobs, strict=True)]
    order = sorted(
        (i for i in range(len(rel.jobs)) if work[i] > 0),
        key=lambda i: -rel.weight[i] / work[i],
    )
    steps = _room(rel, r)
    k = 0  # current step
    t = steps[0][0]
    total = 0.0
    for i in order:
        left = work[i]
        moment = 0.0  # integral of t over the job's work
        while left > 1e-12:
            rate = steps[k][1]
            nxt = steps[k + 1][0] if k + 1 < len(steps) else math.inf
            if rate <= 0:
                if not math.isfinite(nxt):
                    return math.inf  # no room ever: no schedule at all
                t, k = nxt, k + 1
                continue
            dt = min(left / rate, nxt - t)
            moment += rate * dt * (t + dt / 2)
            left -= rate * dt
            t += dt
            if t >= nxt and k + 1 < len(steps):
                k += 1
        mean_busy = moment / work[i]
        total += rel.weight[i] * (mean_busy - rel.jobs[i].walltime / 2)
    return total


def lp_bound(
    snap: Snapshot, *, slots: int = 160, horizon: int | None = None, time_limit_s: float = 20.0
) -> float | None:
    """The time-indexed LP bound (module doc) in mean weighted queue time seconds; None when
    HiGHS is not available or does not finish. ``horizon`` (seconds from now; default: the
    sum of walltimes over the machine's width, roughly a makespan) sets the grain with
    ``slots``; any horizon gives a valid bound, a good one a tighter bound."""
    try:
        from ortools.math_opt.python import mathopt
    except ImportError:  # pragma: no cover - the wheel ships it
        return None
    rel = _relax(snap)
    n = len(rel.jobs)
    if n == 0:
        return 0.0
    if horizon is None:
        horizon = max(j.walltime for j in rel.jobs) + sum(j.walltime for j in rel.jobs) // 4
    g = max(1, math.ceil(horizon / slots))
    T = math.ceil(horizon / g)
    m = mathopt.Model(name="time-indexed")
    # y[i][s]: fraction of job i started in grains <= s (s = 0..T-1); grain T: the rest.
    y = [[m.add_variable(lb=0.0, ub=1.0) for _ in range(T)] for _ in range(n)]
    rel_grain = [max(0, (j.submit - snap.time) // g) for j in rel.jobs]
    for i in range(n):
        for s in range(T):
            if s < rel_grain[i]:
                m.add_linear_constraint(y[i][s] <= 0.0)
            if s > 0:
                m.add_linear_constraint(y[i][s] - y[i][s - 1] >= 0.0)
    cover = [max(0, j.walltime // g - 1) for j in rel.jobs]
    for r in range(N_RES):
        if not math.isfinite(rel.capacity[r]):
            continue
        steps = _room_whole(rel, r, g, T)
        users = [i for i in range(n) if rel.demand[i][r] > 0 and cover[i] > 0]
        if not users:
            continue
        for t in range(T):
            # Job i covers grain t whole when it starts in grain s with s+1 <= t <= s+cover.
            terms = []
            for i in users:
                hi, lo = t - 1, t - 1 - cover[i]
                if hi < 0:
                    continue
                expr = y[i][hi] - (y[i][lo] if lo >= 0 else 0.0)
                terms.append(rel.demand[i][r] * expr)
            if terms:
                m.add_linear_constraint(mathopt.fast_sum(terms) <= steps[t])
    # sum_s s * (y_s - y_{s-1}) + T * (1 - y_{T-1}) = T - sum_{s<T} y_s  (grains from now)
    obj = mathopt.fast_sum(rel.weight[i] * g * (T - mathopt.fast_sum(y[i])) for i in range(n))
    m.minimize(obj)
    params = mathopt.SolveParameters(time_limit=_td(time_limit_s))
    try:
        res = mathopt.solve(m, mathopt.SolverType.HIGHS, params=params)
    except Exception:  # a missing or failing solver gives no bound
        return None
    if res.termination.reason != mathopt.TerminationReason.OPTIMAL:
        return None
    return _offset(snap, rel, res.objective_value())


def _room_whole(rel: _Relaxed, r: int, g: int, slots: int) -> list[float]:
    """Room of resource ``r`` in each grain: the lowest over the grain, running jobs counted
    only where they hold the whole grain."""
    out = []
    for t in range(slots):
        a, b = t * g, (t + 1) * g
        c = rel.capacity[r]
        if r == POWER:
            c = min(w for s, w in _segments(rel.cap_steps, a, b))
        c -= sum(use[r] for end, use in rel.running if end >= b)
        out.append(max(c, 0.0))
    return out


def _segments(steps: Sequence[tuple[int, float]], a: int, b: int) -> list[tuple[int, float]]:
    cur = [(s, w) for s, w in steps if s <= a][-1:]
    return cur + [(s, w) for s, w in steps if a < s < b]


def _td(seconds: float) -> datetime.timedelta:
    return datetime.timedelta(seconds=seconds)
