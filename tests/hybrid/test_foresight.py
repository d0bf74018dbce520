"""The online rollout's ``foresight`` (``scheduler/hybrid/rollout.py``): jobs to arrive, drawn
from the last arrivals, in the rollout's scenarios; and the compiled decode's release times
(``scheduler/hybrid/decode_kernel.py``) that keep such a job from starting before it arrives."""

from __future__ import annotations

import random

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


def test_future_arrivals_repeat_the_last_horizon_shifted() -> None:
    window = [_job(str(k), NOW - 5_000 + 500 * k, 600, 3600) for k in range(11)]
    pred = RuntimePredictor(gate=False)
    runtimes: dict[str, int] = {}
    got = future_arrivals(window, NOW, 3_000, random.Random(3), pred, [0.5, 2.0], runtimes)
    # The jobs submitted in (NOW - 3,000, NOW]: 6 of them (NOW - 2,500 ... NOW).
    assert len(got) == 6
    assert len({j.id for j in got}) == 6 and all(j.id.startswith("~") for j in got)
    assert all(NOW < j.submit <= NOW + 3_000 for j in got)
    assert all(runtimes[j.id] in (300, 600) for j in got)  # 600 x 0.5, 600 x 2 cut to 600
    assert future_arrivals(window, NOW, 0, random.Random(3), pred, [1.0], {}) == []


def _predictor() -> RuntimePredictor:
    """No class known (each job predicted at its walltime), and a record of exact guesses."""
    pred = RuntimePredictor(gate=False)
    other = Job(id="o", submit=0, walltime=500, units=1, unit=Resources(cores=1), queue="o")
    for _ in range(MIN_ERRORS + 5):
        pred.learn(other, 50, predicted=50)
    return pred


def test_foresight_turns_down_starts_that_delay_the_jobs_about_to_arrive() -> None:
    # One node. y (weight 4, 1,000 s) first in PRB's order; x (weight 1, 100 s) first in the
    # plan: better for the two (4 x 100 against 1 x 1,000). But debug jobs (weight 24)
    # arrived between 200 s and 900 s into the last hour, and the plan makes such jobs wait
    # 100 s longer behind y.
    node = Node("n1", WHOLE)
    y, x = _job("y", NOW, 1_000, 21_600), _job("x", NOW, 100, 86_400)
    snap = Snapshot(NOW, (node,), (), (y, x))
    best = MappedSchedule((Assignment("x", NOW, ("n1",)), Assignment("y", NOW + 100, ("n1",))),
                          200.0, (), 0, "search")  # fmt: skip
    prb = MappedSchedule((Assignment("y", NOW, ("n1",)), Assignment("x", NOW + 1_000, ("n1",))),
                         500.0, (), 0, "prb")  # fmt: skip
    window = [_job(f"d{k}", NOW - 3_600 + 200 + 100 * k, 10, 3600) for k in range(8)]
    blind, extra = rollout_choice(snap, best, prb, _predictor(), 4, seed=0)
    assert blind is best and extra["rollout"] == "kept"
    seen, extra = rollout_choice(snap, best, prb, _predictor(), 4, seed=0, window=window,
                                 horizon=3_600)  # fmt: skip
    assert seen is prb and extra["rollout"] == "prb"
    # Arrivals from before the horizon are not drawn: the plan is kept again.
    _, extra = rollout_choice(snap, best, prb, _predictor(), 4, seed=0, window=window,
                              horizon=200)  # fmt: skip
    assert extra["rollout"] == "kept"


def test_foresight_must_not_be_negative() -> None:
    with pytest.raises(SearchParamError, match="foresight"):
        HybridDispatcher(mode="online", rollout=4, foresight=-1)
