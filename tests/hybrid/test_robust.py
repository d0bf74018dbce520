"""The robust choice of a plan against PRB under runtime scenarios (scheduler/hybrid/robust.py),
issue 16: with real runtimes the hybrid must never lose to PRB."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wattsched.connectors.simulated import SimulatedCluster
from wattsched.daemon.replay import replay
from wattsched.scheduler.dispatcher import create, prb_order
from wattsched.scheduler.hybrid.mapping import map_schedule
from wattsched.scheduler.hybrid.problem import weighted_queue_time
from wattsched.scheduler.hybrid.robust import follow_then_prb, judge, robust_choice, scenarios
from wattsched.scheduler.hybrid.synthetic import eurora_like_jobs, eurora_like_nodes
from wattsched.scheduler.mapper import StateCache
from wattsched.scheduler.model import Assignment, Job, Node, PowerCap, Resources, Snapshot


def _job(jid: str, cores: int, walltime: int, runtime: int, ewt: int) -> Job:
    return Job(id=jid, submit=0, walltime=walltime, units=1, unit=Resources(cores=cores),
               ewt=ewt, runtime=runtime)  # fmt: skip


def _early_end_jobs() -> list[Job]:
    """One 4-core node. PRB (lower EWT first) starts the four 1-core S jobs (walltime 100)
    at 0 and the two 4-core A jobs (walltime 5, half the weight) at 100 and 105: 205 s of
    weighted wait; A first, then the S jobs at 10, costs 85 on walltimes. But the S jobs run
    2 s and the A jobs 1 s: PRB then costs 5 (A at 2 and 3), A first 11 (the S jobs at 1,
    then PRB: A2 at 3)."""
    small = [_job(f"S{k}", 1, 100, 2, ewt=1800) for k in range(4)]
    return [*small, _job("A1", 4, 5, 1, ewt=3600), _job("A2", 4, 5, 1, ewt=3600)]


def _replay(jobs: list[Job], name: str, **params: object) -> float:
    nodes = [Node("n1", Resources(cores=4))]
    cluster = SimulatedCluster(nodes, jobs, PowerCap.unlimited(), offline=True,
                               record_power=False)  # fmt: skip
    res = replay(cluster, create(name, **params))
    assert res.start_errors == 0 and cluster.cap_violation_s == 0
    starts = {jid: r.start for jid, r in cluster.records.items() if r.start is not None}
    assert len(starts) == len(jobs)
    return weighted_queue_time(jobs, starts, max(j.ewt for j in jobs))


def test_with_early_ends_a_plan_better_on_walltimes_gives_way_to_prb() -> None:
    jobs = _early_end_jobs()
    hybrid = {"mode": "offline", "budget_s": 1.0, "total_budget_s": 2.0, "workers": 2}
    walls = [replace(j, runtime=j.walltime) for j in jobs]
    # On walltimes the hybrid's plan (A first) beats PRB, with or without the prior.
    assert _replay(walls, "hybrid", **hybrid) < _replay(walls, "prb")
    prb = _replay(jobs, "prb")
    # Real runtimes: the plan made on walltimes loses (this was the hybrid before) ...
    assert _replay(jobs, "hybrid", **hybrid) > prb
    # ... unless it is weighed under runtime scenarios drawn from what earlier jobs did: then
    # PRB's plan is chosen and PRB's rule starts the rest, exactly as PRB.
    assert _replay(jobs, "hybrid", runtime_ratios=(0.02, 0.03), **hybrid) == pytest.approx(prb)


def test_follow_then_prb_prices_the_first_decision() -> None:
    jobs = _early_end_jobs()
    snap = Snapshot(0, (Node("n1", Resources(cores=4)),), (), tuple(jobs), PowerCap.unlimited())
    real = {j.id: j.runtime or j.walltime for j in jobs}
    walls = {j.id: j.walltime for j in jobs}
    plan = [Assignment("A1", 0, ("n1",)), Assignment("A2", 5, ("n1",))]
    plan += [Assignment(f"S{k}", 10, ("n1",)) for k in range(4)]
    w = 2  # the S jobs' weight (3600 / 1800)
    assert follow_then_prb(snap, (), real) == pytest.approx((2 + 3) / 6)
    assert follow_then_prb(snap, plan, real) == pytest.approx((4 * w * 1 + 3) / 6)
    assert follow_then_prb(snap, plan, walls) == pytest.approx((4 * w * 10 + 5) / 6)
    assert follow_then_prb(snap, (), walls) == pytest.approx((100 + 105) / 6)
    verdict = judge(snap, plan, [real, walls])
    assert verdict.wins == 1 and not verdict.keep_plan
    assert judge(snap, plan, [walls]).keep_plan
    # Scenarios not weighed count as lost: at the deadline, or after the first loss.
    assert not judge(snap, plan, [walls], deadline=0.0, timer=lambda: 1.0).keep_plan
    stopped = judge(snap, plan, [real, walls], stop_on_loss=True)
    assert len(stopped.plan) == 1 and not stopped.keep_plan


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 500), n_jobs=st.integers(8, 30), k=st.integers(1, 4),
       cap_w=st.sampled_from([900.0, 1300.0]))  # fmt: skip
def test_follow_then_prb_on_walltimes_is_the_plan_and_from_prb_is_prb(
    seed: int, n_jobs: int, k: int, cap_w: float
) -> None:
    """With runtime = walltime nothing ends early: following a mapped plan costs its own
    objective; following nothing is PRB's list schedule, whatever the scenario."""
    snap = Snapshot(0, tuple(eurora_like_nodes(6)), (), tuple(eurora_like_jobs(n_jobs, seed=seed)),
                    PowerCap.constant(cap_w))  # fmt: skip
    cache = StateCache()
    prb = map_schedule(snap, cache, prb_order(snap.queued), release=None, source="prb")
    walls = {j.id: j.walltime for j in snap.queued}
    assert follow_then_prb(snap, prb.assignments, walls) == pytest.approx(prb.objective)
    assert follow_then_prb(snap, (), walls) == pytest.approx(prb.objective)
    cases = scenarios(snap, (0.1, 0.5, 1.0), k, seed)
    assert len(cases) == k and all(1 <= c[j.id] <= j.walltime for c in cases for j in snap.queued)
    chosen, extra = robust_choice(snap, prb, prb, (0.1, 0.5), k, seed)
    assert chosen is prb and extra == {}  # nothing to weigh
