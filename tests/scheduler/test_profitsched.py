"""The profit paper's schedulers: the job-based heuristic against a brute force, rule-based
orders and strictness, MultiSearch and DelaySearch never below their start, the daily roll."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wattsched.scheduler.cooling import SUMMER_DAY, CoolingModel, PueTable, TemperatureProfile
from wattsched.scheduler.model import Job, Node, Placement, Resources
from wattsched.scheduler.profit import Prices
from wattsched.scheduler.profitsched import heuristic
from wattsched.scheduler.profitsched.heuristic import job_based, rule_based
from wattsched.scheduler.profitsched.orderings import all_orders, rule_order
from wattsched.scheduler.profitsched.problem import (
    Busy,
    DayProblem,
    DaySchedule,
    ProblemError,
    natural_key,
)
from wattsched.scheduler.profitsched.rolling import rolling_days
from wattsched.scheduler.profitsched.search import Scoring, delay_search, multi_search, score

FLAT = PueTable((0.0, 1e6), (-50.0, 60.0), ((1.2, 1.2), (1.2, 1.2)))


def nodes(n: int, cores: int = 4) -> list[Node]:
    return [Node(f"n{i}", Resources(cores=cores, mem_mb=1000)) for i in range(1, n + 1)]


def job(i: int, submit: int, wall: int, units: int, cores: int) -> Job:
    return Job(f"j{i}", submit, wall, units, Resources(cores=cores), runtime=wall)


def problem_of(jobs: list[Job], ns: list[Node], slot: int = 60, **kw: object) -> DayProblem:
    return DayProblem.build(
        ns, jobs, origin=0, slot_s=slot, power_w=[10.0 * j.units for j in jobs],
        rate=[0.001 * j.units * j.unit.cores for j in jobs], **kw,  # type: ignore[arg-type]
    )  # fmt: skip


def check(problem: DayProblem, sched: DaySchedule) -> None:
    """Independent check: every job placed at or after its release, one node per unit, no
    node over capacity in any slot, the power budget held."""
    horizon = int((sched.start + problem.duration).max()) + 1
    used = np.zeros((problem.capacity.shape[1], horizon, 4), dtype=np.int64)
    power = np.zeros(horizon)
    for j in range(problem.n_jobs):
        t, d = int(sched.start[j]), int(problem.duration[j])
        assert t >= problem.release[j]
        assert len(sched.nodes[j]) == problem.units[j]
        for n in sched.nodes[j]:
            used[n, t : t + d] += problem.need[j]
        power[t : t + d] += problem.power_w[j]
    assert np.all(used <= problem.capacity.T[:, None, :])
    if problem.power_budget_w is not None:
        assert power.max() <= problem.power_budget_w + 1e-9


def brute_earliest(problem: DayProblem, placed: DaySchedule, j: int) -> int:
    """The earliest start of job j by trying every slot and every node multiset."""
    for t in itertools.count(int(problem.release[j])):
        for combo in itertools.combinations_with_replacement(
            range(len(problem.node_names)), int(problem.units[j])
        ):
            trial = DaySchedule(placed.start.copy(), list(placed.nodes))
            trial.start[j] = t
            trial.nodes[j] = np.array(combo)
            sub = [k for k in range(problem.n_jobs) if trial.start[k] >= 0]
            try:
                check_subset(problem, trial, sub)
            except AssertionError:
                continue
            return t
    raise AssertionError("unreachable")


def check_subset(problem: DayProblem, sched: DaySchedule, jobs: list[int]) -> None:
    horizon = max(int(sched.start[k] + problem.duration[k]) for k in jobs) + 1
    used = np.zeros((problem.capacity.shape[1], horizon, 4), dtype=np.int64)
    for k in jobs:
        t, d = int(sched.start[k]), int(problem.duration[k])
        for n in sched.nodes[k]:
            used[n, t : t + d] += problem.need[k]
    assert np.all(used <= problem.capacity.T[:, None, :])


small_jobs = st.lists(
    st.tuples(st.integers(0, 4), st.integers(1, 4), st.integers(1, 3), st.integers(1, 4)),
    min_size=1, max_size=6,
)  # fmt: skip


@settings(max_examples=40, deadline=None)
@given(small_jobs)
def test_job_based_starts_each_job_at_its_brute_force_earliest(
    spec: list[tuple[int, int, int, int]],
) -> None:
    jobs = [job(i, s * 60, w * 60, u, c) for i, (s, w, u, c) in enumerate(spec)]
    problem = problem_of(jobs, nodes(3))
    order = list(range(len(jobs)))
    sched = job_based(problem, order)
    check(problem, sched)
    partial = DaySchedule.empty(problem.n_jobs)
    for j in order:
        assert sched.start[j] == brute_earliest(problem, partial, j)
        partial.start[j] = sched.start[j]
        partial.nodes[j] = sched.nodes[j]


@settings(max_examples=40, deadline=None)
@given(small_jobs, st.booleans(), st.sampled_from(["est", "wt", "profit"]))
def test_rule_based_schedules_are_feasible(
    spec: list[tuple[int, int, int, int]], strict: bool, rule: str
) -> None:
    jobs = [job(i, s * 60, w * 60, u, c) for i, (s, w, u, c) in enumerate(spec)]
    problem = problem_of(jobs, nodes(3), power_budget_w=30.0)
    check(problem, rule_based(problem, rule_order(problem, rule), strict=strict))


def test_strict_order_does_not_overtake_and_non_strict_does() -> None:
    # n1..n2 of 4 cores; j0 runs 0-10 min on 6 cores; j1 (8 cores) waits; j2 (1 core) fits now.
    ns = nodes(2)
    jobs = [job(0, 0, 600, 2, 3), job(1, 0, 600, 2, 4), job(2, 0, 600, 1, 1)]
    problem = problem_of(jobs, ns)
    order = [0, 1, 2]
    strict = rule_based(problem, order, strict=True)
    loose = rule_based(problem, order, strict=False)
    assert strict.start.tolist() == [0, 10, 20]  # j2 waits behind j1, then for it
    assert loose.start.tolist() == [0, 10, 0]


def test_rule_orders() -> None:
    jobs = [job(0, 120, 600, 1, 1), job(1, 0, 60, 1, 1), job(2, 60, 6000, 1, 4)]
    problem = problem_of(jobs, nodes(1))
    assert rule_order(problem, "est").tolist() == [1, 2, 0]
    assert rule_order(problem, "wt").tolist() == [1, 0, 2]
    assert len(all_orders(problem)) == 22


def test_running_jobs_hold_their_nodes_and_nodes_go_in_natural_order() -> None:
    ns = [Node(n, Resources(cores=4)) for n in ("n10", "n2", "n1")]
    jobs = [job(0, 0, 600, 1, 4)]
    problem = problem_of(jobs, ns, busy=[Busy("n1", (4, 0, 0, 0), 300)])
    assert problem.node_names == ("n1", "n2", "n10")
    sched = job_based(problem, [0])
    assert sched.start[0] == 0 and problem.node_names[int(sched.nodes[0][0])] == "n2"
    assert sorted(["n10", "n9", "a2"], key=natural_key) == ["a2", "n9", "n10"]


def test_multi_search_is_the_best_of_its_orders_and_delay_search_never_below() -> None:
    rng = np.random.default_rng(3)
    jobs = [
        job(i, int(rng.integers(0, 20)) * 600, int(rng.integers(1, 12)) * 600,
            int(rng.integers(1, 3)), int(rng.integers(1, 5)))
        for i in range(60)
    ]  # fmt: skip
    problem = problem_of(jobs, nodes(4))
    scoring = Scoring(CoolingModel(SUMMER_DAY, FLAT), Prices(core_hour=0.1), 86_400)
    best = multi_search(problem, scoring, workers=1)
    singles = [
        score(problem, job_based(problem, o, horizon=scoring.horizon(problem)), scoring).profit
        for _, o in all_orders(problem)
    ]
    assert best.profit == pytest.approx(max(singles))
    check(problem, best.schedule)
    better = delay_search(problem, scoring, best, delay_slots=30, time_limit_s=2.0)
    assert better.profit >= best.profit
    check(problem, better.schedule)


def test_delay_search_moves_work_to_a_cheaper_time() -> None:
    # One job, power heavy; cooling costs a lot before noon and nothing after: delaying it
    # past noon (still inside the day) is worth more than starting at once.
    hot_then_cold = TemperatureProfile((0.0, 43_000.0, 43_200.0), (40.0, 40.0, 0.0))
    steep = PueTable((0.0, 1e6), (0.0, 40.0), ((1.0, 3.0), (1.0, 3.0)))
    jobs = [job(0, 0, 3600, 1, 1)]
    problem = DayProblem.build(nodes(1), jobs, origin=0, slot_s=600, power_w=[5000.0], rate=[0.002])
    scoring = Scoring(CoolingModel(hot_then_cold, steep), Prices(energy_kwh=0.2), 86_400)
    best = multi_search(problem, scoring, workers=1)
    assert best.schedule.start[0] == 0
    better = delay_search(problem, scoring, best, delay_slots=6, time_limit_s=5.0)
    assert better.profit > best.profit
    assert better.schedule.start[0] * 600 >= 43_200


def test_rolling_days_commit_each_day_and_carry_the_rest() -> None:
    ns = nodes(1, cores=1)
    # Three one-core jobs of 12 h submitted at 01:00 on day 0, one after the other on the
    # only core: the third would start after midnight, so day 1's run places it.
    jobs = [job(i, 3600, 43_200, 1, 1) for i in range(3)]
    res = rolling_days(
        ns, jobs, lambda p, end: job_based(p, rule_order(p, "est")),
        power_w={j.id: 10.0 for j in jobs}, rate={j.id: 0.0 for j in jobs},
    )  # fmt: skip
    starts = sorted(p.start for p in res.placed)
    assert starts == [3600, 46_800, 90_000]
    assert [d[1] for d in res.days] == [3, 1]


@settings(max_examples=40, deadline=None)
@given(small_jobs, st.booleans(), st.integers(1, 12))
def test_a_horizon_leaves_later_starts_unplaced_and_keeps_the_earlier_ones(
    spec: list[tuple[int, int, int, int]], strict: bool, horizon: int
) -> None:
    jobs = [job(i, s * 60, w * 60, u, c) for i, (s, w, u, c) in enumerate(spec)]
    problem = problem_of(jobs, nodes(3))
    order = rule_order(problem, "est")
    # Rules go forward in time: cut at the horizon, the starts before it are the same.
    full = rule_based(problem, order, strict=strict)
    cut = rule_based(problem, order, strict=strict, horizon=horizon)
    assert cut.start.tolist() == [t if t < horizon else -1 for t in full.start.tolist()]
    # The heuristic: nothing starts at or after the horizon; an unplaced job holds nothing,
    # so each placed job is at its earliest given the placed jobs before it in the order.
    sched = job_based(problem, order, horizon=horizon)
    placed = [int(j) for j in order if sched.start[j] >= 0]
    assert all(sched.start[j] < horizon for j in placed)
    partial = DaySchedule.empty(problem.n_jobs)
    for j in (int(j) for j in order):
        earliest = brute_earliest(problem, partial, j)
        assert sched.start[j] == (earliest if earliest < horizon else -1)
        if sched.start[j] >= 0:
            partial.start[j] = sched.start[j]
            partial.nodes[j] = sched.nodes[j]


shapes = st.tuples(
    st.integers(0, 3),  # release (minutes)
    st.integers(1, 4),  # walltime (minutes)
    st.integers(1, 3),  # units
    st.integers(1, 4),  # cores a unit
    st.sampled_from(list(Placement)),
)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(shapes, min_size=1, max_size=4),
    st.lists(st.integers(0, 3), min_size=4, max_size=16),
    st.integers(1, 8),
    st.none() | st.sampled_from([30.0, 60.0]),
)
def test_skipping_jobs_dominated_by_a_failure_changes_no_start(
    kinds: list[tuple[int, int, int, int, Placement]],
    picks: list[int],
    horizon: int,
    budget: float | None,
) -> None:
    """Under a horizon, a job that asks no less than one that found no start is skipped
    without a search; the schedule is the one the full search gives (placement rules, a power
    budget and repeated shapes included)."""
    spec = [kinds[i % len(kinds)] for i in picks]
    jobs = [
        Job(f"j{i}", s * 60, w * 60, u, Resources(cores=c), runtime=w * 60, placement=pl)
        for i, (s, w, u, c, pl) in enumerate(spec)
    ]
    try:
        problem = problem_of(jobs, nodes(3), power_budget_w=budget)
    except ProblemError:
        return  # a job that never fits (packed too wide, over the budget) is refused
    _same_with_and_without_the_skip(problem, horizon)


def _same_with_and_without_the_skip(problem: DayProblem, horizon: int) -> list[int]:
    order = list(range(problem.n_jobs))
    fast = job_based(problem, order, horizon=horizon)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(heuristic._Failures, "dominated", lambda self, j, r: False)
        full = job_based(problem, order, horizon=horizon)
    assert fast.start.tolist() == full.start.tolist()
    assert [n.tolist() for n in fast.nodes] == [n.tolist() for n in full.nodes]
    return [int(t) for t in fast.start]


def test_a_failed_job_does_not_skip_one_released_earlier() -> None:
    # One node; j0 holds it over [1, 3); j1 (released at 1) finds no start before 3, j2 is
    # the same job released at 0 and fits in [0, 1).
    jobs = [job(0, 60, 120, 1, 4), job(1, 60, 60, 1, 4), job(2, 0, 60, 1, 4)]
    assert _same_with_and_without_the_skip(problem_of(jobs, nodes(1)), 3) == [1, -1, 0]


def test_a_failed_packed_job_does_not_skip_a_free_one() -> None:
    # Two 4-core nodes with 3 cores taken on each: 2 packed 1-core units find no node, the
    # same 2 units free to spread fit at once.
    jobs = [
        job(0, 0, 600, 1, 3),
        job(1, 0, 600, 1, 3),
        Job("j2", 0, 60, 2, Resources(cores=1), runtime=60, placement=Placement.PACK),
        Job("j3", 0, 60, 2, Resources(cores=1), runtime=60, placement=Placement.FREE),
    ]
    problem = problem_of(jobs, nodes(2))
    assert _same_with_and_without_the_skip(problem, 5) == [0, 0, -1, 0]
