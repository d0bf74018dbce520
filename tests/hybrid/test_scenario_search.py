"""The re-search judged under runtime scenarios (scheduler/hybrid/scenario_search.py): the
compiled decode with a scenario's runtimes gives what the rule gives (rules.rule_value)."""

from __future__ import annotations

import statistics

import pytest

from wattsched.scheduler.dispatcher import prb_order
from wattsched.scheduler.hybrid.research import Researcher, ResearchPolicy
from wattsched.scheduler.hybrid.robust import scenarios
from wattsched.scheduler.hybrid.rules import rule_value
from wattsched.scheduler.hybrid.scenario_search import ScenarioDecoder, scenario_search
from wattsched.scheduler.hybrid.search import SearchParams
from wattsched.scheduler.hybrid.synthetic import eurora_like_jobs, eurora_like_nodes
from wattsched.scheduler.mapper import StateCache
from wattsched.scheduler.model import PowerCap, RunningJob, Snapshot


def _snap(seed: int) -> Snapshot:
    nodes = tuple(eurora_like_nodes(8))
    jobs = eurora_like_jobs(40, seed=seed)
    running = tuple(
        RunningJob(j, 0, (nodes[k].name,) * j.units, j.walltime) for k, j in enumerate(jobs[:4])
    )
    return Snapshot(60, nodes, running, tuple(jobs[4:]), PowerCap.constant(2500.0))


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_scenario_decode_is_the_rules_mean(seed: int) -> None:
    snap = _snap(seed)
    cases = scenarios(snap, [0.05, 0.3, 0.9, 1.0], 3, seed, "iid")
    dec = ScenarioDecoder(snap, StateCache(), cases)
    assert dec.compiled
    order = prb_order(snap.queued)
    for cand in (order, list(reversed(order))):
        want = statistics.fmean(rule_value(snap, cand, sc) for sc in cases)
        assert dec.objective(cand) == pytest.approx(want, rel=1e-9)


def test_the_scenario_search_keeps_prbs_order_unless_another_beats_it() -> None:
    snap = _snap(4)
    cache = StateCache()
    stale = list(reversed(prb_order(snap.queued)))
    found = scenario_search(snap, cache, stale, [0.1, 0.5, 1.0], count=3, kinds=("iid",),
                            seed=0, budget_s=0.2)  # fmt: skip
    assert found is not None
    best, extra = found
    cases = scenarios(snap, [0.1, 0.5, 1.0], 3, 0, "iid")
    prb_mean = statistics.fmean(rule_value(snap, prb_order(snap.queued), sc) for sc in cases)
    assert best.objective <= prb_mean + 1e-9
    assert {a.job_id for a in best.assignments} == {j.id for j in snap.queued}
    assert int(extra["ls_tries"]) > 0
    assert scenario_search(snap, cache, stale, [], count=3, kinds=("iid",), seed=0,
                           budget_s=0.1) is None  # fmt: skip


def test_the_researcher_runs_the_scenario_search() -> None:
    snap = _snap(5)
    researcher = Researcher(ResearchPolicy(budget_s=0.2, robust="search", when="always"),
                            SearchParams(workers=1))  # fmt: skip
    best, stats = researcher.replan(snap, StateCache(), {}, [0.2, 0.6])
    assert stats.status == "researched" and "scenario_gain" in stats.extra
    assert {a.job_id for a in best.assignments} == {j.id for j in snap.queued}
