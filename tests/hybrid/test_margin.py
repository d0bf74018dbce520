"""The hybrid's ``margin`` (online): a searched plan is taken only when it beats PRB's plan by
that share of the weighted wait PRB's plan leaves from now on; else PRB's plan."""

from __future__ import annotations

import pytest

from wattsched.scheduler.hybrid.dispatcher import HybridDispatcher
from wattsched.scheduler.hybrid.search import SearchParamError
from wattsched.scheduler.model import Job, Node, Plan, Resources, Snapshot


def _plan(margin: float, now: int = 0) -> Plan:
    # PRB starts the urgent 10-h job first (mean weighted queue time 33,136 s); the search
    # starts the ten 100-s jobs first (1,500 s): 22 times better.
    urgent = Job(id="u", submit=0, walltime=36_000, units=1, unit=Resources(cores=16),
                 queue="reservation", ewt=1800, runtime=36_000)  # fmt: skip
    rest = [Job(id=f"p{k}", submit=0, walltime=100, units=1, unit=Resources(cores=16),
                queue="parallel", ewt=21_600, runtime=100) for k in range(10)]  # fmt: skip
    hybrid = HybridDispatcher(mode="online", workers=1, cycle_budget_s=0.3, predictor=False,
                              margin=margin, reserve=False)  # fmt: skip
    node = Node("n1", Resources(cores=16))
    return hybrid.plan(Snapshot(now, (node,), (), (urgent, *rest)))


def _now(plan: Plan) -> list[str]:
    return [a.job_id for a in plan.starts_now()]


def test_a_searched_plan_that_beats_prb_by_the_margin_is_taken() -> None:
    plan = _plan(0.5)
    assert _now(plan) == ["p0"]
    assert "margin" not in plan.stats.extra


def test_a_searched_plan_that_beats_prb_by_less_than_the_margin_gives_way_to_prb() -> None:
    plan = _plan(30.0)
    assert _now(plan) == ["u"]
    assert plan.stats.extra["margin"] == "prb"


def test_the_margin_ignores_what_the_queue_has_already_waited() -> None:
    # At 100,000 s every job has waited that long (mean weighted 200,000 s, in both plans):
    # the search still cuts what is decided from now on 22-fold, well past a margin of 0.5
    # (of the whole mean, 201,500 against 233,136 s, it would not be).
    assert _now(_plan(0.5, now=100_000)) == ["p0"]
    plan = _plan(30.0, now=100_000)
    assert _now(plan) == ["u"] and plan.stats.extra["margin"] == "prb"


def test_a_negative_margin_is_refused_and_offline_has_none() -> None:
    with pytest.raises(SearchParamError, match="margin"):
        HybridDispatcher(mode="online", margin=-0.1)
    assert HybridDispatcher(mode="offline", margin=0.5)._choose.keywords["margin"] == 0.0
