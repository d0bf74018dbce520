"""The online rollout's ``foresight`` (``scheduler/hybrid/rollout.py``): jobs to arrive, drawn
from the last arrivals, in the rollout's scenarios; and the compiled decode's release times
(``scheduler/hybrid/decode_kernel.py``) that keep such a job from starting before it arrives."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from wattsched.scheduler.hybrid.decode import ListDecoder
from wattsched.scheduler.hybrid.dispatcher import HybridDispatcher
from wattsched.scheduler.hybrid.mapping import MappedSchedule
from wattsched.scheduler.hybrid.rollout import MIN_ERRORS, future_arrivals, rollout_choice
from wattsched.scheduler.hybrid.search import SearchParamError
from wattsched.scheduler.mapper import StateCache
from wattsched.scheduler.model import Assignment, Job, Node, Resources, Snapshot
from wattsched.scheduler.runtime_predictor import RuntimePredictor

WHOLE = Resources(cores=16)
NOW = 10_000


def _job(jid: str, submit: int, walltime: int, ewt: int) -> Job:
    return Job(id=jid, submit=submit, walltime=walltime, units=1, unit=WHOLE, ewt=ewt)


def test_a_job_to_arrive_starts_no_earlier_than_its_arrival() -> None:
    node = Node("n1", WHOLE)
    queued = _job("q", NOW, 100, 3600)
    late = _job("~0", NOW + 50, 10, 3600)
    snap = Snapshot(NOW, (node,), (), (queued,))
    dec = ListDecoder(snap, StateCache(), [late])
    assert dec.compiled
    # Listed first, but not arrived at NOW: q starts now, the arrival when q ends.
    sched = dec.schedule([late, queued], "t")
    starts = {a.job_id: a.start for a in sched.assignments}
    assert starts == {"q": NOW, "~0": NOW + 100}
    assert sched.objective == pytest.approx((0 + 50) / 2)
    # On a free node it starts at its arrival exactly (an event of the decode).
    alone = ListDecoder(Snapshot(NOW, (node,), (), ()), StateCache(), [late])
    assert {a.job_id: a.start for a in alone.schedule([late], "t").assignments} == {"~0": NOW + 50}


def test_future_arrivals_come_at_the_rate_of_the_last_span() -> None:
    # 11 jobs, one every 500 s up to NOW; the last 3,000 s hold 6 (NOW - 2,500 ... NOW).
    window = [_job(str(k), NOW - 5_000 + 500 * k, 600, 3600) for k in range(11)]
    pred = RuntimePredictor(gate=False)
    runtimes: dict[str, int] = {}
    rng = random.Random(3)
    got = future_arrivals(window, NOW, 1_500, rng, pred, [0.5, 2.0], runtimes, span=3_000)
    assert len(got) == 3  # 6 x 1,500 / 3,000
    assert len({j.id for j in got}) == 3 and all(j.id.startswith("~") for j in got)
    assert all(NOW < j.submit <= NOW + 1_500 for j in got)
    assert all(runtimes[j.id] in (300, 600) for j in got)  # 600 x 0.5, 600 x 2 cut to 600
    # 1.5 expected over a 750-s horizon and the span of 1,000 s: 1 or 2 jobs, 2 half the time.
    counts = [len(future_arrivals(window, NOW, 750, rng, pred, [1.0], {}, span=1_000))
              for _ in range(400)]  # fmt: skip
    assert set(counts) == {1, 2} and 150 < counts.count(2) < 250
    assert future_arrivals(window, NOW, 0, rng, pred, [1.0], {}) == []


def _predictor() -> RuntimePredictor:
    """No class known (each job predicted at its walltime), and a record of exact guesses."""
    pred = RuntimePredictor(gate=False)
    other = Job(id="o", submit=0, walltime=500, units=1, unit=Resources(cores=1), queue="o")
    for _ in range(MIN_ERRORS + 5):
        pred.learn(other, 50, predicted=50)
    return pred


def test_foresight_turns_down_starts_that_delay_the_jobs_about_to_arrive() -> None:
    # One node. y (weight 4, 1,000 s) first in PRB's order; x (weight 1, 100 s) first in the
    # plan: better for the two (4 x 100 against 1 x 1,000). But jobs of y's queue arrive,
    # 16 an hour over the last day (10 s, but with more memory: after y in PRB's order), and
    # each one that comes while y waits or runs waits 100 s longer behind it in the plan
    # (about 5 of them: 5 x 4 x 100 > 600).
    now = 90_000
    node = Node("n1", Resources(cores=16, mem_mb=4096))
    big = Resources(cores=16, mem_mb=2000)
    y, x = _job("y", now, 1_000, 21_600), _job("x", now, 100, 86_400)
    snap = Snapshot(now, (node,), (), (y, x))
    best = MappedSchedule((Assignment("x", now, ("n1",)), Assignment("y", now + 100, ("n1",))),
                          200.0, (), 0, "search")  # fmt: skip
    prb = MappedSchedule((Assignment("y", now, ("n1",)), Assignment("x", now + 1_000, ("n1",))),
                         500.0, (), 0, "prb")  # fmt: skip
    window = [replace(_job(f"d{k}", now - 225 * k, 10, 21_600), unit=big) for k in range(384)]
    blind, extra = rollout_choice(snap, best, prb, _predictor(), 4, seed=0)
    assert blind is best and extra["rollout"] == "kept"
    seen, extra = rollout_choice(snap, best, prb, _predictor(), 4, seed=0, window=window,
                                 horizon=3_600)  # fmt: skip
    assert seen is prb and extra["rollout"] == "prb"
    # Lost by 7-13 % (the gain over seeds 0-9): a rollout margin of 20 % keeps the plan.
    kept, extra = rollout_choice(snap, best, prb, _predictor(), 4, seed=0, window=window,
                                 horizon=3_600, margin=0.2)  # fmt: skip
    assert kept is best and extra["rollout"] == "kept" and extra["rollout_gain"] < 1
    # No arrivals in the last day: the plan is kept again.
    old = [replace(j, submit=j.submit - 86_400) for j in window if j.submit >= 86_400]
    _, extra = rollout_choice(snap, best, prb, _predictor(), 4, seed=0, window=old,
                              horizon=3_600)  # fmt: skip
    assert extra["rollout"] == "kept"


def test_foresight_and_the_rollout_margin_must_not_be_negative() -> None:
    with pytest.raises(SearchParamError, match="foresight"):
        HybridDispatcher(mode="online", rollout=4, foresight=-1)
    with pytest.raises(SearchParamError, match="rollout_margin"):
        HybridDispatcher(mode="online", rollout=4, rollout_margin=-0.1)
