"""The strong CP-SAT model (:mod:`milp_cp`): the enumerated optimum, valid redundant rows and
symmetry breaking, and a search never worse than its incumbent."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from tests.thermal.test_thermal_milp import TINY, _brute_force_makespan
from wattsched.scheduler.thermal import milp, milp_cp
from wattsched.scheduler.thermal.heuristics import coolest, spatio_temporal, unrunnable_jobs
from wattsched.scheduler.thermal.instance import ThermalInstance, check_schedule, makespan


@pytest.fixture(scope="module")
def optimum() -> int:
    return _brute_force_makespan(TINY, 12)


def _paper_like(seed: int, n_jobs: int = 12, n_nodes: int = 6) -> ThermalInstance:
    rng = np.random.default_rng(seed)
    return ThermalInstance(
        rng.integers(1, 11, n_jobs), rng.integers(50, 121, n_jobs).astype(float), n_nodes
    )


def test_strong_model_finds_the_enumerated_optimum(optimum: int) -> None:
    res = milp_cp.solve_cp(TINY, 14, time_limit_s=60, workers=2)
    assert res.status == "optimal" and res.alloc is not None
    assert res.makespan == optimum
    assert check_schedule(TINY, res.alloc, 1, hpc=True) == []


def test_strong_cloud_model_matches_the_paper_model() -> None:
    paper = milp.solve(TINY, 14, cloud=True, time_limit_s=60, workers=2)
    res = milp_cp.solve_cp(TINY, 14, cloud=True, time_limit_s=60, workers=2)
    assert paper.status == res.status == "optimal" and res.alloc is not None
    assert res.makespan == paper.makespan
    assert check_schedule(TINY, res.alloc, 10, hpc=False) == []


def test_decision_below_the_optimum_is_infeasible(optimum: int) -> None:
    assert milp_cp.solve_cp(TINY, optimum - 1, decision=True, workers=2).status == "infeasible"
    res = milp_cp.solve_cp(TINY, optimum, decision=True, workers=2)
    assert res.alloc is not None and check_schedule(TINY, res.alloc, 1, hpc=True) == []


def test_default_two_rows_have_the_four_mirror_images() -> None:
    perms = milp_cp.node_symmetries(_paper_like(0))
    assert sorted(perms) == sorted(
        [(0, 1, 2, 3, 4, 5), (2, 1, 0, 5, 4, 3), (3, 4, 5, 0, 1, 2), (5, 4, 3, 2, 1, 0)]
    )


instances = st.builds(
    _paper_like, st.integers(0, 10_000), st.integers(2, 12), st.sampled_from([2, 3, 4, 6])
)


@settings(max_examples=60, deadline=None)
@given(inst=instances)
def test_redundant_rows_and_symmetry_keep_every_valid_schedule(inst: ThermalInstance) -> None:
    """The heat-balance rows hold for valid schedules, and each has a canonical image (a node
    permutation) that is valid, as long, and allowed by the symmetry breaking."""
    assume(not unrunnable_jobs(inst))
    coef, cap, tail = milp_cp.heat_rows(inst)
    j0, j1 = milp_cp._key_jobs(inst)
    pairs = milp_cp.allowed_pairs(inst)
    for sched in (coolest(inst), spatio_temporal(inst)):
        e = (sched.sum(axis=2) > 0).astype(np.int64)
        span = makespan(sched)
        assert np.all(np.einsum("ikj,kj->i", coef, e) <= cap * span + tail)
        assert np.all((inst.work[None, :] * e).sum(axis=1) <= span)
        canon = milp_cp.canonical(inst, sched)
        assert check_schedule(inst, canon, 1, hpc=True) == []
        assert makespan(canon) == span
        node = canon.sum(axis=2).argmax(axis=0)
        assert (int(node[j0]), int(node[j1])) in pairs


def test_heat_rows_bind_on_a_hot_node() -> None:
    """One job of 140 W x 10 steps alone: (R + D_00) E = 0.704 x 1820 = 1281 C x step and
    80 C (M + 1) >= 1281 need M >= 16; the row says so and the model proves it."""
    inst = ThermalInstance(np.array([10]), np.array([140.0]), 1)
    coef, cap, tail = milp_cp.heat_rows(inst)
    assert cap * 15 + tail < int(coef[0, 0, 0]) <= cap * 16 + tail
    assert milp_cp.solve_cp(inst, 15, decision=True, workers=2).status == "infeasible"


def test_search_is_never_worse_than_its_incumbent() -> None:
    inst = _paper_like(3, n_jobs=6, n_nodes=3)
    assert not unrunnable_jobs(inst)
    start = spatio_temporal(inst)
    res = milp_cp.search(inst, start, time_limit_s=10, workers=2)
    assert res.alloc is not None and res.makespan is not None
    assert res.makespan <= makespan(start)
    assert res.bound is not None and res.bound <= res.makespan
    assert check_schedule(inst, res.alloc, 1, hpc=True) == []
    cloud = milp_cp.search(inst, res.alloc * 10, cloud=True, time_limit_s=10, workers=2)
    assert cloud.makespan is not None and cloud.makespan <= res.makespan
    assert cloud.alloc is not None and check_schedule(inst, cloud.alloc, 10, hpc=False) == []


def _brute_min_span(inst: ThermalInstance) -> int:
    """The shortest on/off sequence (starting on) doing all the work of a 1-job 1-node
    instance, every sequence checked by ``check_schedule``."""
    w = int(inst.work[0])
    for length in range(w, 6 * w + 6):
        for mid in itertools.product((0, 1), repeat=max(0, length - 2)):
            seq = (1, *mid, 1) if length > 1 else (1,)
            if sum(seq) != w:
                continue
            alloc = np.array(seq, dtype=np.int64).reshape(1, 1, -1)
            if check_schedule(inst, alloc, 1, hpc=True) == []:
                return length
    raise AssertionError("no sequence")


@settings(max_examples=40, deadline=None)
@given(
    w=st.integers(1, 5),
    p=st.integers(10, 150),
    f=st.floats(0.3, 0.7),
    t_thresh=st.floats(70, 110),
)
def test_min_spans_are_the_enumerated_shortest_spans(
    w: int, p: int, f: float, t_thresh: float
) -> None:
    inst = ThermalInstance(np.array([w]), np.array([float(p)]), 1, f=f, t_thresh=t_thresh)
    assume(not unrunnable_jobs(inst))
    assert milp_cp.min_spans(inst) == [_brute_min_span(inst)]
