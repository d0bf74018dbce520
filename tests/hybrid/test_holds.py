"""Reservations the rollout judges (``scheduler/hybrid/holds.py``): the compiled decode's
hold (a head holds the machine until it starts; another job starts meanwhile only if it
ends, by its walltime, before the running jobs' last known end), the rollout's verdict, and
a wide waited job that fails the value test getting a reservation from the online hybrid
because the rollout says it pays."""

from __future__ import annotations

import pytest

from wattsched.scheduler.hybrid.decode import ListDecoder, warm
from wattsched.scheduler.hybrid.dispatcher import HybridDispatcher
from wattsched.scheduler.hybrid.holds import JudgedHolds
from wattsched.scheduler.hybrid.rollout import MIN_ERRORS, reservation_pays
from wattsched.scheduler.hybrid.search import SearchParamError
from wattsched.scheduler.mapper import StateCache
from wattsched.scheduler.model import Job, Node, PowerCap, Resources, RunningJob, Snapshot
from wattsched.scheduler.reservation import starving
from wattsched.scheduler.runtime_predictor import RuntimePredictor

warm()

WHOLE = Resources(cores=16)
NODES = (Node("n1", WHOLE), Node("n2", WHOLE))
CAP = PowerCap.constant(10_000.0)


def _job(jid: str, walltime: int, units: int = 1, *, queue: str = "parallel", ewt: int = 21_600,
         submit: int = 0, unit: Resources = WHOLE) -> Job:  # fmt: skip
    return Job(id=jid, submit=submit, walltime=walltime, units=units, unit=unit, queue=queue,
               ewt=ewt, runtime=walltime)  # fmt: skip


def _snap(long_walltime: int = 5000, head_units: int = 2) -> Snapshot:
    """n1 busy until 1,000; a two-node head, a short and a long one-node job wait."""
    running = (RunningJob(_job("r", 1000), 0, ("n1",), 1000),)
    queued = (_job("h", 3600, head_units, queue="reservation", ewt=1800),
              _job("s", 500), _job("l", long_walltime))  # fmt: skip
    return Snapshot(0, NODES, running, queued, CAP)


def _starts(snap: Snapshot, hold: bool) -> dict[str, int]:
    dec = ListDecoder(snap, StateCache())
    assert dec.compiled
    head, short, long = snap.queued
    if hold:
        dec.hold = dec.index["h"] + dec.n_running
    return {a.job_id: a.start for a in dec.schedule([head, short, long], "").assignments}


def test_the_decode_hold_keeps_the_machine_for_the_head() -> None:
    # Without the hold the long job takes n2 when the short one ends and the head waits for
    # it; with it only the short job (ending by 1,000) starts before the head.
    assert _starts(_snap(), hold=False) == {"s": 0, "l": 500, "h": 5500}
    assert _starts(_snap(), hold=True) == {"s": 0, "h": 1000, "l": 4600}


def test_a_hold_for_a_head_that_fits_nowhere_is_dropped_on_an_empty_machine() -> None:
    # Three whole nodes on two: once nothing runs the hold is dropped and the long job starts.
    assert _starts(_snap(head_units=3), hold=True) == {"s": 0, "l": 1000}


def _predictor() -> RuntimePredictor:
    """A predictor whose record says its predictions (walltimes here) were right."""
    pred = RuntimePredictor(gate=False)
    other = _job("x", 36_000, queue="other")
    for _ in range(MIN_ERRORS + 10):
        pred.learn(other, 10, predicted=10)
    return pred


def test_the_rollout_says_a_hold_pays_only_when_it_changes_something() -> None:
    snap = _snap()
    head = snap.queued[0]
    ok, gain = reservation_pays(snap, head, _predictor(), 4, seed=1, margin=0.02)
    assert ok and gain > 2  # the head waits 1,000 s, not 5,500 (weight 12 to the others' 1)
    short_only = _snap(long_walltime=400)  # ends before the head's shadow time either way
    assert reservation_pays(short_only, head, _predictor(), 4, seed=1) == (False, 1.0)
    assert reservation_pays(snap, head, RuntimePredictor(), 4, seed=1) == (False, 0.0)


def test_a_paid_reservation_holds_one_judgement_a_cycle_a_refusal_is_retried_later() -> None:
    holds = JudgedHolds(margin=0.02, count=4, retry_s=600)
    snap = _snap()
    head, short, long = snap.queued
    pays = holds.pays_for(snap, _predictor(), seed=1)
    assert pays(short) is False  # it starts now under PRB's rule too: nothing gained
    assert pays(head) is False  # one judgement a cycle
    assert holds.judgements == 1 and set(holds.turned_down) == {"s"}
    pays = holds.pays_for(snap, _predictor(), seed=1)
    assert pays(short) is False and pays(head) is True and holds.paid == {"h"}
    pays = holds.pays_for(snap, _predictor(), seed=1)
    assert pays(head) is True and holds.judgements == 2  # paid: held without a rollout
    later = Snapshot(600, NODES, snap.running, (short, long), CAP)  # the head started
    pays = holds.pays_for(later, _predictor(), seed=1)
    assert holds.paid == set() and pays(short) is False and holds.judgements == 3


def test_starving_asks_pays_only_for_a_wide_waited_job_that_fails_the_value_test() -> None:
    snap = _busy(4200)
    asked: list[str] = []

    def pays(job: Job) -> bool:
        asked.append(job.id)
        return True

    walltime = lambda j: j.walltime  # noqa: E731
    assert starving(snap, walltime) == []  # the debug jobs are worth more a core-second
    assert [j.id for j in starving(snap, walltime, pays=pays)] == ["h"] and asked == ["h"]
    assert starving(_busy(3000), walltime, pays=pays) == [] and asked == ["h"]  # not waited


def _busy(now: int) -> Snapshot:
    """Both nodes busy until 5,000 and 5,100; a two-node ``reservation`` job waiting since 0,
    a long one-node job and four one-core debug jobs just arrived."""
    running = (RunningJob(_job("p0", 1000), 4000, ("n1",), 5000),
               RunningJob(_job("p1", 1000), 4100, ("n2",), 5100))  # fmt: skip
    debug = [_job(f"d{k}", 60, queue="debug", ewt=3600, submit=now, unit=Resources(cores=1))
             for k in range(4)]  # fmt: skip
    queued = (_job("h", 3600, 2, queue="reservation", ewt=1800), _job("l", 20_000), *debug)
    return Snapshot(now, NODES, running, queued, CAP)


def _hybrid(hold_margin: float | None) -> HybridDispatcher:
    return HybridDispatcher(mode="online", workers=1, cycle_budget_s=0.2, predictor=_predictor(),
                            hold_margin=hold_margin)  # fmt: skip


def test_the_online_hybrid_reserves_for_the_job_the_rollout_judges() -> None:
    assert "h" not in _hybrid(None).plan(_busy(4200)).by_job()  # the value test alone
    hybrid = _hybrid(0.02)
    assert hybrid.holds is not None
    plan = hybrid.plan(_busy(4200))
    assert plan.stats.extra["reserved"] == "h" and plan.stats.extra["shadow"] == 5100
    assert plan.by_job()["h"].start == 5100 and hybrid.holds.paid == {"h"}


def test_judged_holds_are_online_with_a_predictor_and_a_rollout_only() -> None:
    assert HybridDispatcher(mode="offline", hold_margin=0.02).holds is None
    assert HybridDispatcher(predictor=False, hold_margin=0.02).holds is None
    assert HybridDispatcher(rollout=0, hold_margin=0.02).holds is None
    assert HybridDispatcher(reserve=False, hold_margin=0.02).holds is None
    with pytest.raises(SearchParamError, match="hold_margin"):
        HybridDispatcher(hold_margin=-0.1)
