"""The CP-SAT model of the pooled problem, and one solve of it.

One fixed-size interval per waiting job, running jobs and cap dips as fixed intervals, one
cumulative per pooled resource (power included when the cap is finite), the conflict cuts of
the feedback loop as ``cumulative(set, demand 1, capacity |set| - 1)``, and the weighted start
objective ``sum weight_i * start_i`` (grains). The search follows the priority order of the
problem's jobs (schedule-or-postpone in spirit: take the jobs by priority, each at its
earliest start) and is hinted with a known schedule.

A solve never raises on a solver outcome: :class:`CpOutcome` carries the status, and the
starts only when a solution was found.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from ortools.sat.python import cp_model

from wattsched.scheduler.hybrid.problem import N_RES, POWER, PooledProblem

Cut = tuple[str, ...]
"""A conflict set: job ids (waiting or running) that must not all run at one instant."""


@dataclass(frozen=True, slots=True)
class CpOutcome:
    """The result of one CP-SAT solve: status name, starts (grains) when found, figures."""

    status: str
    starts: tuple[int, ...] | None
    objective: float | None
    bound: float | None
    seconds: float
    conflicts: int = 0
    branches: int = 0
    deterministic_time: float = 0.0
    """CP-SAT's deterministic time used (reproducible, unlike ``seconds``)."""

    @property
    def found(self) -> bool:
        """True when the solve produced a schedule."""
        return self.starts is not None


def _status_name(solver: cp_model.CpSolver, code: object) -> str:
    # status_name() without an argument is broken in OR-Tools 9.15: pass the code.
    return str(solver.status_name(code)).lower()


def solve_pooled(
    problem: PooledProblem,
    *,
    time_limit_s: float,
    workers: int = 2,
    cuts: Sequence[Cut] = (),
    running_ends: dict[str, int] | None = None,
    objective_max: int | None = None,
    hint: Sequence[int] | None = None,
    fixed_starts: dict[int, int] | None = None,
    seed: int = 0,
    strategy: bool = True,
    deterministic_time: float | None = None,
) -> CpOutcome:
    """Build the model and solve it within ``time_limit_s`` with ``workers`` threads.

    ``deterministic_time``: a reproducible solve instead, on one worker up to that many of
    CP-SAT's deterministic time units (``time_limit_s`` still stops it; a portfolio of
    several workers is not reproducible, and CP-SAT's interleaved search overran its
    deterministic limit several times over when measured).

    ``objective_max`` forces ``sum weight_i * start_i <= objective_max`` (the feedback loop's
    improvement bound). ``running_ends`` gives the end grain of each running job, for cuts that
    name one. ``fixed_starts`` pins the start grain of some jobs (large-neighbourhood moves).
    ``strategy`` adds the priority-order decision strategy (jobs in problem order, earliest
    start first).
    """
    t0 = time.perf_counter()
    m = cp_model.CpModel()
    n = len(problem.jobs)
    starts = []
    intervals = []
    for i in range(n):
        lo = problem.release[i]
        hi = problem.horizon - problem.duration[i]
        if fixed_starts is not None and i in fixed_starts:
            lo = hi = min(max(fixed_starts[i], lo), hi)
        s = m.new_int_var(lo, hi, f"s{i}")
        starts.append(s)
        intervals.append(m.new_fixed_size_interval_var(s, problem.duration[i], f"x{i}"))
    fixed_iv = [
        m.new_fixed_size_interval_var(0, end, f"run{k}") for k, (end, _) in enumerate(problem.fixed)
    ]
    for r in range(N_RES):
        cap = problem.capacity[r]
        if r == POWER and not problem.power_limited:
            continue
        ivs = []
        dem = []
        for i in range(n):
            if problem.demand[i][r] > 0:
                ivs.append(intervals[i])
                dem.append(problem.demand[i][r])
        if not ivs:
            continue
        for k, (_, use) in enumerate(problem.fixed):
            if use[r] > 0:
                ivs.append(fixed_iv[k])
                dem.append(min(use[r], cap))
        if r == POWER:
            for a, b, below in problem.cap_dips:
                ivs.append(m.new_fixed_size_interval_var(a, b - a, f"dip{a}"))
                dem.append(below)
        if sum(dem) > cap:
            m.add_cumulative(ivs, dem, cap)
    index = problem.index
    run_iv: dict[str, cp_model.IntervalVar] = {}
    for jid, end in (running_ends or {}).items():
        if end > 0:
            run_iv[jid] = m.new_fixed_size_interval_var(0, end, f"r{jid}")
    for cut in cuts:
        members = [intervals[index[j]] if j in index else run_iv.get(j) for j in cut]
        ivs2 = [iv for iv in members if iv is not None]
        if len(ivs2) >= 2:
            m.add_cumulative(ivs2, [1] * len(ivs2), len(ivs2) - 1)
    obj = cp_model.LinearExpr.weighted_sum(starts, list(problem.weight))
    if objective_max is not None:
        m.add(obj <= objective_max)
    m.minimize(obj)
    if strategy:
        m.add_decision_strategy(starts, cp_model.CHOOSE_FIRST, cp_model.SELECT_MIN_VALUE)
    if hint is not None:
        for s, h in zip(starts, hint, strict=True):
            m.add_hint(s, h)
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = max(time_limit_s, 1e-6)
    solver.parameters.num_workers = max(1, workers)
    if deterministic_time is not None:
        solver.parameters.num_workers = 1
        solver.parameters.max_deterministic_time = max(deterministic_time, 1e-6)
    solver.parameters.random_seed = seed
    try:
        code = solver.solve(m)
    except IndexError:
        # OR-Tools 9.15 raises this (an absl hash-map lookup) inside solve() on some models
        # that are infeasible (seen with feedback cuts plus the objective bound; the same
        # model without its objective solves as INFEASIBLE). Retrying does not help.
        return CpOutcome(
            status="solver_error",
            starts=None,
            objective=None,
            bound=None,
            seconds=time.perf_counter() - t0,
            deterministic_time=deterministic_time or 0.0,  # no response to read it from
        )
    status = _status_name(solver, code)
    found = code in (cp_model.OPTIMAL, cp_model.FEASIBLE)
    return CpOutcome(
        status=status,
        starts=tuple(int(solver.value(s)) for s in starts) if found else None,
        objective=float(solver.objective_value) if found else None,
        bound=float(solver.best_objective_bound) if found or code == cp_model.UNKNOWN else None,
        seconds=time.perf_counter() - t0,
        conflicts=int(solver.num_conflicts),
        branches=int(solver.num_branches),
        deterministic_time=float(solver.deterministic_time),
    )
