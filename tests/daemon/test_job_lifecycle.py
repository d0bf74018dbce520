"""The job lifecycle in the store (real SQLite and PostgreSQL): started jobs that end between
two snapshots, the RMS's end states, requeues, holds; interrupted starts are not refusals."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Engine, select

from wattsched.daemon.job_records import StartRecord
from wattsched.daemon.store import CycleRecord, Store
from wattsched.daemon.store_models import JobRow
from wattsched.scheduler.model import (
    EndedJob,
    Job,
    Node,
    Plan,
    Resources,
    RunningJob,
    Snapshot,
)

NODES = (Node("n1", Resources(cores=4)), Node("n2", Resources(cores=4)))


def job(jid: str, **kw: Any) -> Job:
    return Job(jid, 0, 600, 1, Resources(cores=1), **kw)


def record(store: Store, snap: Snapshot, starts: dict[str, StartRecord]) -> None:
    store.record_cycle(
        CycleRecord(snap, Plan(snap.time), 0.0, 0.0, 0.0, "enforce", 0.0, 2, None), starts
    )


def rows(store: Store) -> dict[str, JobRow]:
    with store.sessions() as s:
        return {r.id: r for r in s.scalars(select(JobRow))}


def test_a_job_we_started_that_ended_between_snapshots_is_finished(any_engine: Engine) -> None:
    store = Store(any_engine)
    record(store, Snapshot(10, NODES, (), (job("a"), job("b"))), {})
    # We started "a" at t=10 on n2; it ran and ended before the next snapshot. "b" vanished
    # without a start of ours: its user cancelled it.
    starts = {"a": StartRecord(0, 10, ("n2",))}
    record(store, Snapshot(40, NODES, (), ()), starts)
    got = rows(store)
    assert (got["a"].state, got["a"].started, got["a"].nodes) == ("finished", 10, "n2")
    assert got["a"].started_by == "wattsched" and got["a"].finished == 40
    assert got["b"].state == "cancelled" and got["b"].started is None


def test_the_rms_end_state_wins(any_engine: Engine) -> None:
    store = Store(any_engine)
    run = RunningJob(job("r"), 5, ("n1",), 605)
    record(store, Snapshot(10, NODES, (run,), (job("q"),)), {"r": StartRecord(0, 5, ("n1",))})
    ended = (EndedJob("r", "cancelled", 30), EndedJob("q", "timeout", None))
    record(store, Snapshot(40, NODES, (), (), ended=ended), {"r": StartRecord(0, 5, ("n1",))})
    got = rows(store)
    assert (got["r"].state, got["r"].finished, got["r"].nodes) == ("cancelled", 30, "n1")
    assert (got["q"].state, got["q"].finished) == ("timeout", 40)


def test_a_requeued_job_is_queued_again_with_its_restarts(any_engine: Engine) -> None:
    store = Store(any_engine)
    starts = {"r": StartRecord(0, 5, ("n1",))}
    record(store, Snapshot(10, NODES, (RunningJob(job("r"), 5, ("n1",), 605),), ()), starts)
    assert rows(store)["r"].state == "running"
    requeued = job("r", restarts=1, held_by="wattsched")
    record(store, Snapshot(40, NODES, (), (requeued,)), starts)
    got = rows(store)["r"]
    assert (got.state, got.nodes, got.started, got.restarts) == ("queued", None, None, 1)
    assert got.held_by == "wattsched"


def test_an_operators_hold_is_shown(any_engine: Engine) -> None:
    store = Store(any_engine)
    record(store, Snapshot(10, NODES, (), (job("h", held=True, held_by="operator"),)), {})
    assert rows(store)["h"].held_by == "operator"


def test_interrupted_starts_are_not_refusals(any_engine: Engine) -> None:
    store = Store(any_engine)
    for _ in range(3):  # three crashes mid-batch, each reconciled
        aid = store.begin_action("start", time_=0, job_id="j", nodes=["n1"])
        store.finish_action(aid, "failed", error="reconciled: interrupted, job still pending")
    aid = store.begin_action("start", time_=0, job_id="j", nodes=["n1"])
    store.finish_action(aid, "failed", error="RMSCommandError: node n1 is down")
    assert store.failed_start_counts(["j"]) == {"j": 1}
