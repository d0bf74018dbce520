"""The time-indexed MILP of Pierson et al. (Sect. 5), HPC and Cloud settings, with OR-Tools.

Variables (``i`` node, ``j`` job, ``t`` step < ``L``): ``a[i,j,t]`` the share of node ``i``
given to job ``j`` in units of ``1/q`` (eq. 5; HPC: ``q = 1``, binary; Cloud: ``q = 10``, an
integer 0..10, equivalent to the paper's one-hot ``beta`` over ``CV = (0, 0.1, ..., 1)``, eq. 20),
``e[i,j]`` (eq. 4, 6, 9), ``run/started/ended[i,j,t]`` (eq. 12-19; eq. 11 in HPC only),
``on[i,t]`` (eq. 24 HPC, 25 Cloud), the makespan ``M`` (eq. 21-22). Node power (eq. 26) enters the
threshold constraints (eq. 10) through the unrolled RC + recirculation model (eq. 3): the outlet
temperature at the end of step ``t`` is a linear function of the powers of all nodes at steps
``<= t`` (:meth:`ThermalInstance.gains`). Objectives: min ``M``; min energy (eq. 23) subject to
``C_j <= x M*`` (eq. 27). Redundant cuts (valid for every schedule): ``M >= (t + 1) run[i,j,t]``
and ``M >=`` the paper's lower bound.

Backends: ``cp-sat`` (the model is pure integer; the real-valued temperature rows are scaled by
``1e7`` with coefficients rounded *up* and the right-hand side down, so a CP-SAT schedule never
passes the threshold; the rounding costs at most ``N L Pmax / 1e7`` C, 0.02 C here) and MathOpt
``highs`` / ``scip`` (exact float rows). Measured (``bench/results/thermal_paper.md``, the
paper's 12 jobs / 6 nodes, same model, hints and time limit): CP-SAT finds equal or shorter
makespans than HiGHS and SCIP and a bound as good as HiGHS's (SCIP reports none in the limit);
none of the three proves optimality on most instances within 10-60 s on two shared cores, so
CP-SAT is the default. The benchmark now uses the stronger CP-SAT model of :mod:`.milp_cp`
(same schedules; intervals with the jobs' minimum spans prove most HPC optima in seconds).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from wattsched.scheduler.thermal.instance import IntArray, ThermalInstance, makespan

MILLI_SCALE = 10_000
"""Fixed-point scale of the temperature recursion in CP-SAT (its rows in mC x MILLI_SCALE)."""


@dataclass(frozen=True)
class MilpResult:
    """A solve's outcome: status (``optimal``, ``feasible``, ``infeasible``, ``unknown``), the
    schedule when one was found, its makespan and energy, the solver's bound, and seconds."""

    status: str
    alloc: IntArray | None
    makespan: int | None
    energy: float | None
    bound: float | None
    seconds: float
    solver: str
    setting: str


class _Lin:
    """A solver-neutral integer model: variables with bounds, linear rows, one objective."""

    def __init__(self) -> None:
        self.lb: list[int] = []
        self.ub: list[int] = []
        self.rows: list[tuple[list[int], list[float], float, float]] = []
        self.obj: tuple[list[int], list[float]] = ([], [])
        self.hint: dict[int, int] = {}
        self.pw: np.ndarray = np.zeros((0, 0), dtype=np.int64)
        self.q = 1
        self.steps = 0
        self.inst: ThermalInstance | None = None
        self.handles: dict[str, np.ndarray] = {}
        self.used: list[int] = []
        self.mk = -1

    def var(self, lb: int, ub: int) -> int:
        self.lb.append(lb)
        self.ub.append(ub)
        return len(self.lb) - 1

    def row(self, idx: list[int], coef: list[float], lo: float, hi: float) -> None:
        self.rows.append((idx, coef, lo, hi))

    def thermal(self) -> tuple[ThermalInstance, np.ndarray, float, np.ndarray]:
        """The instance, power variables, decay and ``(1 - F) (R I + D) / q`` (C per unit)."""
        inst = self.inst
        if inst is None:
            raise RuntimeError("model not built")
        gain = (1.0 - inst.f) * (inst.r * np.eye(inst.n_nodes) + inst.d) / self.q
        return inst, self.pw, inst.f, gain


_INF = math.inf


def _build(
    inst: ThermalInstance, horizon: int, cloud: bool, objective: str, max_makespan: int | None
) -> tuple[_Lin, np.ndarray, int]:
    n, nj, steps = inst.n_nodes, inst.n_jobs, horizon
    q = 10 if cloud else 1
    m = _Lin()
    a = np.array([[[m.var(0, q) for _ in range(steps)] for _ in range(nj)] for _ in range(n)])
    e = np.array([[m.var(0, 1) for _ in range(nj)] for _ in range(n)])
    run = np.array([[[m.var(0, 1) for _ in range(steps)] for _ in range(nj)] for _ in range(n)])
    st = np.array([[[m.var(0, 1) for _ in range(steps)] for _ in range(nj)] for _ in range(n)])
    en = np.array([[[m.var(0, 1) for _ in range(steps)] for _ in range(nj)] for _ in range(n)])
    on = np.array([[m.var(0, 1) for _ in range(steps)] for _ in range(n)])
    lb = max(inst.makespan_lower_bound(), inst.thermal_makespan_lower_bound())
    mk = m.var(min(lb, steps), max_makespan if max_makespan is not None else steps)
    # cut: used[t] (step t is before the makespan) is monotone, M = sum used, a <= q used
    used = [m.var(0, 1) for _ in range(steps)]
    for t in range(steps - 1):
        m.row([used[t], used[t + 1]], [1.0, -1.0], 0, _INF)
    m.row([mk, *used], [1.0] + [-1.0] * steps, 0, 0)
    for j in range(nj):
        m.row([int(e[i, j]) for i in range(n)], [1.0] * n, 1, 1)  # (9)
        cells = [int(a[i, j, t]) for i in range(n) for t in range(steps)]
        m.row(cells, [1.0] * len(cells), q * inst.work[j], q * inst.work[j])  # (8)
    for i in range(n):
        for t in range(steps):
            m.row([int(x) for x in a[i, :, t]], [1.0] * nj, 0, q)  # (7)
            if not cloud:
                m.row([int(x) for x in run[i, :, t]], [1.0] * nj, 0, 1)  # (11)
                m.row(
                    [int(on[i, t])] + [int(x) for x in a[i, :, t]], [1.0] + [-1.0] * nj, 0, 0
                )  # (24)
            else:
                m.row(
                    [int(on[i, t])] + [int(x) for x in a[i, :, t]], [q] + [-1.0] * nj, 0, _INF
                )  # (25)
        for j in range(nj):
            for t in range(steps):
                ai, ri, si, ni = (
                    int(a[i, j, t]),
                    int(run[i, j, t]),
                    int(st[i, j, t]),
                    int(en[i, j, t]),
                )
                m.row([ai, int(e[i, j])], [1.0, -q], -_INF, 0)  # (6)
                m.row([si, ai], [q, -1.0], 0, _INF)  # (12)
                if t + 1 < steps:
                    m.row([int(st[i, j, t + 1]), si], [1.0, -1.0], 0, _INF)  # (13)
                    m.row([int(en[i, j, t + 1]), ni], [1.0, -1.0], 0, _INF)  # (14)
                m.row([ri, si, ni], [1.0, -1.0, 1.0], 0, 0)  # (15)
                m.row([si, ni, ai], [q, q, 1.0], -_INF, 2 * q)  # (16) times q
                m.row([si, int(e[i, j])], [1.0, -1.0], -_INF, 0)  # (17)
                m.row([ni, int(e[i, j])], [1.0, -1.0], -_INF, 0)  # (18)
                m.row([ri, int(e[i, j])], [1.0, -1.0], -_INF, 0)  # (19)
                m.row([ai, used[t]], [1.0, -q], -_INF, 0)  # cut: a <= q used[t]
    # (21)-(22): C_j = sum_i run[i,j,0] + sum_{t>=1} (run + t (started_t - started_{t-1}))
    for j in range(nj):
        idx, cf = [mk], [1.0]
        for i in range(n):
            for t in range(steps):
                idx.append(int(run[i, j, t]))
                cf.append(-1.0)
                if t >= 1:
                    idx += [int(st[i, j, t]), int(st[i, j, t - 1])]
                    cf += [-float(t), float(t)]
        m.row(idx, cf, 0, _INF)
    # (26): node power pw[i,t] (W x q) = sum_j a p_j + q P_idle on; (3) and (10) on it
    wpp = np.concatenate([inst.power, [q * inst.p_idle]])
    pmax = math.ceil(q * (float(inst.power.max()) + inst.p_idle))
    pw = np.array([[m.var(0, pmax) for _ in range(steps)] for _ in range(n)])
    for i in range(n):
        for t in range(steps):
            idx = [int(pw[i, t])] + [int(x) for x in a[i, :, t]] + [int(on[i, t])]
            m.row(idx, [1.0] + [-float(w) for w in wpp], 0, 0)
    m.pw, m.q, m.steps = pw, q, steps
    m.inst = inst
    if objective == "makespan":
        m.obj = ([mk], [1.0])
    else:  # energy: sum of powers (the CoP factor is a constant)
        idx, cf = [], []
        for i in range(n):
            for t in range(steps):
                idx.append(int(pw[i, t]))
                cf.append(1.0 / q)
        m.obj = (idx, cf)
    m.handles = {"a": a, "e": e, "run": run, "st": st, "en": en, "on": on, "pw": pw}
    m.used, m.mk = used, mk
    return m, a, q


def solve(
    inst: ThermalInstance,
    horizon: int,
    cloud: bool = False,
    objective: str = "makespan",
    max_makespan: int | None = None,
    solver: str = "cp-sat",
    time_limit_s: float = 60.0,
    workers: int = 1,
    hint: IntArray | None = None,
) -> MilpResult:
    """Solve the paper's MILP over ``horizon`` steps.

    ``objective``: ``makespan`` or ``energy`` (then pass ``max_makespan = x * M*``, eq. 27).
    ``hint``: a feasible schedule (e.g. a heuristic's, ``alloc`` with ``q`` matching the
    setting) to start from. A solve that finds nothing returns ``infeasible`` or ``unknown``.
    """
    if objective not in ("makespan", "energy"):
        raise ValueError(f"objective {objective!r}: want 'makespan' or 'energy'")
    if max_makespan is not None:
        horizon = min(horizon, max_makespan)
    t0 = time.perf_counter()
    model, a, q = _build(inst, horizon, cloud, objective, max_makespan)
    if hint is not None and makespan(hint) <= horizon:
        _full_hint(model, hint)
    if solver == "cp-sat":
        status, values, bound = _solve_cpsat(model, time_limit_s, workers)
    elif solver in ("highs", "scip"):
        status, values, bound = _solve_mathopt(model, solver, time_limit_s, workers)
    else:
        raise ValueError(f"solver {solver!r}: want 'cp-sat', 'highs' or 'scip'")
    secs = time.perf_counter() - t0
    setting = "cloud" if cloud else "hpc"
    if values is None:
        return MilpResult(status, None, None, None, bound, secs, solver, setting)
    alloc = np.rint(values[a]).astype(np.int64)
    return MilpResult(
        status, alloc, makespan(alloc), inst.energy(alloc, q), bound, secs, solver, setting
    )


def _full_hint(m: _Lin, alloc: IntArray) -> None:
    """Values of every variable for the schedule ``alloc`` (a complete hint)."""
    inst = m.inst
    if inst is None:
        raise RuntimeError("model not built")
    h = m.handles
    steps = m.steps
    a = np.zeros(h["a"].shape, np.int64)
    width = min(steps, alloc.shape[2])
    a[:, :, :width] = alloc[:, :, :width]
    t_idx = np.arange(steps)
    vals: dict[str, np.ndarray] = {"a": a, "e": (a.sum(axis=2) > 0).astype(np.int64)}
    st = np.zeros_like(a)
    en = np.zeros_like(a)
    for i, j in zip(*np.nonzero(vals["e"]), strict=True):
        ts = np.nonzero(a[i, j])[0]
        st[i, j] = t_idx >= ts[0]
        en[i, j] = t_idx > ts[-1]
    vals.update(st=st, en=en, run=st - en, on=(a.sum(axis=1) > 0).astype(np.int64))
    vals["pw"] = np.rint(
        np.einsum("ijt,j->it", a, inst.power) + m.q * inst.p_idle * vals["on"]
    ).astype(np.int64)
    for key, arr in vals.items():
        for idx, v in np.ndenumerate(arr):
            m.hint[int(h[key][idx])] = int(v)
    span = makespan(a)
    for t, u in enumerate(m.used):
        m.hint[u] = int(t < span)
    m.hint[m.mk] = span


def _solve_cpsat(
    m: _Lin, time_limit_s: float, workers: int
) -> tuple[str, np.ndarray | None, float | None]:
    from ortools.sat.python import cp_model

    cp = cp_model.CpModel()
    xs = [
        cp.new_int_var(lo, hi, f"x{k}") for k, (lo, hi) in enumerate(zip(m.lb, m.ub, strict=True))
    ]
    big = cp_model.INT_MAX
    _cpsat_thermal(cp, m, xs)
    for idx, coef, lo, hi in m.rows:
        expr = sum(int(c) * xs[v] for v, c in zip(idx, coef, strict=True))
        cp.add_linear_constraint(
            expr, -big if lo == -_INF else int(lo), big if hi == _INF else int(hi)
        )
    oi, oc = m.obj
    scale = 1 if all(float(c).is_integer() for c in oc) else 1000
    cp.minimize(sum(round(c * scale) * xs[v] for v, c in zip(oi, oc, strict=True)))
    for v, val in m.hint.items():
        cp.add_hint(xs[v], val)
    sv = cp_model.CpSolver()
    sv.parameters.max_time_in_seconds = time_limit_s
    sv.parameters.num_workers = workers
    sv.parameters.linearization_level = 2
    st = sv.solve(cp)
    name = {
        cp_model.OPTIMAL: "optimal",
        cp_model.FEASIBLE: "feasible",
        cp_model.INFEASIBLE: "infeasible",
    }.get(st, "unknown")
    if name in ("optimal", "feasible"):
        vals = np.array([sv.value(x) for x in xs], dtype=float)
        return name, vals, sv.best_objective_bound / scale
    return name, None, None


def _cpsat_thermal(cp: Any, m: _Lin, xs: list[Any]) -> None:
    """(3) and (10) in fixed point: ``th[i,t]`` (millidegrees above ``T_sup``, integer) with
    ``th[t+1] >= F th[t] + gain pw[t]``, coefficients rounded up; th >= the true rise by
    induction (all terms are >= 0), so ``th <= T_thresh - T_sup`` keeps the true temperature
    under the threshold. The rounding costs at most ``(N + 1) / MILLI_SCALE`` mC a step."""
    inst, pw, f, gain = m.thermal()
    cap = math.floor((inst.t_thresh - inst.t_sup) * 1000)
    fs = math.ceil(f * MILLI_SCALE)
    gs = np.ceil(gain * 1000 * MILLI_SCALE).astype(np.int64)
    th = [
        [cp.new_int_var(0, 0 if t == 0 else cap, "") for t in range(m.steps + 1)]
        for _ in range(inst.n_nodes)
    ]
    hinted = bool(m.hint)
    val = np.zeros(inst.n_nodes, np.int64)
    for t in range(m.steps):
        if hinted:
            p = np.array([m.hint.get(int(pw[k, t]), 0) for k in range(inst.n_nodes)])
            val = -((-(fs * val + gs @ p)) // MILLI_SCALE)  # ceil
        for i in range(inst.n_nodes):
            heat = sum(int(gs[i, k]) * xs[int(pw[k, t])] for k in range(inst.n_nodes))
            cp.add(MILLI_SCALE * th[i][t + 1] >= fs * th[i][t] + heat)
            if hinted:
                cp.add_hint(th[i][t + 1], int(min(val[i], cap)))


def _solve_mathopt(
    m: _Lin, solver: str, time_limit_s: float, workers: int
) -> tuple[str, np.ndarray | None, float | None]:
    from datetime import timedelta

    from ortools.math_opt.python import mathopt

    mo = mathopt.Model(name="thermal")
    xs = [mo.add_integer_variable(lb=lo, ub=hi) for lo, hi in zip(m.lb, m.ub, strict=True)]
    for idx, coef, lo, hi in m.rows:
        expr = mathopt.LinearSum(c * xs[v] for v, c in zip(idx, coef, strict=True))
        mo.add_linear_constraint(lb=lo, ub=hi, expr=expr)
    inst, pw, f, gain = m.thermal()
    cap = inst.t_thresh - inst.t_sup
    for i in range(inst.n_nodes):  # (3) and (10), exact: th = T_out - T_sup
        prev: object = 0.0
        for t in range(m.steps):
            th = mo.add_variable(lb=0.0, ub=cap)
            heat = mathopt.LinearSum(gain[i, k] * xs[int(pw[k, t])] for k in range(inst.n_nodes))
            mo.add_linear_constraint(th == f * prev + heat)  # type: ignore[operator]
            prev = th
    oi, oc = m.obj
    mo.minimize(mathopt.LinearSum(c * xs[v] for v, c in zip(oi, oc, strict=True)))
    kind = mathopt.SolverType.HIGHS if solver == "highs" else mathopt.SolverType.GSCIP
    # HiGHS takes no thread count through MathOpt (it is a HiGHS global): one thread
    threads = None if solver == "highs" else workers
    params = mathopt.SolveParameters(time_limit=timedelta(seconds=time_limit_s), threads=threads)
    mparams = None
    if m.hint:
        hint = mathopt.SolutionHint(
            variable_values={xs[v]: float(val) for v, val in m.hint.items()}
        )
        mparams = mathopt.ModelSolveParameters(solution_hints=[hint])
    res = mathopt.solve(mo, kind, params=params, model_params=mparams)
    reason = res.termination.reason
    if reason == mathopt.TerminationReason.OPTIMAL:
        name = "optimal"
    elif reason == mathopt.TerminationReason.INFEASIBLE:
        name = "infeasible"
    else:
        name = "feasible" if res.has_primal_feasible_solution() else "unknown"
    if res.has_primal_feasible_solution():
        vals = np.array([res.variable_values(x) for x in xs], dtype=float)
        return name, vals, res.termination.objective_bounds.dual_bound
    return name, None, None
