"""The online hybrid's ``rollout`` (``scheduler/hybrid/rollout.py``): a search's starts are kept
only when, followed by PRB's rule, they beat PRB's rule under runtimes sampled from the
predictor's own record of its errors."""

from __future__ import annotations

from dataclasses import replace

import pytest

from wattsched.connectors.simulated import SimulatedCluster
from wattsched.daemon.replay import replay
from wattsched.scheduler.hybrid.dispatcher import HybridDispatcher
from wattsched.scheduler.hybrid.rollout import MIN_ERRORS, prediction_scenarios
from wattsched.scheduler.hybrid.search_params import SearchParamError
from wattsched.scheduler.model import Job, Node, PowerCap, Resources, RunningJob, Snapshot
from wattsched.scheduler.runtime_predictor import RuntimePredictor

WHOLE = Resources(cores=16)


def _jobs() -> list[Job]:
    # One urgent 10-h job (12 times the weight of the others) and ten jobs of a slower
    # queue whose class is predicted to run 10 s, walltime 10 h.
    urgent = Job(id="u", submit=0, walltime=36_000, units=1, unit=WHOLE, queue="reservation",
                 ewt=1800, runtime=36_000)  # fmt: skip
    rest = [Job(id=f"p{k}", submit=0, walltime=36_000, units=1, unit=WHOLE, queue="parallel",
                ewt=21_600, runtime=36_000) for k in range(10)]  # fmt: skip
    return [urgent, *rest]


def _predictor(underestimates: bool) -> RuntimePredictor:
    """A predictor (no gate) that predicts 10 s for the ten jobs' class, and whose record
    says its predictions were right (ratio 1) or 3,600 times too short."""
    pred = RuntimePredictor(gate=False)
    other = Job(id="x", submit=0, walltime=36_000, units=1, unit=WHOLE, queue="other",
                ewt=21_600)  # fmt: skip
    for _ in range(MIN_ERRORS + 10):
        pred.learn(other, 36_000 if underestimates else 10, predicted=10)
    pred.learn(_jobs()[1], 10, predicted=10)
    pred.learn(_jobs()[2], 10, predicted=10)  # two ends: the class speaks
    return pred


def _started_now(
    predictor: RuntimePredictor,
    rollout: int,
    cold_prb: bool = False,
    cold_prior: tuple[float, ...] = (),
) -> tuple[list[str], dict[str, object]]:
    node = Node("n1", WHOLE)
    hybrid = HybridDispatcher(mode="online", workers=1, cycle_budget_s=0.3,
                              predictor=predictor, rollout=rollout, cold_prb=cold_prb,
                              cold_prior=cold_prior)  # fmt: skip
    plan = hybrid.plan(Snapshot(0, (node,), (), tuple(_jobs())))
    return [a.job_id for a in plan.assignments if a.start == 0], dict(plan.stats.extra)


def test_the_plan_on_predictions_that_were_too_short_gives_way_to_prb() -> None:
    # In the model (10-s jobs) the ten first are far better; with the record of errors
    # each runs 10 h, and starting one before the urgent job loses.
    assert _started_now(_predictor(underestimates=True), rollout=0)[0] == ["p0"]
    now, extra = _started_now(_predictor(underestimates=True), rollout=8)
    assert now == ["u"]
    assert extra["rollout"] == "prb"


def test_the_plan_on_predictions_that_were_right_is_kept() -> None:
    now, extra = _started_now(_predictor(underestimates=False), rollout=8)
    assert now == ["p0"]
    assert extra["rollout"] == "kept"


def test_a_plan_no_rollout_can_judge_yet_is_kept_or_with_cold_prb_gives_way_to_prb() -> None:
    # Two ends seen (the class speaks: 10 s) but fewer than MIN_ERRORS errors: no scenario.
    cold = _cold()
    assert len(cold.errors) < MIN_ERRORS
    now, extra = _started_now(cold, rollout=8)
    assert now == ["p0"]
    assert "rollout" not in extra
    now, extra = _started_now(cold, rollout=8, cold_prb=True)
    assert now == ["u"]
    assert extra["rollout"] == "cold"
    # Once the record is long enough the rollout judges, cold_prb or not.
    now, extra = _started_now(_predictor(underestimates=False), rollout=8, cold_prb=True)
    assert now == ["p0"]
    assert extra["rollout"] == "kept"


def _cold() -> RuntimePredictor:
    """Two ends seen (the ten jobs' class speaks: 10 s): fewer errors than MIN_ERRORS."""
    cold = RuntimePredictor(gate=False)
    cold.learn(_jobs()[1], 10, predicted=10)
    cold.learn(_jobs()[2], 10, predicted=10)
    return cold


def test_a_cold_prior_lets_the_rollout_judge_the_first_searches() -> None:
    # A prior that says predictions run 3,600 times longer: the ten 10-s jobs first lose.
    now, extra = _started_now(_cold(), rollout=8, cold_prior=(3600.0,) * MIN_ERRORS)
    assert now == ["u"]
    assert extra["rollout"] == "prb"
    # A prior that says they are right: the plan is kept, judged.
    now, extra = _started_now(_cold(), rollout=8, cold_prior=(1.0,) * MIN_ERRORS)
    assert now == ["p0"]
    assert extra["rollout"] == "kept"


def test_a_cold_prior_of_ratios_not_above_zero_is_refused() -> None:
    with pytest.raises(SearchParamError, match="cold_prior"):
        HybridDispatcher(mode="online", cold_prior=(0.5, 0.0))


def test_scenarios_keep_runtimes_in_walltime_and_running_ends_after_now() -> None:
    pred = _predictor(underestimates=True)
    jobs = _jobs()
    running = RunningJob(jobs[1], 0, ("n1",), 36_000)
    snap = Snapshot(5_000, (Node("n1", WHOLE),), (running,), (jobs[0], *jobs[2:]))
    cases = prediction_scenarios(snap, pred, 5, seed=1)
    assert len(cases) == 5
    for sc in cases:
        assert all(1 <= sc[j.id] <= j.walltime for j in snap.queued)
        assert 5_000 < sc["p0"] <= 36_000  # past its 10-s prediction: still ends after now
    assert prediction_scenarios(snap, RuntimePredictor(), 5, seed=1) == []  # no record yet


def test_the_rollout_keeps_the_cap_and_the_nodes_in_a_replay() -> None:
    nodes = [Node(f"n{k}", WHOLE) for k in range(2)]
    cluster = SimulatedCluster(nodes, _jobs(), PowerCap.constant(2000.0), record_power=False)
    hybrid = HybridDispatcher(mode="online", workers=1, cycle_budget_s=0.2,
                              predictor=_predictor(underestimates=True), rollout=4)  # fmt: skip
    res = replay(cluster, hybrid)
    assert res.start_errors == 0 and cluster.cap_violation_s == 0
    assert cluster.records["u"].start == 0
    assert all(r.start is not None for r in cluster.records.values())


def test_by_class_the_jobs_of_a_class_planned_on_walltimes_share_one_ratio() -> None:
    # The urgent job's class ("reservation") has no end seen: planned on its walltime. Three
    # more of it; the ten "parallel" jobs' class speaks (10 s): they draw their own ratios.
    pred = RuntimePredictor(gate=False)
    other = Job(id="x", submit=0, walltime=36_000, units=1, unit=WHOLE, queue="other",
                ewt=21_600)  # fmt: skip
    for k in range(MIN_ERRORS + 10):
        pred.learn(other, 1000 * (k % 7 + 1), predicted=36_000)  # ratios 1/36 .. 7/36
    pred.learn_all([(_jobs()[1], 10), (_jobs()[2], 10)])
    urgent = [replace(_jobs()[0], id=f"u{k}") for k in range(4)]
    snap = Snapshot(0, (Node("n1", WHOLE),), (), (*urgent, *_jobs()[1:]))
    assert pred.level(urgent[0]) == "walltime" and pred.level(_jobs()[1]) == "class"
    shared = prediction_scenarios(snap, pred, 6, seed=3, by_class=True)
    own = prediction_scenarios(snap, pred, 6, seed=3)
    assert all(len({sc[u.id] for u in urgent}) == 1 for sc in shared)
    assert any(len({sc[u.id] for u in urgent}) > 1 for sc in own)
    assert any(len({sc[f"p{k}"] for k in range(10)}) > 1 for sc in shared)
