"""The thermal guard: any dispatcher, minus the starts that could take a node over its threshold.

:class:`ThermalGuard` wraps a dispatcher. Each cycle it reads the nodes' outlet temperatures
(a callable: the simulated cluster's model, or the daemon's readings), computes each node's
power from the snapshot, and

1. marks unavailable, in the snapshot the wrapped dispatcher sees, every node that is over its
   threshold now or could not take even the lightest, shortest waiting job unit (so that the
   dispatcher looks elsewhere);
2. checks each start of the wrapped plan, in order, and drops those that fail the bound below
   (a dropped job waits for a later cycle).

The bound: a start on node ``k`` is admitted when, with node ``k`` at its power after the start
(``P_k``), every other node at its *full* power (``max_power_w``) and node ``k``'s temperature now
``T0``, the RC + recirculation model keeps ``T_k`` under the threshold up to the horizon ``H`` (the
job's walltime, or the longest remaining walltime on the node if longer): the temperature
moves monotonically from ``T0`` towards its target, so ``max(T0, T(H)) <= T_thresh`` suffices; it
only grows with any node's power (R, D >= 0), so the real one stays below the bound; after
``H`` the node's jobs have ended (killed at their walltime) and it cools towards its idle target,
which must lie under the threshold too (:meth:`ThermalGuard.idle_unsafe` lists the nodes where it
does not: a configuration error). Each later start on ``k`` is checked again from its state then,
so no node passes its threshold (``tests/thermal/test_thermal_replay.py``).

The guard is not exact for replay skipping (a node that cooled may take a job after a cycle that
started nothing): :attr:`skips_exact` is False, and ``wake`` (the simulated cluster's
``wake_at``) is asked to run a cycle ``recheck_s`` later while it held something back and some
node is still cooling (its temperature above its current target).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import replace

import numpy as np
from numpy.typing import NDArray

from wattsched.scheduler.dispatcher import Dispatcher
from wattsched.scheduler.model import Job, Node, Plan, Snapshot
from wattsched.scheduler.thermal.model import FloatArray, ThermalParams

TOL_C = 1e-9


def full_power_w(node: Node) -> float:
    """A node's draw with everything busy, by its power model."""
    m, cap = node.power, node.capacity
    return (
        m.idle_w + m.first_core_w + cap.cores * m.core_w + cap.gpus * m.gpu_w + cap.mics * m.mic_w
    )


def unit_power_w(job: Job, node: Node) -> float:
    """One unit of ``job`` on ``node``: the job's estimate, else the node's power model."""
    return job.unit_power_w if job.unit_power_w is not None else node.power.unit_watts(job.unit)


def node_powers(
    params: ThermalParams, snap: Snapshot
) -> tuple[FloatArray, FloatArray, dict[str, Node]]:
    """Each node's power now (``params`` order, from the snapshot's power models), its longest
    remaining walltime, and the snapshot's nodes by name."""
    pos = params.index()
    power = np.zeros(params.n)
    left = np.zeros(params.n)
    by_name = {n.name: n for n in snap.nodes}
    busy: set[int] = set()
    for rj in snap.running:
        for name in rj.nodes:
            k = pos.get(name)
            if k is None or name not in by_name:
                continue
            power[k] += unit_power_w(rj.job, by_name[name])
            left[k] = max(left[k], float(rj.end_estimate - snap.time))
            busy.add(k)
    for n in snap.nodes:
        k = pos.get(n.name)
        if k is not None:
            power[k] += n.power.state_watts(n.state)
            if k in busy:
                power[k] += n.power.first_core_w
    return power, left, by_name


class ThermalGuard(Dispatcher):
    """``inner`` whose starts never take a node over its threshold (module docstring).

    ``temperatures()`` returns the outlet temperature per node in ``params.names`` order, now.
    """

    skips_exact = False

    def __init__(
        self,
        inner: Dispatcher,
        params: ThermalParams,
        temperatures: Callable[[], FloatArray],
        *,
        max_power_w: Sequence[float] | None = None,
        wake: Callable[[int], None] | None = None,
        recheck_s: int = 300,
    ) -> None:
        super().__init__()
        self.inner = inner
        self.name = f"{inner.name}+thermal"
        self.params = params
        self.temperatures = temperatures
        self.max_power_w = None if max_power_w is None else np.asarray(max_power_w, float)
        self.wake = wake
        self.recheck_s = recheck_s
        self.blocked_cycles = 0
        """Cycles in which the guard held a node or a start back."""
        self.dropped_starts = 0
        """Starts of the wrapped plan the guard refused."""
        self._tau = params.r * params.c
        self._pos = params.index()
        self._recheck_at: int | None = None
        self._diag = np.diag(params.d).copy()
        self._others_memo: tuple[bytes, FloatArray] | None = None
        self._coolest_memo: tuple[tuple[Node, ...], FloatArray] | None = None
        self._hide_memo: dict[int, tuple[Node, Node]] = {}
        self._never_memo: dict[object, bool] = {}
        self.never_admissible = 0
        """Waiting jobs no node can ever take under the threshold (last cycle)."""

    # -- the model's view of the snapshot -------------------------------------------------------

    def _pmax(self, snap: Snapshot) -> FloatArray:
        if self.max_power_w is not None:
            return self.max_power_w
        pos = self._pos
        out = np.zeros(self.params.n)
        for n in snap.nodes:
            if n.name in pos:
                out[pos[n.name]] = full_power_w(n)
        return out

    def _powers(self, snap: Snapshot) -> tuple[FloatArray, FloatArray, dict[str, Node]]:
        """Power per node now (params order) and each node's longest remaining walltime."""
        return node_powers(self.params, snap)

    def _others(self, pmax: FloatArray) -> FloatArray:
        """Per node, the inlet warming by every other node at full power (cached per ``pmax``)."""
        key = pmax.tobytes()
        if self._others_memo is None or self._others_memo[0] != key:
            d = self.params.d
            # row by row, the same float sums as a scalar ``d[k] @ pmax``
            dots = np.array([float(d[k] @ pmax) for k in range(self.params.n)])
            self._others_memo = (key, dots - self._diag * pmax)
        return self._others_memo[1]

    def _bound(self, k: int, p_k: float, horizon: float, t0: float, pmax: FloatArray) -> float:
        """The highest temperature node ``k`` can reach before ``horizon`` (module docstring)."""
        p = self.params
        others = float(self._others(pmax)[k])
        target = p.t_sup + (p.r[k] + p.d[k, k]) * p_k + others
        at_h = target + (t0 - target) * math.exp(-horizon / self._tau[k])
        return max(t0, at_h)

    def _bounds(
        self,
        ks: NDArray[np.intp],
        p_k: FloatArray,
        horizon: FloatArray,
        t0: FloatArray,
        pmax: FloatArray,
    ) -> FloatArray:
        """:meth:`_bound` for the nodes ``ks`` at once (vectorised)."""
        p = self.params
        target = p.t_sup + (p.r[ks] + self._diag[ks]) * p_k + self._others(pmax)[ks]
        at_h = target + (t0 - target) * np.exp(-horizon / self._tau[ks])
        return np.maximum(t0, at_h)

    def _never_admissible(self, snap: Snapshot, pmax: FloatArray) -> set[str]:
        """Jobs one unit of which fails the bound even on an idle node at its coolest (every
        node idle), on every node: no start of them can ever be admitted."""
        p = self.params
        pos = self._pos
        if self._coolest_memo is None or self._coolest_memo[0] is not snap.nodes:
            idle = np.zeros(p.n)
            for n in snap.nodes:
                if n.name in pos:
                    idle[pos[n.name]] = n.power.idle_w
            self._coolest_memo = (snap.nodes, p.steady(idle))
        coolest = self._coolest_memo[1]
        out: set[str] = set()
        memo = self._never_memo
        for j in snap.queued:
            key = (j.unit_power_w, j.unit, j.walltime)
            bad = memo.get(key)
            if bad is None:
                bad = True
                for n in snap.nodes:
                    k = pos.get(n.name)
                    if k is None:
                        continue
                    w = n.power.idle_w + n.power.first_core_w + unit_power_w(j, n)
                    if self._bound(k, w, float(j.walltime), coolest[k], pmax) <= p.t_thresh:
                        bad = False
                        break
                memo[key] = bad
            if bad:
                out.add(j.id)
        self.never_admissible = len(out)
        return out

    def idle_unsafe(self, snap: Snapshot) -> list[str]:
        """Nodes whose idle target passes the threshold with every other node at full power."""
        pmax = self._pmax(snap)
        pos = self._pos
        out = []
        for n in snap.nodes:
            k = pos.get(n.name)
            if k is not None:
                t = self._bound(k, n.power.idle_w, math.inf, self.params.t_sup, pmax)
                if t > self.params.t_thresh:
                    out.append(n.name)
        return out

    def _hidden(self, node: Node) -> Node:
        """``node`` marked unavailable (memoised per node object: snapshots reuse them)."""
        got = self._hide_memo.get(id(node))
        if got is None or got[0] is not node:
            got = (node, replace(node, available=False))
            self._hide_memo[id(node)] = got
        return got[1]

    def _unsafe_nodes(
        self,
        snap: Snapshot,
        eligible: Sequence[Job],
        power: FloatArray,
        left: FloatArray,
        temps: FloatArray,
        pmax: FloatArray,
    ) -> set[str]:
        """Nodes over the threshold now, or that the lightest, shortest waiting unit could
        take over it (vectorised over nodes)."""
        p = self.params
        pos = self._pos
        short = float(min(j.walltime for j in eligible))
        fixed = [j.unit_power_w for j in eligible if j.unit_power_w is not None]
        light_fixed = min(fixed) if fixed else math.inf
        units = {j.unit for j in eligible if j.unit_power_w is None}
        names, ks, extra = [], [], []
        lights: dict[int, tuple[object, float]] = {}  # per power model (nodes share them)
        for n in snap.nodes:
            k = pos.get(n.name)
            if k is None:
                continue
            got = lights.get(id(n.power))
            if got is None or got[0] is not n.power:
                w = min((n.power.unit_watts(u) for u in units), default=math.inf)
                got = (n.power, min(light_fixed, w))
                lights[id(n.power)] = got
            light = got[1]
            names.append(n.name)
            ks.append(k)
            idle = power[k] == n.power.state_watts(n.state)
            extra.append(light + (n.power.first_core_w if idle else 0.0))
        if not ks:
            return set()
        karr = np.array(ks, dtype=np.intp)
        t0 = temps[karr]
        bound = self._bounds(
            karr, power[karr] + np.array(extra), np.maximum(short, left[karr]), t0, pmax
        )
        bad = (t0 > p.t_thresh) | (bound > p.t_thresh + TOL_C)
        return {names[i] for i in np.nonzero(bad)[0].tolist()}

    # -- the plan --------------------------------------------------------------------------------

    def plan(self, snap: Snapshot) -> Plan:
        """The wrapped dispatcher's plan, on the safe nodes, with only the safe starts."""
        if not snap.queued:
            return self.inner.plan(snap)
        p = self.params
        pos = self._pos
        temps = np.asarray(self.temperatures(), dtype=float)
        pmax = self._pmax(snap)
        power, left, by_name = self._powers(snap)
        never = self._never_admissible(snap, pmax)
        eligible = [j for j in snap.queued if not j.held and j.id not in never]
        unsafe: set[str] = set()
        if eligible:
            unsafe = self._unsafe_nodes(snap, eligible, power, left, temps, pmax)
        view = snap
        if never:
            # jobs no node can ever take: out of the dispatcher's sight (as jobs too big for
            # the machine), so that they do not hold the queue (EASY's head reservation)
            view = replace(
                snap, queued=tuple(j for j in snap.queued if j.id not in never), queued_index=None
            )
        if unsafe:
            nodes = tuple(
                self._hidden(n) if n.name in unsafe and n.available else n for n in snap.nodes
            )
            view = replace(view, nodes=nodes)
        plan = self.inner.plan(view)
        jobs = {j.id: j for j in snap.queued}
        kept = []
        dropped = 0
        held = {pos[n] for n in unsafe if n in pos}
        for a in plan.assignments:
            job = jobs.get(a.job_id)
            if a.start > snap.time or job is None:
                kept.append(a)
                continue
            add: dict[int, float] = {}
            for name in a.nodes:
                k = pos.get(name)
                if k is not None:
                    add[k] = add.get(k, 0.0) + unit_power_w(job, by_name[name])
            ok = True
            for k, w in add.items():
                node = by_name[p.names[k]]
                idle = power[k] == node.power.state_watts(node.state)
                w_k = power[k] + w + (node.power.first_core_w if idle else 0.0)
                h = max(float(job.walltime), float(left[k]))
                if self._bound(k, w_k, h, temps[k], pmax) > p.t_thresh + TOL_C:
                    ok = False
                    break
            if not ok:
                dropped += 1
                held.update(add)
                continue
            kept.append(a)
            for k, w in add.items():
                node = by_name[p.names[k]]
                if power[k] == node.power.state_watts(node.state):
                    power[k] += node.power.first_core_w
                power[k] += w
                left[k] = max(left[k], float(job.walltime))
        if unsafe or dropped:
            self.blocked_cycles += 1
            self.dropped_starts += dropped
            # ask again later only where waiting helps: a held-back node that is cooling
            hot = temps > p.steady(power) + 0.01
            cooling = any(bool(hot[k]) for k in held)
            # one pending re-check at a time: a cycle before it re-checks anyway (a wake per
            # blocked cycle made a chain of wakes per event: 22,000 cycles on 400 jobs)
            pending = self._recheck_at is not None and self._recheck_at > snap.time
            if self.wake is not None and cooling and not pending:
                self._recheck_at = snap.time + self.recheck_s
                self.wake(self._recheck_at)
        if not dropped:
            return plan
        return replace(plan, assignments=tuple(kept))


def recheck_default(params: ThermalParams) -> int:
    """A re-check period: half the shortest RC time constant, at least 30 s."""
    return max(30, math.ceil(float((params.r * params.c).min()) / 2))
