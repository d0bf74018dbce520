"""The paper's MILP against brute-force enumeration on a tiny instance, and its settings."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from wattsched.scheduler.thermal import milp
from wattsched.scheduler.thermal.heuristics import coolest, spatio_temporal
from wattsched.scheduler.thermal.instance import ThermalInstance, check_schedule, makespan

# 3 jobs, 2 nodes; the 120 W job cannot run two steps in a row under 80 C
TINY = ThermalInstance(
    work=np.array([3, 2, 2]), power=np.array([120.0, 60.0, 90.0]), n_nodes=2, t_thresh=80.0
)


def _brute_force_makespan(inst: ThermalInstance, limit: int) -> int:
    """Shortest HPC schedule by breadth-first enumeration of every step's choices: a node runs
    or suspends its current job, or starts a job nobody has started, or idles."""
    n, nj = inst.n_nodes, inst.n_jobs
    m = inst.r * np.eye(n) + inst.d
    start = (tuple(int(w) for w in inst.work), (-1,) * n, (inst.t_sup,) * n)
    frontier = {start}
    for steps in range(1, limit + 1):
        nxt = set()
        for left, cur, temps in frontier:
            started = set(cur) | {j for j in range(nj) if left[j] < inst.work[j]}
            options = []
            for i in range(n):
                if cur[i] >= 0:
                    options.append([cur[i], None])  # run or suspend its job
                else:
                    options.append([None] + [j for j in range(nj) if j not in started])
            for choice in itertools.product(*options):
                picked = [c for c in choice if c is not None]
                if len(set(picked)) != len(picked):
                    continue
                power = np.array(
                    [0.0 if c is None else inst.power[c] + inst.p_idle for c in choice]
                )
                target = inst.t_sup + m @ power
                t_new = target + (np.array(temps) - target) * inst.f
                if np.any(t_new > inst.t_thresh):
                    continue
                lf = list(left)
                cur2 = list(cur)
                for i, c in enumerate(choice):
                    if c is not None:
                        lf[c] -= 1
                        cur2[i] = c if lf[c] > 0 else -1
                if not any(lf):
                    return steps
                nxt.add((tuple(lf), tuple(cur2), tuple(np.round(t_new, 9))))
        frontier = nxt
    raise AssertionError("no schedule within the limit")


@pytest.fixture(scope="module")
def optimum() -> int:
    return _brute_force_makespan(TINY, 12)


@pytest.mark.parametrize("solver", ["cp-sat", "highs"])
def test_milp_makespan_is_the_enumerated_optimum(solver: str, optimum: int) -> None:
    res = milp.solve(TINY, horizon=14, solver=solver, time_limit_s=60)
    assert res.status == "optimal"
    assert res.alloc is not None
    assert res.makespan == optimum
    assert check_schedule(TINY, res.alloc, 1, hpc=True) == []
    # the thermal constraint binds: without it the instance would finish in 4 steps
    assert optimum > TINY.makespan_lower_bound()


def test_cloud_is_no_longer_than_hpc(optimum: int) -> None:
    res = milp.solve(TINY, horizon=14, cloud=True, time_limit_s=60)
    assert res.alloc is not None and res.makespan is not None
    assert check_schedule(TINY, res.alloc, 10, hpc=False) == []
    assert res.makespan <= optimum


def test_energy_under_makespan_bound(optimum: int) -> None:
    res = milp.solve(
        TINY, horizon=14, cloud=True, objective="energy", max_makespan=optimum, time_limit_s=20
    )
    assert res.alloc is not None and res.makespan is not None and res.energy is not None
    assert res.makespan <= optimum
    assert res.energy >= TINY.energy_lower_bound() - 1e-6
    assert check_schedule(TINY, res.alloc, 10, hpc=False) == []


def test_milp_no_longer_than_the_heuristics(optimum: int) -> None:
    for sched in (coolest(TINY), spatio_temporal(TINY)):
        assert check_schedule(TINY, sched, 1, hpc=True) == []
        assert optimum <= makespan(sched)


def test_bounds_are_below_the_optimum(optimum: int) -> None:
    assert TINY.makespan_lower_bound() <= optimum
    assert TINY.thermal_makespan_lower_bound() <= optimum
