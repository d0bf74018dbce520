"""The discrete thermal scheduling problem of Pierson et al. (a time-indexed instance), shared by
the MILP (:mod:`.milp`) and the heuristics (:mod:`.heuristics`), with its schedule checker and
the paper's bounds.

Time is in steps of ``dt``; node ``i`` decays by ``F_i = exp(-dt / (R_i C_i))`` per step.
A schedule is an integer array ``alloc[i, j, t]`` in units of ``1/q`` of node ``i`` given to job
``j`` during step ``t``: ``q = 1`` in the HPC setting (a node is the job's or idle), ``q = 10``
in the Cloud setting (10 % steps). A node draws ``sum_j alloc p_j / q + P_idle`` in a step where
it runs anything and nothing otherwise (the paper: idle nodes are suspended, eq. 24-26).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from wattsched.scheduler.thermal.model import FloatArray, cop, default_recirculation

IntArray = NDArray[np.int64]
TEMP_TOL = 1e-6
"""Temperatures may pass the threshold by this much (floating point) and still count as under."""


@dataclass(frozen=True, eq=False)
class ThermalInstance:
    """``J`` single-node jobs (work in steps at full speed, dynamic power) on ``N`` nodes."""

    work: IntArray
    power: FloatArray
    n_nodes: int
    r: float = 0.7
    f: float = 0.5
    """Decay per step, ``exp(-dt / (R C))`` (the paper: 0.5)."""
    p_idle: float = 42.0
    t_sup: float = 20.0
    t_thresh: float = 100.0
    d: FloatArray = field(default_factory=lambda: np.zeros((0, 0)))
    """Recirculation (C/W); empty: :func:`default_recirculation` of ``n_nodes``."""
    dt: float = 1.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "work", np.asarray(self.work, dtype=np.int64))
        object.__setattr__(self, "power", np.asarray(self.power, dtype=float))
        if self.d.size == 0:
            object.__setattr__(self, "d", default_recirculation(self.n_nodes))
        if self.work.shape != self.power.shape or np.any(self.work < 1):
            raise ValueError(f"ThermalInstance: work {self.work.tolist()} must be >= 1 per job")
        if self.d.shape != (self.n_nodes, self.n_nodes):
            raise ValueError(f"ThermalInstance: d has shape {self.d.shape}, want {self.n_nodes}^2")
        if not (0.0 < self.f < 1.0 and self.r > 0 and self.t_thresh > self.t_sup):
            raise ValueError(
                f"ThermalInstance: need 0 < f < 1 (f={self.f}), r > 0 (r={self.r}), "
                f"t_thresh > t_sup ({self.t_thresh} <= {self.t_sup})"
            )

    @property
    def n_jobs(self) -> int:
        """Number of jobs."""
        return int(self.work.size)

    def node_power(self, alloc: IntArray, q: int) -> FloatArray:
        """Power per node and step, shape (N, L), of a schedule."""
        dyn = np.einsum("ijt,j->it", alloc, self.power) / q
        return dyn + self.p_idle * (alloc.sum(axis=1) > 0)

    def temperatures(self, power: FloatArray, t0: FloatArray | None = None) -> FloatArray:
        """Outlet temperatures, shape (N, L + 1): column ``t`` before step ``t`` (eq. 3)."""
        n, steps = power.shape
        out = np.empty((n, steps + 1))
        out[:, 0] = self.t_sup if t0 is None else t0
        m = self.r * np.eye(n) + self.d
        for t in range(steps):
            target = self.t_sup + m @ power[:, t]
            out[:, t + 1] = target + (out[:, t] - target) * self.f
        return out

    def gains(self, steps: int) -> FloatArray:
        """``G[m, i, k]``: how much 1 W on node ``k`` during step ``s`` raises ``T_out_i`` at the
        end of step ``s + m`` (the unrolled eq. 3, linear in the powers)."""
        m = self.r * np.eye(self.n_nodes) + self.d
        decay = (1.0 - self.f) * self.f ** np.arange(steps)
        return decay[:, None, None] * m[None, :, :]

    def base_temperature(self, steps: int) -> FloatArray:
        """Outlet temperatures with every node off, (N, steps + 1): all at ``t_sup``."""
        return np.full((self.n_nodes, steps + 1), self.t_sup)

    def energy(self, alloc: IntArray, q: int) -> float:
        """Compute plus cooling energy of a schedule (eq. 23), in J (W x dt)."""
        return float(self.node_power(alloc, q).sum()) * self.dt * (1.0 + 1.0 / cop(self.t_sup))

    # the paper's bounds (Sect. 6.3)
    def makespan_lower_bound(self) -> int:
        """Perfect balance at full speed: ``max(ceil(sum w / N), max w)`` steps."""
        return max(math.ceil(int(self.work.sum()) / self.n_nodes), int(self.work.max()))

    def thermal_makespan_lower_bound(self) -> int:
        """A bound from the heat the nodes can absorb (ours, not the paper's; valid in both
        settings). Summing eq. 3 over the steps of a schedule of makespan ``L`` with the outlet
        rise ``th`` (``T_out - T_sup``) kept under ``cap = T_thresh - T_sup`` gives per node
        ``(1 - F)(R S_i + sum_k D_ik S_k) <= cap (1 + (1 - F)(L - 1))``, ``S_i`` its summed
        power; summed over the nodes, with ``sum S >= E = sum_j w_j (p_j + P_idle)``:
        ``L >= 1 + ((1 - F)(R + min_k sum_i D_ik) E / (N cap) - 1) / (1 - F)``; and per job
        alone on its node, with ``R + D_ii``."""
        cap = self.t_thresh - self.t_sup
        g = 1.0 - self.f
        e = self.work * (self.power + self.p_idle)
        total = (
            g * (self.r + float(self.d.sum(axis=0).min())) * float(e.sum()) / (self.n_nodes * cap)
        )
        one = g * (self.r + float(np.diag(self.d).min())) * float(e.max()) / cap
        need = max(total, one)
        return max(1, math.ceil(1 + (need - 1) / g - 1e-9))

    def energy_upper_bound(self, makespan: int) -> float:
        """Every node on during the whole makespan (the paper's upper bound)."""
        compute = float((self.work * self.power).sum()) + self.n_nodes * makespan * self.p_idle
        return compute * self.dt * (1.0 + 1.0 / cop(self.t_sup))

    def energy_lower_bound(self) -> float:
        """All work at full speed, each node-step on carrying one full step of work."""
        compute = float((self.work * self.power).sum()) + int(self.work.sum()) * self.p_idle
        return compute * self.dt * (1.0 + 1.0 / cop(self.t_sup))


def makespan(alloc: IntArray) -> int:
    """The first step after which nothing runs."""
    busy = np.nonzero(alloc.sum(axis=(0, 1)))[0]
    return int(busy[-1]) + 1 if busy.size else 0


def check_schedule(inst: ThermalInstance, alloc: IntArray, q: int, hpc: bool) -> list[str]:
    """What is wrong with a schedule (empty: valid): work, one node per job, node capacity,
    HPC exclusivity without interleaving, and the temperature threshold."""
    errors: list[str] = []
    n, nj, _ = alloc.shape
    if n != inst.n_nodes or nj != inst.n_jobs:
        return [f"alloc has shape {alloc.shape}, want ({inst.n_nodes}, {inst.n_jobs}, L)"]
    if np.any(alloc < 0) or np.any(alloc > q):
        errors.append(f"alloc values outside 0..{q}")
    done = alloc.sum(axis=(0, 2))
    for j in range(nj):
        if done[j] != inst.work[j] * q:
            errors.append(f"job {j}: {done[j] / q} steps of work done, needs {inst.work[j]}")
        nodes = np.nonzero(alloc[:, j, :].sum(axis=1))[0]
        if nodes.size > 1:
            errors.append(f"job {j} runs on several nodes {nodes.tolist()} (no migration)")
    load = alloc.sum(axis=1)
    if np.any(load > q):
        i, t = np.argwhere(load > q)[0]
        errors.append(f"node {i} over capacity at step {t}")
    if hpc:
        for i in range(n):
            spans = []
            for j in range(nj):
                ts = np.nonzero(alloc[i, j])[0]
                if ts.size:
                    spans.append((int(ts[0]), int(ts[-1]), j))
            spans.sort()
            for (_, e1, j1), (s2, _, j2) in itertools.pairwise(spans):
                if s2 <= e1:
                    errors.append(f"node {i}: job {j2} runs inside job {j1}'s span (HPC)")
    temps = inst.temperatures(inst.node_power(alloc, q))
    if np.any(temps > inst.t_thresh + TEMP_TOL):
        i, t = np.argwhere(temps > inst.t_thresh + TEMP_TOL)[0]
        errors.append(f"node {i} at {temps[i, t]:.3f} C > {inst.t_thresh} C at step {t}")
    return errors
