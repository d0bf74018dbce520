"""LNS on the CP from conflict sets (scheduler/hybrid/lns.py) and the PRB fallback on a reused
plan (scheduler/hybrid/retime.py ``prb_if_better``), issue 16."""

from __future__ import annotations

from dataclasses import replace
from itertools import count

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from wattsched.scheduler.dispatcher import create, prb_order
from wattsched.scheduler.hybrid.dispatcher import HybridDispatcher
from wattsched.scheduler.hybrid.lns import conflict_neighbourhood, lns, pooled_starts
from wattsched.scheduler.hybrid.mapping import MappedSchedule, map_schedule
from wattsched.scheduler.hybrid.problem import PooledProblem, build_problem
from wattsched.scheduler.hybrid.search import SearchParams, hybrid_search
from wattsched.scheduler.hybrid.synthetic import eurora_like_jobs, eurora_like_nodes
from wattsched.scheduler.mapper import StateCache
from wattsched.scheduler.model import PowerCap, Snapshot


def _instance(n_jobs: int, seed: int, cap_w: float) -> tuple[Snapshot, StateCache]:
    snap = Snapshot(0, tuple(eurora_like_nodes(8)), (), tuple(eurora_like_jobs(n_jobs, seed=seed)),
                    PowerCap.constant(cap_w))  # fmt: skip
    return snap, StateCache()


def _problem(snap: Snapshot, cache: StateCache) -> tuple[PooledProblem, MappedSchedule]:
    order = prb_order(snap.queued)
    prb = map_schedule(snap, cache, order, release=None, source="prb")
    wall = {j.id: j.walltime for j in order}
    end = max(a.start + wall[a.job_id] for a in prb.assignments)
    problem = build_problem(snap, order, grain=60, horizon_end=int(end * 1.1) + 60)
    return problem, prb


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 1000),
    n_jobs=st.integers(12, 40),
    size=st.integers(2, 16),
    cap_w=st.sampled_from([900.0, 1100.0, 1500.0]),
    rng_seed=st.integers(0, 1000),
)
def test_a_conflict_neighbourhood_holds_jobs_that_overlap_on_the_binding_resource(
    seed: int, n_jobs: int, size: int, cap_w: float, rng_seed: int
) -> None:
    snap, cache = _instance(n_jobs, seed, cap_w)
    problem, prb = _problem(snap, cache)
    starts = pooled_starts(problem, prb)
    free = conflict_neighbourhood(problem, starts, np.random.default_rng(rng_seed), size)
    n = len(problem.jobs)
    assert free <= set(range(n))
    assert 1 <= len(free) <= max(size, 2)

    # A conflict set: unless the schedule runs jobs one by one, at least two freed jobs run at
    # one instant.
    def overlap(i: int, k: int) -> bool:
        return (
            starts[i] < starts[k] + problem.duration[k]
            and starts[k] < starts[i] + problem.duration[i]
        )

    any_overlap = any(overlap(i, k) for i in range(n) for k in range(i + 1, n))
    if any_overlap and len(free) >= 2:
        assert any(overlap(i, k) for i in free for k in free if i < k)


def test_lns_moves_from_conflict_sets_keep_a_complete_incumbent_never_worse() -> None:
    snap, cache = _instance(30, 7, 1000.0)
    problem, prb = _problem(snap, cache)
    best = prb
    seen: list[MappedSchedule] = []

    def consider(cand: MappedSchedule) -> None:
        nonlocal best
        seen.append(cand)
        if cand.objective < best.objective:
            best = cand

    ticks = count()
    rank = {j.id: k for k, j in enumerate(problem.jobs)}
    figures = lns(
        snap, cache, problem, list(problem.jobs), rank, deadline=12.0,
        timer=lambda: float(next(ticks)) * 0.5, incumbent=lambda: best, consider=consider,
        window=10, slice_s=0.2, workers=2, seed=1,
    )  # fmt: skip
    assert figures["lns_moves"] >= 3
    assert figures["lns_conflict_moves"] >= 2  # two moves in three
    assert seen and all(c.complete for c in seen)
    assert {c.source[:4] for c in seen} <= {"lnsc", "lnsw"}
    assert best.objective <= prb.objective


def test_a_reused_plan_worse_than_prb_falls_back_to_prb() -> None:
    snap, _ = _instance(20, 3, 1100.0)
    disp = create("hybrid", mode="offline", budget_s=0.5, full_plan=True)
    assert isinstance(disp, HybridDispatcher)
    disp.plan(snap)
    assert disp._schedule
    # The stored plan, every start 10,000 s later: still "on plan" offline (nothing runs),
    # but PRB's order from the same state is far better.
    disp._schedule = {jid: replace(a, start=a.start + 10_000) for jid, a in disp._schedule.items()}
    plan = disp.plan(snap)
    assert plan.stats.status == "prb_fallback"  # before: "reused", nothing started now
    prb = map_schedule(snap, disp.cache, prb_order(snap.queued), release=None, source="prb")
    assert {a.job_id for a in plan.starts_now()} == {
        a.job_id for a in prb.assignments if a.start <= snap.time
    }
    assert disp.fallbacks == 1
    assert disp.plan(snap).stats.status == "reused"  # PRB's plan is stored and followed


def test_lns_patience_hands_the_rest_of_the_budget_back_to_the_swaps() -> None:
    """With ``lns_patience`` 1 the moves stop at the first that does not beat the incumbent and
    the swaps take what is left; without it the moves run to the deadline."""
    snap, cache = _instance(30, 7, 1000.0)
    params = SearchParams(budget_s=2.0, workers=2, lns=True, local_search=0.1, lns_time_s=0.05,
                          lns_patience=1, lower_bound="none")  # fmt: skip
    extra = hybrid_search(snap, cache, params).stats.extra
    assert extra["lns_moves"] == extra["lns_improvements"] + 1
    assert int(extra["ls_tries_after"]) > 0
    off = hybrid_search(snap, StateCache(), replace(params, lns_patience=0)).stats.extra
    assert "ls_tries_after" not in off
    assert off["lns_moves"] > off["lns_improvements"] + 1
