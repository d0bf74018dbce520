"""RelaxationSearch (CP-SAT): its integer objective is the profit evaluator's, its solutions
pass the independent validator, it keeps multi-unit jobs on their nodes, and it never returns
less than MultiSearch's schedule on the same day."""

from __future__ import annotations

import numpy as np
import pytest
from ortools.sat.python import cp_model

from wattsched.scheduler.cooling import (
    SUMMER_DAY,
    WINTER_DAY,
    CoolingModel,
    PueTable,
    TemperatureProfile,
)
from wattsched.scheduler.model import Job, Node, PowerCap, Resources
from wattsched.scheduler.profit import Prices, Tariff
from wattsched.scheduler.profitsched.problem import DayProblem, DaySchedule
from wattsched.scheduler.profitsched.relax import RelaxOptions, _Model, relaxation_search
from wattsched.scheduler.profitsched.search import Scoring, multi_search, score
from wattsched.scheduler.validate import Executed, validate_schedule

SLOPED = PueTable((0.0, 2000.0, 4000.0), (0.0, 40.0), ((1.05, 1.3), (1.1, 1.5), (1.2, 1.8)))


def nodes(n: int, cores: int = 4) -> list[Node]:
    return [Node(f"n{i}", Resources(cores=cores, mem_mb=4000)) for i in range(1, n + 1)]


def random_problem(seed: int, n_jobs: int = 25, budget: float | None = None) -> DayProblem:
    rng = np.random.default_rng(seed)
    jobs = []
    for i in range(n_jobs):
        units = int(rng.integers(1, 4))
        jobs.append(Job(
            f"j{i}", int(rng.integers(0, 30)) * 600, int(rng.integers(1, 30)) * 600, units,
            Resources(cores=int(rng.integers(1, 5)), mem_mb=int(rng.integers(0, 3)) * 1000),
        ))  # fmt: skip
    return DayProblem.build(
        nodes(4), jobs, origin=0, slot_s=600,
        power_w=[float(rng.uniform(50, 400)) * j.units for j in jobs],
        rate=[0.0004 * j.units * j.unit.cores for j in jobs], power_budget_w=budget,
    )  # fmt: skip


def executed(problem: DayProblem, sched: DaySchedule) -> list[Executed]:
    starts = sched.start_s(problem)
    return [
        Executed(problem.jobs[j], int(starts[j]), int(starts[j] + problem.seconds[j]),
                 tuple(problem.node_names[n] for n in sched.nodes[j]))
        for j in range(problem.n_jobs) if sched.start[j] >= 0
    ]  # fmt: skip


SCORINGS = {
    "summer": Scoring(CoolingModel(SUMMER_DAY, SLOPED), Prices(core_hour=0.05), 86_400),
    "winter-tariff": Scoring(
        CoolingModel(WINTER_DAY, SLOPED),
        Prices(core_hour=0.05, tariff=Tariff((0, 28_800, 72_000), (0.1, 0.3, 0.2))),
        86_400,
    ),
}


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("scoring", list(SCORINGS))
def test_the_model_objective_is_the_evaluators_profit(seed: int, scoring: str) -> None:
    sc = SCORINGS[scoring]
    problem = random_problem(seed)
    best = multi_search(problem, sc, workers=1)
    opts = RelaxOptions(workers=1, improve=False)
    built = _Model(problem, sc, best.schedule, sc.horizon(problem), opts)
    # The hint, in the model's integers, is the evaluator's profit (rounding aside).
    assert built.hint_objective / built.unit == pytest.approx(best.profit, rel=1e-3, abs=1e-6)
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = 120.0
    solver.parameters.max_deterministic_time = 0.5  # not wall time: the same under load
    solver.parameters.num_workers = 1  # with a deterministic limit: the same result always
    code = solver.solve(built.m)
    assert code in (cp_model.OPTIMAL, cp_model.FEASIBLE)
    sched = built.decode(solver)
    assert solver.objective_value / built.unit == pytest.approx(
        score(problem, sched, sc).profit, rel=1e-3, abs=1e-6
    )
    # Without the improvement bound the hint is feasible: the solver does at least as well.
    assert solver.objective_value >= built.hint_objective


@pytest.mark.parametrize("seed", [4, 5])
@pytest.mark.parametrize("budget", [None, 1500.0])
def test_relaxation_search_is_valid_and_never_below_multisearch(
    seed: int, budget: float | None
) -> None:
    sc = SCORINGS["summer"]
    problem = random_problem(seed, budget=budget)
    best = multi_search(problem, sc, workers=1)
    out = relaxation_search(
        problem, sc, best, RelaxOptions(time_limit_s=120.0, workers=1, deterministic_s=1.0)
    )
    assert out.profit >= best.profit
    assert out.profit == pytest.approx(score(problem, out.schedule, sc).profit)
    assert validate_schedule(nodes(4), executed(problem, out.schedule), PowerCap.unlimited()) == []
    for j in range(problem.n_jobs):
        if out.schedule.start[j] >= 0:
            assert out.schedule.start[j] >= problem.release[j]
            assert out.schedule.start[j] < sc.horizon(problem)
            if problem.units[j] > 1:  # multi-unit jobs keep MultiSearch's nodes
                assert sorted(out.schedule.nodes[j]) == sorted(best.schedule.nodes[j])
    if budget is not None:
        power = np.zeros(200)
        for j in range(problem.n_jobs):
            t = int(out.schedule.start[j])
            if t >= 0:
                power[t : t + int(problem.duration[j])] += problem.power_w[j]
        assert power.max() <= budget + 1e-9


def test_relaxation_search_moves_work_to_the_cool_afternoon_and_fills_a_node() -> None:
    # Cooling is dear before noon and free after; one heavy job is worth more after noon.
    # A second, single-unit job the hint leaves unplaced (no room before the horizon in the
    # hint) is offered as optional and placed on the other node.
    hot_then_cold = TemperatureProfile((0.0, 43_000.0, 43_200.0), (40.0, 40.0, 0.0))
    steep = PueTable((0.0, 1e6), (0.0, 40.0), ((1.0, 3.0), (1.0, 3.0)))
    sc = Scoring(CoolingModel(hot_then_cold, steep), Prices(energy_kwh=0.2), 86_400)
    jobs = [Job("heavy", 0, 3600, 1, Resources(cores=1))]
    problem = DayProblem.build(nodes(2), jobs, origin=0, slot_s=600, power_w=[5000.0], rate=[0.002])
    best = multi_search(problem, sc, workers=1)
    assert best.schedule.start[0] == 0
    out = relaxation_search(
        problem, sc, best, RelaxOptions(time_limit_s=120.0, workers=1, deterministic_s=1.0)
    )
    assert out.profit > best.profit
    assert out.schedule.start[0] * 600 >= 43_200
    assert out.name.endswith("+relax")
    assert validate_schedule(nodes(2), executed(problem, out.schedule), PowerCap.unlimited()) == []


def test_an_unplaced_single_unit_job_is_offered_and_placed() -> None:
    # The hint placed nothing of j1 (as a day's search that ran out of room would); the model
    # offers it as an optional job and places it: more revenue.
    sc = SCORINGS["summer"]
    jobs = [Job("j0", 0, 3600, 1, Resources(cores=4)), Job("j1", 0, 3600, 1, Resources(cores=4))]
    problem = DayProblem.build(
        nodes(2), jobs, origin=0, slot_s=600, power_w=[100.0, 100.0], rate=[0.01, 0.01]
    )
    hint = DaySchedule(np.array([0, -1]), [np.array([0]), np.empty(0, dtype=np.int64)])
    start = multi_search(problem, sc, workers=1)
    initial = type(start)(hint, "hand", score(problem, hint, sc).profit, np.array([0, 1]))
    out = relaxation_search(
        problem, sc, initial, RelaxOptions(time_limit_s=120.0, workers=1, deterministic_s=1.0)
    )
    assert out.schedule.start[1] >= 0 and out.profit > initial.profit
    assert validate_schedule(nodes(2), executed(problem, out.schedule), PowerCap.unlimited()) == []
