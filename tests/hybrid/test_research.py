"""Re-search at early ends (scheduler/hybrid/research.py), issue 16: with real runtimes a stale
plan is searched again from the cluster as it is, never worse on walltimes than re-timing it."""

from __future__ import annotations

import time
from dataclasses import replace

import pytest

from wattsched.connectors.simulated import SimulatedCluster
from wattsched.daemon.replay import replay
from wattsched.scheduler.dispatcher import create, prb_order
from wattsched.scheduler.hybrid.mapping import map_schedule
from wattsched.scheduler.hybrid.problem import weighted_queue_time
from wattsched.scheduler.hybrid.research import Researcher, ResearchPolicy, plan_order
from wattsched.scheduler.hybrid.robust import scenarios
from wattsched.scheduler.hybrid.rules import best_rule, rule_value
from wattsched.scheduler.hybrid.search import SearchParams
from wattsched.scheduler.hybrid.synthetic import eurora_like_jobs, eurora_like_nodes
from wattsched.scheduler.mapper import StateCache
from wattsched.scheduler.model import (
    Assignment,
    Job,
    Node,
    PowerCap,
    Resources,
    RunningJob,
    Snapshot,
)


def _job(jid: str, cores: int, walltime: int, runtime: int | None = None, ewt: int = 3600) -> Job:
    return Job(id=jid, submit=0, walltime=walltime, units=1, unit=Resources(cores=cores),
               ewt=ewt, runtime=runtime)  # fmt: skip


def _jobs() -> list[Job]:
    """One 4-core node. R (4 cores, the lowest EWT: first in every order and in the optimum on
    walltimes) runs alone from 0,
    walltime 100 but ends at 10. Then PRB's order (EWT, then demand) starts A (2 cores) and,
    beside it, the long low-weight C; B (4 cores, 24x C's weight) waits 1000 s for C. B first
    at 10, then A and C at 20, costs B nothing."""
    return [
        _job("R", 4, 100, runtime=10, ewt=60),
        _job("A", 2, 10),
        _job("B", 4, 10),
        _job("C", 2, 1000, ewt=86400),
    ]


def _after_early_end() -> tuple[Snapshot, dict[str, Assignment]]:
    """The cluster at 10 (R gone) and a stale plan in PRB's order made at 0 on walltimes."""
    node = Node("n1", Resources(cores=4))
    queued = tuple(_jobs()[1:])
    snap = Snapshot(10, (node,), (), queued, PowerCap.unlimited())
    stale = {"A": Assignment("A", 100, ("n1",)), "C": Assignment("C", 100, ("n1",)),
             "B": Assignment("B", 1100, ("n1",))}  # fmt: skip
    return snap, stale


def _researcher(**policy: object) -> Researcher:
    return Researcher(ResearchPolicy(**policy), SearchParams(workers=1))  # type: ignore[arg-type]


def test_an_early_end_makes_the_re_search_beat_prbs_order() -> None:
    snap, stale = _after_early_end()
    cache = StateCache()
    prb = map_schedule(snap, cache, prb_order(snap.queued), release=None, source="prb")
    assert {a.job_id: a.start for a in prb.assignments} == {"A": 10, "C": 10, "B": 1010}
    best, stats = _researcher(budget_s=0.5, robust="none").replan(snap, cache, stale, [0.1])
    starts = {a.job_id: a.start for a in best.assignments}
    assert starts["B"] == 10 and starts["A"] == starts["C"] == 20
    assert best.objective < prb.objective
    assert stats.status == "researched"


def test_the_offline_hybrid_re_searches_at_the_early_end_and_beats_prb() -> None:
    jobs = _jobs()

    def run(name: str, **params: object) -> float:
        cluster = SimulatedCluster([Node("n1", Resources(cores=4))], jobs, PowerCap.unlimited(),
                                   offline=True, record_power=False)  # fmt: skip
        res = replay(cluster, create(name, **params), keep_stats=name != "prb")
        assert res.start_errors == 0 and cluster.cap_violation_s == 0
        starts = {jid: r.start for jid, r in cluster.records.items() if r.start is not None}
        assert len(starts) == len(jobs)
        if name != "prb":
            assert any(s.status == "researched" for s in res.solver_stats) == (
                params.get("research") is not None
            )
        return weighted_queue_time(jobs, starts, max(j.ewt for j in jobs))

    offline = {"mode": "offline", "workers": 1, "total_budget_s": 2.0}
    prb = run("prb")
    stale = run("hybrid", **offline, research=None)
    fresh = run("hybrid", **offline, research={"budget_s": 0.3, "robust": "none"})
    # B at 10, A and C at 20 (R waits 0): (24 x 10 + 24 x 20 + 1 x 20) / 4.
    assert fresh == pytest.approx(185.0)
    assert fresh < prb
    assert stale <= prb


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_re_search_is_never_worse_on_walltimes_than_the_stale_plan_re_timed(
    seed: int,
) -> None:
    nodes = tuple(eurora_like_nodes(8))
    jobs = eurora_like_jobs(40, seed=seed)
    running = tuple(
        RunningJob(j, 0, (nodes[k].name,) * j.units, j.walltime) for k, j in enumerate(jobs[:4])
    )
    snap = Snapshot(0, nodes, running, tuple(jobs[4:]), PowerCap.unlimited())
    cache = StateCache()
    # A stale plan in a poor order (PRB's reversed), then the cluster later with R0 gone.
    reverse = list(reversed(prb_order(snap.queued)))
    made = map_schedule(snap, cache, reverse, release=None, source="stale")
    stale = {a.job_id: a for a in made.assignments}
    later = replace(snap, time=60, running=running[1:])
    cache = StateCache()
    retimed = map_schedule(later, cache, plan_order(later, stale), release=None, source="r")
    prb = map_schedule(later, cache, prb_order(later.queued), release=None, source="prb")
    researcher = _researcher(budget_s=0.2, when="always", robust="none")
    best, _ = researcher.replan(later, cache, stale, [0.5])
    assert {a.job_id for a in best.assignments} == {j.id for j in later.queued}
    assert best.objective <= min(retimed.objective, prb.objective) + 1e-9


def test_re_search_time_is_bounded_and_the_total_budget_then_re_times() -> None:
    nodes = tuple(eurora_like_nodes(8))
    snap = Snapshot(0, nodes, (), tuple(eurora_like_jobs(60, seed=5)), PowerCap.unlimited())
    cache = StateCache()
    researcher = _researcher(budget_s=0.2, total_s=0.5, when="always")
    statuses = []
    for _ in range(4):
        t0 = time.perf_counter()
        _, stats = researcher.replan(snap, cache, {}, [])
        assert time.perf_counter() - t0 < 0.2 + 0.5  # one decode may overrun the deadline
        statuses.append(stats.status)
    assert statuses[0] == "researched" and statuses[-1] == "retimed"
    assert researcher.spent_s < 0.5 + 0.5


def test_nothing_fits_now_means_no_search() -> None:
    node = Node("n1", Resources(cores=4))
    blocker = RunningJob(_job("X", 4, 100), 0, ("n1",), 100)
    snap = Snapshot(5, (node,), (blocker,), tuple(_jobs()[1:]), PowerCap.unlimited())
    researcher = _researcher(budget_s=0.5)
    best, stats = researcher.replan(snap, StateCache(), {}, [0.5])
    assert stats.status == "retimed" and researcher.searches == 0 and researcher.skipped == 1
    assert min(a.start for a in best.assignments) == 100


def test_rule_value_is_the_list_schedule_with_the_scenario_runtimes() -> None:
    snap, _ = _after_early_end()
    order = prb_order(snap.queued)
    on_walltimes = {j.id: j.walltime for j in snap.queued}
    prb = map_schedule(snap, StateCache(), order, release=None, source="prb")
    assert rule_value(snap, order, on_walltimes) == pytest.approx(prb.objective)
    # C ends at 11 instead of 1010: PRB's rule then starts B at 20, when A ends.
    short = {**on_walltimes, "C": 1}
    assert rule_value(snap, order, short) == pytest.approx((24 * 10 + 24 * 20 + 1 * 10) / 3)


def test_the_rules_choice_keeps_prb_when_the_scenarios_say_so_and_the_search_else() -> None:
    snap, stale = _after_early_end()
    cache = StateCache()
    prb = map_schedule(snap, cache, prb_order(snap.queued), release=None, source="prb")
    b_first = [snap.queued[1], snap.queued[0], snap.queued[2]]
    best = map_schedule(snap, cache, b_first, release=None, source="swap")
    assert best.objective < prb.objective
    order = plan_order(snap, stale)
    # Runtimes as walltimes: B first wins. Every job ending after 1 s (ratio 0.001): PRB's
    # rule makes B wait 1 s (weight 24), B first makes A and C wait 1 s (24 + 1): PRB's.
    picked, extra = best_rule(snap, cache, best, prb, order, [1.0], count=2, kinds=["iid"],
                              seed=0)  # fmt: skip
    assert picked.objective < prb.objective and extra["robust"] == "kept"
    assert [sc["C"] for sc in scenarios(snap, [0.001], 1, 0)] == [1]
    picked, extra = best_rule(snap, cache, best, prb, order, [0.001], count=2, kinds=["iid"],
                              seed=0)  # fmt: skip
    assert picked is prb and extra["rule"] == "prb"


def test_policy_values_are_checked() -> None:
    with pytest.raises(ValueError, match="when"):
        ResearchPolicy(when="never")
    with pytest.raises(ValueError, match="robust"):
        ResearchPolicy(robust="oracle")
    assert ResearchPolicy(kinds="iid+level").kinds == ("iid", "level")
    with pytest.raises(ValueError, match="budgets"):
        ResearchPolicy(budget_s=0)
