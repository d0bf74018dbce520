"""A stronger time-indexed formulation of the paper's problems for CP-SAT, and its search.

Same problem and schedules as :mod:`.milp` (``a[i,j,t]`` in units of ``1/q`` of node ``i``
given to job ``j`` in step ``t``; HPC ``q = 1``, Cloud ``q = 10``; the same fixed-point thermal
rows, conservative: a schedule found never passes the threshold), fewer variables and
stronger constraints:

- HPC no interleaving (eq. 11-19) as one optional interval per node and job (present iff the
  job runs there, holding every step it runs) and a no-overlap per node; the Cloud setting
  needs no start/end variables at all (eq. 12-19 only define ``C_j``, and ``C_j <= M``);
- node power enters the thermal rows directly as a sum over ``a`` (no ``pw``, no HPC ``on``);
- redundant rows valid for every schedule: per node, the work it holds fits in ``M``, and the
  heat it can absorb (eq. 3 summed over the steps: ``sum_t (R P_i + sum_k D_ik P_k) <= cap
  (M + F / (1 - F))``) bounds the summed energy of the jobs given to it and its neighbours;
- Cloud: per node and job power level ``p``, the work of the jobs at least as hot given to it
  fits in what a cold node does in ``M`` steps at ``p`` in 10 % shares (:func:`.reach.work_caps`,
  an exact dynamic programme: the Cloud counterpart of the HPC spans);
- node symmetry breaking: the node permutations that leave ``D`` unchanged (nodes are
  otherwise identical; the default two-row ``D`` has four: the row mirror images) map
  schedules to schedules with the same makespan, so the hottest job runs on the smallest node
  of its orbit, and the next one on the smallest node of its orbit under what fixes the first.

:func:`search` (the benchmark's HPC MILP; its Cloud one is :func:`.cloud_search.search`): a
hinted makespan solve with several workers for part of the budget, then decision solves at
decreasing horizons (a feasible one is a new incumbent, an infeasible one proves the optimum),
all within one time limit.
"""

from __future__ import annotations

import itertools
import logging
import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from wattsched.scheduler.thermal.instance import IntArray, ThermalInstance, makespan
from wattsched.scheduler.thermal.milp import MILLI_SCALE, MilpResult
from wattsched.scheduler.thermal.reach import min_span, work_caps

log = logging.getLogger(__name__)

_MC = 1000 * MILLI_SCALE
"""Thermal rows in units of 1e-7 C (millidegrees x MILLI_SCALE), as in :mod:`.milp`."""


def node_symmetries(inst: ThermalInstance) -> list[tuple[int, ...]]:
    """The node permutations ``p`` with ``D[p][:, p] == D`` (exactly), the identity first."""
    n = inst.n_nodes
    if n > 8:
        return [tuple(range(n))]
    return [
        p for p in itertools.permutations(range(n)) if np.array_equal(inst.d[np.ix_(p, p)], inst.d)
    ]


def _key_jobs(inst: ThermalInstance) -> tuple[int, int]:
    """The two jobs with the most energy ``w (p + P_idle)`` (lowest index on ties)."""
    e = inst.work * (inst.power + inst.p_idle)
    order = sorted(range(inst.n_jobs), key=lambda j: (-float(e[j]), j))
    return order[0], order[min(1, len(order) - 1)]


def _orbit_min(group: list[tuple[int, ...]], i: int) -> int:
    return min(p[i] for p in group)


def allowed_pairs(inst: ThermalInstance) -> set[tuple[int, int]]:
    """The (node of the first key job, node of the second) pairs the symmetry breaking keeps."""
    group = node_symmetries(inst)
    n = inst.n_nodes
    pairs = set()
    for r in range(n):
        if _orbit_min(group, r) != r:
            continue
        stab = [p for p in group if p[r] == r]
        pairs |= {(r, i) for i in range(n) if _orbit_min(stab, i) == i}
    return pairs


def canonical(inst: ThermalInstance, alloc: IntArray) -> IntArray:
    """``alloc`` with its nodes permuted (a symmetry of ``D``) into the symmetry-broken form."""
    j0, j1 = _key_jobs(inst)
    pairs = allowed_pairs(inst)
    node_of = alloc.sum(axis=2).argmax(axis=0)
    for p in node_symmetries(inst):
        # node i of the new schedule is node p[i] of the old one
        inv = np.argsort(p)
        if (int(inv[node_of[j0]]), int(inv[node_of[j1]])) in pairs:
            return alloc[list(p)]
    raise RuntimeError("no symmetry maps the schedule to its canonical form")


@dataclass
class _Model:
    cp: Any
    a: np.ndarray
    mk: Any
    q: int
    hint_vars: dict[str, Any] = field(default_factory=dict)


def _build(inst: ThermalInstance, horizon: int, cloud: bool, decision: bool) -> _Model:
    from ortools.sat.python import cp_model

    n, nj, steps = inst.n_nodes, inst.n_jobs, horizon
    q = 10 if cloud else 1
    cp = cp_model.CpModel()
    e = np.array([[cp.new_bool_var(f"e{i}_{j}") for j in range(nj)] for i in range(n)])
    if cloud:
        a = np.array(
            [
                [[cp.new_int_var(0, q, "") for _ in range(steps)] for _ in range(nj)]
                for _ in range(n)
            ]
        )
    else:
        a = np.array(
            [[[cp.new_bool_var("") for _ in range(steps)] for _ in range(nj)] for _ in range(n)]
        )
    lb = max(inst.makespan_lower_bound(), inst.thermal_makespan_lower_bound())
    mk = cp.new_int_var(min(lb, steps), steps, "M")
    used = [cp.new_bool_var(f"u{t}") for t in range(steps)]
    for t in range(steps - 1):
        cp.add_implication(used[t + 1], used[t])
    cp.add(mk == sum(used))
    for j in range(nj):
        cp.add_exactly_one(e[:, j])
        cp.add(sum(a[i, j, t] for i in range(n) for t in range(steps)) == q * int(inst.work[j]))
    for i in range(n):
        for j in range(nj):
            cp.add(sum(a[i, j, :]) == q * int(inst.work[j]) * e[i, j])
            for t in range(steps):
                cp.add(a[i, j, t] <= q * used[t])
                if not cloud:
                    cp.add_implication(a[i, j, t], e[i, j])
        for t in range(steps):
            cp.add(sum(a[i, :, t]) <= q)
    on = None
    if cloud:
        on = np.array([[cp.new_bool_var("") for _ in range(steps)] for _ in range(n)])
        for i in range(n):
            for t in range(steps):
                cp.add(sum(a[i, :, t]) <= q * on[i, t])
                cp.add(sum(a[i, :, t]) >= on[i, t])
    else:
        _no_interleaving(cp, inst, a, e, mk)
    _thermal(cp, inst, a, on, q, steps)
    _redundant(cp, inst, e, mk, on)
    if cloud:
        work_caps(cp, inst, e, mk, q, min(lb, steps), steps)
    _symmetry(cp, inst, e)
    if not decision:
        cp.minimize(mk)
    return _Model(cp, a, mk, q, {"e": e, "used": used})


def _no_interleaving(cp: Any, inst: ThermalInstance, a: np.ndarray, e: np.ndarray, mk: Any) -> None:
    """HPC: job ``j``'s steps on node ``i`` lie in an optional interval at least its
    :func:`min_spans` long; intervals on a node do not overlap (so no job runs inside
    another's span: eq. 11-19), and their lengths fit in ``M``."""
    steps = a.shape[2]
    spans = min_spans(inst)
    for i in range(inst.n_nodes):
        ivs = []
        for j in range(inst.n_jobs):
            d = spans[j]
            s = cp.new_int_var(0, max(0, steps - d), "")
            end = cp.new_int_var(min(d, steps), steps, "")
            size = cp.new_int_var(min(d, steps), steps, "")
            cp.add(size >= d).only_enforce_if(e[i, j])
            cp.add(end <= mk).only_enforce_if(e[i, j])
            ivs.append(cp.new_optional_interval_var(s, size, end, e[i, j], ""))
            for t in range(steps):
                cp.add(s <= t).only_enforce_if(a[i, j, t])
                cp.add(end >= t + 1).only_enforce_if(a[i, j, t])
        cp.add_no_overlap(ivs)
        cp.add(sum(spans[j] * e[i, j] for j in range(inst.n_jobs)) <= mk)


def _thermal(
    cp: Any, inst: ThermalInstance, a: np.ndarray, on: np.ndarray | None, q: int, steps: int
) -> None:
    """Eq. 3 and 10 in fixed point, coefficients rounded up (as :func:`.milp._cpsat_thermal`):
    ``th[i, t]`` >= the true outlet rise above ``T_sup``, kept under the threshold."""
    n, nj = inst.n_nodes, inst.n_jobs
    gain = (1.0 - inst.f) * (inst.r * np.eye(n) + inst.d)  # C per W
    cap = math.floor((inst.t_thresh - inst.t_sup) * 1000)
    fs = math.ceil(inst.f * MILLI_SCALE)
    # per unit of a[k, j]: ceil(gain[i, k] p_j / q); per node on: ceil(gain[i, k] P_idle)
    cj = np.ceil(gain[:, :, None] * _MC * inst.power[None, None, :] / q).astype(np.int64)
    ci = np.ceil(gain * _MC * inst.p_idle).astype(np.int64)
    if on is None:  # HPC: a node is on iff it runs its one job; fold P_idle into each a
        cj = np.ceil(gain[:, :, None] * _MC * (inst.power[None, None, :] + inst.p_idle)).astype(
            np.int64
        )
    prev = [0] * n
    for t in range(steps):
        cur = [cp.new_int_var(0, cap, "") for _ in range(n)]
        for i in range(n):
            heat = sum(int(cj[i, k, j]) * a[k, j, t] for k in range(n) for j in range(nj))
            if on is not None:
                heat += sum(int(ci[i, k]) * on[k, t] for k in range(n))
            cp.add(MILLI_SCALE * cur[i] >= fs * prev[i] + heat)
        prev = cur


def min_spans(inst: ThermalInstance, q: int = 1) -> list[int]:
    """Per job, the fewest steps from its first to its last step of work (inclusive) alone on a
    cold node (HPC ``q = 1``; Cloud ``q = 10``: shares in 10 % steps): a lower bound on its
    span in any schedule (its node starts no cooler, and the other nodes' recirculation and
    the other jobs on its node only add heat). Exact: :func:`.reach.min_span`."""
    return [min_span(inst, float(p), int(w), q) for p, w in zip(inst.power, inst.work, strict=True)]


def heat_rows(inst: ThermalInstance) -> tuple[np.ndarray, int, int]:
    """The heat balance of eq. 3 summed over the steps of a schedule of makespan ``M``, per
    node ``i`` (``th`` the outlet rise, ``th[0] = 0``, ``th[M] <= cap``):
    ``sum_t (R P_i(t) + sum_k D_ik P_k(t)) = sum_t th[t] + F / (1 - F) th[M]
    <= cap (M + F / (1 - F))``, and job ``j`` on node ``k`` puts at least
    ``E_j = w_j (p_j + P_idle)`` into ``sum_t P_k``. Returns ``coef[i, k, j]`` (mC x step,
    rounded down), ``cap`` (mC, rounded up) and the tail ``cap F / (1 - F)`` (rounded up), so
    ``sum_kj coef[i, k, j] e[k, j] <= cap M + tail`` holds for every schedule."""
    n = inst.n_nodes
    energy = inst.work * (inst.power + inst.p_idle)
    m = inst.r * np.eye(n) + inst.d
    coef = np.floor(m[:, :, None] * energy[None, None, :] * 1000).astype(np.int64)
    cap_hi = math.ceil((inst.t_thresh - inst.t_sup) * 1000)
    return coef, cap_hi, math.ceil(cap_hi * inst.f / (1.0 - inst.f))


def _redundant(cp: Any, inst: ThermalInstance, e: np.ndarray, mk: Any, on: Any) -> None:
    """Per node: the work given to it fits in ``M`` steps; the heat balance (:func:`heat_rows`;
    in the Cloud setting with the idle power of the steps the nodes are on, not of the work:
    partial steps draw ``P_idle`` too)."""
    coef, cap_hi, tail = heat_rows(inst)
    n, nj = inst.n_nodes, inst.n_jobs
    m = inst.r * np.eye(n) + inst.d
    if on is not None:
        dyn = np.floor(m[:, :, None] * (inst.work * inst.power)[None, None, :] * 1000)
        idle = np.floor(m * inst.p_idle * 1000)
    for i in range(n):
        cp.add(sum(int(inst.work[j]) * e[i, j] for j in range(nj)) <= mk)
        heat = sum(int(coef[i, k, j]) * e[k, j] for k in range(n) for j in range(nj))
        cp.add(heat <= cap_hi * mk + tail)
        if on is not None:
            heat = sum(int(dyn[i, k, j]) * e[k, j] for k in range(n) for j in range(nj))
            heat += sum(int(idle[i, k]) * sum(on[k]) for k in range(n))
            cp.add(heat <= cap_hi * mk + tail)


def _symmetry(cp: Any, inst: ThermalInstance, e: np.ndarray) -> None:
    j0, j1 = _key_jobs(inst)
    pairs = allowed_pairs(inst)
    for r in range(inst.n_nodes):
        if not any(p[0] == r for p in pairs):
            cp.add(e[r, j0] == 0)
            continue
        for i in range(inst.n_nodes):
            if j1 != j0 and (r, i) not in pairs:
                cp.add_bool_or([e[r, j0].Not(), e[i, j1].Not()])


def _hint(m: _Model, inst: ThermalInstance, alloc: IntArray) -> None:
    cp, a = m.cp, m.a
    steps = a.shape[2]
    alloc = canonical(inst, alloc)
    width = min(steps, alloc.shape[2])
    full = np.zeros(a.shape, np.int64)
    full[:, :, :width] = alloc[:, :, :width]
    for idx, v in np.ndenumerate(full):
        cp.add_hint(a[idx], int(v))
    for idx, v in np.ndenumerate(full.sum(axis=2) > 0):
        cp.add_hint(m.hint_vars["e"][idx], bool(v))
    span = makespan(full)
    for t, u in enumerate(m.hint_vars["used"]):
        cp.add_hint(u, t < span)
    cp.add_hint(m.mk, span)


def solve_cp(
    inst: ThermalInstance,
    horizon: int,
    cloud: bool = False,
    time_limit_s: float = 60.0,
    workers: int = 8,
    hint: IntArray | None = None,
    decision: bool = False,
) -> MilpResult:
    """One CP-SAT solve of the strong model: min makespan within ``horizon`` steps, or with
    ``decision`` any schedule within ``horizon`` (``infeasible`` then proves none exists)."""
    from ortools.sat.python import cp_model

    t0 = time.perf_counter()
    m = _build(inst, horizon, cloud, decision)
    if hint is not None and makespan(hint) <= horizon:
        _hint(m, inst, hint)
    sv = cp_model.CpSolver()
    sv.parameters.max_time_in_seconds = max(0.1, time_limit_s - (time.perf_counter() - t0))
    sv.parameters.num_workers = workers
    st = sv.solve(m.cp)
    name = {
        cp_model.OPTIMAL: "optimal",
        cp_model.FEASIBLE: "feasible",
        cp_model.INFEASIBLE: "infeasible",
    }.get(st, "unknown")
    secs = time.perf_counter() - t0
    setting = "cloud" if cloud else "hpc"
    if name not in ("optimal", "feasible"):
        return MilpResult(name, None, None, None, None, secs, "cp-sat-strong", setting)
    alloc = np.array([[[sv.value(x) for x in row] for row in node] for node in m.a], np.int64)
    bound = None if decision else float(sv.best_objective_bound)
    return MilpResult(
        name, alloc, makespan(alloc), inst.energy(alloc, m.q), bound, secs, "cp-sat-strong", setting
    )


def search(
    inst: ThermalInstance,
    incumbent: IntArray,
    cloud: bool = False,
    time_limit_s: float = 60.0,
    workers: int = 8,
    first_share: float = 1.0,
) -> MilpResult:
    """The best schedule found within ``time_limit_s`` (all solves together), starting from a
    valid ``incumbent`` (units of the setting: ``q = 10`` in Cloud): a makespan solve hinted
    with it for ``first_share`` of the budget, then decision solves at one step below the
    best makespan found until one is proven infeasible (the best is then optimal) or the time
    is up. The result's ``bound`` is the best proven lower bound; ``status`` is ``optimal``
    when the schedule meets it."""
    t0 = time.perf_counter()
    best = incumbent
    lb = float(max(inst.makespan_lower_bound(), inst.thermal_makespan_lower_bound()))
    r = solve_cp(inst, makespan(best), cloud, first_share * time_limit_s, workers, hint=best)
    if r.alloc is not None and makespan(r.alloc) <= makespan(best):
        best = r.alloc
    if r.bound is not None:
        lb = max(lb, math.ceil(r.bound - 1e-9))
    log.debug("makespan solve: %s %s bound %s, %.1f s", r.status, r.makespan, r.bound, r.seconds)
    if r.status == "infeasible":  # the incumbent's horizon has no schedule: cannot be
        raise RuntimeError(f"the incumbent (makespan {makespan(best)}) is not a schedule")
    while makespan(best) - 1 >= lb:
        left = time_limit_s - (time.perf_counter() - t0)
        if left < 0.5:
            break
        d = solve_cp(inst, makespan(best) - 1, cloud, left, workers, decision=True)
        log.debug("decision at %d: %s, %.1f s", makespan(best) - 1, d.status, d.seconds)
        if d.alloc is not None:
            best = d.alloc
        elif d.status == "infeasible":
            lb = makespan(best)
        else:
            break
    span = makespan(best)
    q = 10 if cloud else 1
    return MilpResult(
        "optimal" if span <= lb else "feasible",
        best,
        span,
        inst.energy(best, q),
        lb,
        time.perf_counter() - t0,
        "cp-sat-strong",
        "cloud" if cloud else "hpc",
    )
