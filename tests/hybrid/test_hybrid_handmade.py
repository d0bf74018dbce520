"""Hand-made instances with known answers: PRB provably worse, a conflict cut, a time-out."""

from __future__ import annotations

import pytest

from wattsched.scheduler.dispatcher import create
from wattsched.scheduler.hybrid import HybridDispatcher, SearchParams, TimeoutPolicy, hybrid_search
from wattsched.scheduler.hybrid.cpmodel import solve_pooled
from wattsched.scheduler.hybrid.mapping import map_schedule
from wattsched.scheduler.hybrid.problem import build_problem, weighted_queue_time
from wattsched.scheduler.mapper import StateCache
from wattsched.scheduler.model import Job, Node, PowerCap, Resources, Snapshot
from wattsched.scheduler.prb import PRBDispatcher


def _job(jid: str, cores: int, walltime: int, ewt: int = 3600) -> Job:
    return Job(id=jid, submit=0, walltime=walltime, units=1, unit=Resources(cores=cores), ewt=ewt)


def _blocking_snapshot() -> Snapshot:
    """One 4-core node. PRB starts A (2 cores) and, since it fits beside A, the long
    low-priority C; B (4 cores, 24x C's weight) then waits for C: 1000 s. Starting B first
    and A and C together at 10 costs B nothing and A and C 10 s each."""
    node = Node("n1", Resources(cores=4))
    jobs = (
        _job("A", 2, 10),
        _job("B", 4, 10),
        _job("C", 2, 1000, ewt=86400),
    )
    return Snapshot(0, (node,), (), jobs, PowerCap.unlimited())


def test_prb_is_provably_worse_and_the_hybrid_finds_the_better_schedule() -> None:
    snap = _blocking_snapshot()
    prb = PRBDispatcher(full_plan=True).plan(snap)
    starts = {a.job_id: a.start for a in prb.assignments}
    assert starts == {"A": 0, "C": 0, "B": 1000}
    prb_obj = weighted_queue_time(snap.queued, starts, snap.max_ewt())
    assert prb_obj == pytest.approx(24 * 1000 / 3)
    for feedback in (False, True):
        # No orderings, no local search: the better schedule must come from the CP model.
        params = SearchParams(
            feedback=feedback, budget_s=10, time_limit_s=5, orderings=False, local_search=0.0
        )
        out = hybrid_search(snap, StateCache(), params)
        best = {a.job_id: a.start for a in out.best.assignments}
        # Optimum: B at 0, then A and C together at 10 -> (24*10 + 1*10) / 3.
        assert best == {"B": 0, "A": 10, "C": 10}
        assert out.best.objective == pytest.approx((24 * 10 + 10) / 3)
        assert out.best.source.startswith("cp")
        assert out.stats.status in ("optimal", "feasible")


def _fragmenting_snapshot() -> Snapshot:
    """Two 4-core nodes (8 pooled cores); three jobs of 3, 3 and 2 cores fit the pool at
    once but not the nodes: whichever two start first leave 1 core on each node."""
    nodes = (Node("n1", Resources(cores=4)), Node("n2", Resources(cores=4)))
    jobs = (_job("J1", 3, 10), _job("J2", 3, 20), _job("J3", 2, 5))
    return Snapshot(0, nodes, (), jobs, PowerCap.unlimited())


def test_a_conflict_cut_is_added_and_the_next_iteration_avoids_the_conflict() -> None:
    snap = _fragmenting_snapshot()
    cache = StateCache()
    jobs = list(snap.queued)
    problem = build_problem(snap, jobs, grain=1, horizon_end=100)
    first = solve_pooled(problem, time_limit_s=5)
    assert first.starts == (0, 0, 0)  # the pooled relaxation runs all three at once
    mapped = map_schedule(
        snap, cache, jobs, release=problem.release_times(first.starts), source="cp1"
    )
    assert mapped.postponed >= 1
    assert mapped.conflicts == (("J1", "J2", "J3"),)
    second = solve_pooled(problem, time_limit_s=5, cuts=mapped.conflicts)
    assert second.starts is not None
    s = dict(zip(("J1", "J2", "J3"), second.starts, strict=True))
    wall = {"J1": 10, "J2": 20, "J3": 5}
    common = max(s.values()) < min(s[j] + wall[j] for j in s)
    assert not common  # the three never run at one instant any more
    remapped = map_schedule(
        snap, cache, jobs, release=problem.release_times(second.starts), source="cp2"
    )
    assert remapped.postponed == 0
    assert remapped.conflicts == ()
    # The search records the cut when it runs the loop itself.
    out = hybrid_search(
        snap, StateCache(), SearchParams(iterations=3, budget_s=10, time_limit_s=2, orderings=False)
    )
    assert ("J1", "J2", "J3") in out.cuts
    assert out.stats.cuts >= 1


def test_a_solver_that_times_out_without_solution_yields_the_prb_plan() -> None:
    from wattsched.scheduler.hybrid.synthetic import eurora_like_jobs, eurora_like_nodes

    nodes = tuple(eurora_like_nodes(8))
    jobs = tuple(eurora_like_jobs(40, seed=3))
    snap = Snapshot(0, nodes, (), jobs, PowerCap.constant(1500.0))
    prb = PRBDispatcher(full_plan=True).plan(snap)
    for name in ("hybrid", "hybrid-nofb"):
        disp = create(
            name,
            mode="offline",
            time_limit_s=1e-6,
            offline_timeout_policy=TimeoutPolicy(initial_s=1e-6, factor=1.0, max_s=1e-6),
            orderings=False,
            local_search=0.0,
            serial=0.0,
            lns=False,  # the point: CP-SAT finds nothing, so the PRB plan stands
            full_plan=True,
        )
        plan = disp.plan(snap)
        assert plan.stats.status == "unknown"
        assert plan.stats.extra["best_source"] == "prb"
        assert plan.by_job() == prb.by_job()
    # Online, a budget too small for any solve: still the PRB plan, never an exception.
    online = HybridDispatcher(cycle_budget_s=1e-6, orderings=False)
    plan = online.plan(snap)
    assert set(plan.assignments) == {a for a in prb.assignments if a.start == 0}
    assert plan.assignments
