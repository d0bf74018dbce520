"""How much work one node can do in ``m`` steps under the threshold, alone and cold: the
exact dynamic programme behind the jobs' minimum spans (:func:`.milp_cp.min_spans`) and the
per-node work caps of the strong model (:func:`work_caps`).

A node runs work of one power ``p`` in shares of ``1/q`` (HPC ``q = 1``: a step is on or off;
Cloud ``q = 10``); a step with share ``s > 0`` draws ``P_idle + s p / q``, one with none draws
nothing. Its outlet rise follows eq. 3 with ``R + min_i D_ii`` (the other nodes'
recirculation only adds heat). The programme keeps, for each amount of work done, the coolest
outlet reachable (a cooler node can do whatever a hotter one can), so it is exact, and it is a
relaxation of any schedule in which the node's work all has power ``>= p``: the node starts
no cooler than ``T_sup``, other work on it and other nodes only add heat.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from wattsched.scheduler.thermal.instance import ThermalInstance

_TOL = 1e-6


def max_work(inst: ThermalInstance, power: float, q: int, steps: int, cap_work: int) -> list[int]:
    """``out[m]``: the most work (units of ``1/q`` step, at most ``cap_work``) a cold node can
    do in ``m`` steps, ``m = 0 .. steps``, at power ``power`` (module docstring)."""
    cap = inst.t_thresh - inst.t_sup + _TOL
    g = (1.0 - inst.f) * (inst.r + float(np.diag(inst.d).min()))
    coolest = np.full(cap_work + 1, np.inf)
    coolest[0] = 0.0
    out = [0]
    for _ in range(steps):
        nxt = inst.f * coolest  # s = 0: the node is off (or not started)
        for s in range(1, q + 1):
            th = inst.f * coolest[: cap_work + 1 - s] + g * (inst.p_idle + s * power / q)
            th[th > cap] = np.inf
            nxt[s:] = np.minimum(nxt[s:], th)
        coolest = nxt
        out.append(int(np.nonzero(np.isfinite(coolest))[0].max()))
    return out


def min_span(inst: ThermalInstance, power: float, work: int, q: int = 1) -> int:
    """The fewest steps in which a cold node does ``work`` steps of work at ``power``, in
    shares of ``1/q`` (from the first step of work to the last)."""
    steps = 4 * work + 4
    while True:
        reach = max_work(inst, power, q, steps, q * work)
        if reach[-1] >= q * work:
            return next(m for m, w in enumerate(reach) if w >= q * work)
        if reach[-1] == reach[len(reach) // 2] or steps > 100 * work:
            raise ValueError(f"work {work} at {power} W cannot run alone under the threshold")
        steps *= 2


def work_caps(
    cp: Any, inst: ThermalInstance, e: np.ndarray, mk: Any, q: int, lo: int, hi: int
) -> None:
    """Per node ``i`` and job power level ``p_k``: the work of the jobs with ``p_j >= p_k``
    given to ``i`` fits in what a cold node does in ``M`` steps at ``p_k``
    (:func:`max_work`; ``M`` in ``lo .. hi``)."""
    for p in sorted(set(inst.power.tolist())):
        jobs = [j for j in range(inst.n_jobs) if inst.power[j] >= p]
        total = int(inst.work[jobs].sum())
        reach = max_work(inst, p, q, hi, q * total)
        if reach[lo] >= q * total:
            continue  # never binding
        cap = cp.new_int_var(0, q * total, "")
        cp.add_element(mk - lo, reach[lo:], cap)
        for i in range(inst.n_nodes):
            cp.add(sum(q * int(inst.work[j]) * e[i, j] for j in jobs) <= cap)
