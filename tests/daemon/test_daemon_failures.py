"""Failing RMS calls: logged, recorded, counted, retried by policy; the loop goes on.

The connector is the simulated cluster with injected faults (a subclass whose calls fail on
demand), as a real RMS's timeouts and refusals would.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Engine, func, select, text

from wattsched.connectors.base import RMSCommandError, RMSTimeout, StartResult
from wattsched.connectors.simulated import SimulatedCluster
from wattsched.daemon.store_models import ActionRow, CycleRow, JobRow
from wattsched.scheduler.dispatcher import Dispatcher
from wattsched.scheduler.model import Assignment, Plan, Snapshot


class FlakyCluster(SimulatedCluster):
    """Snapshots time out while ``snapshot_failures`` > 0; starts of ``refuse`` jobs fail."""

    snapshot_failures = 0
    refuse: frozenset[str] = frozenset()

    def snapshot(self) -> Snapshot:
        if self.snapshot_failures > 0:
            self.snapshot_failures -= 1
            raise RMSTimeout(["squeue", "--json"], 30.0)
        return super().snapshot()

    def start(self, job_id: str, nodes: Sequence[str]) -> StartResult:
        if job_id in self.refuse:
            raise RMSCommandError(["scontrol", "release", job_id], 1, "Invalid job id specified")
        return super().start(job_id, nodes)


def flaky(cluster_factory: Any) -> FlakyCluster:
    cluster: FlakyCluster = cluster_factory.small_cluster(cls=FlakyCluster)
    return cluster


def test_snapshot_timeout_is_recorded_and_the_loop_goes_on(
    sqlite_engine: Engine, cluster_factory: Any
) -> None:
    cluster = flaky(cluster_factory)
    svc = cluster_factory.make_service(sqlite_engine, cluster)
    cluster.snapshot_failures = 2
    first = svc.run_now()
    assert not first.ok and "RMSTimeout" in (first.error or "")
    assert not svc.run_now().ok
    third = svc.run_now()
    assert third.ok and third.started > 0
    assert svc.counters.copy()["errors"]["rms"] == 2
    with svc.store.sessions() as s:
        failed = s.scalars(select(CycleRow).where(CycleRow.ok.is_(False))).all()
    assert len(failed) == 2 and all("timed out" in (c.error or "") for c in failed)


def test_failing_start_retried_then_given_up(sqlite_engine: Engine, cluster_factory: Any) -> None:
    cluster = flaky(cluster_factory)
    cluster.refuse = frozenset({"100"})
    svc = cluster_factory.make_service(sqlite_engine, cluster)
    svc.max_start_attempts = 3
    for _ in range(6):
        svc.run_now()
        cluster.advance_to(cluster.now + 20)
    with svc.store.sessions() as s:
        tries = s.scalar(
            select(func.count()).where(ActionRow.job_id == "100", ActionRow.state == "failed")
        )
        err = s.scalars(select(ActionRow.error).where(ActionRow.job_id == "100")).first()
        others = s.scalar(
            select(func.count()).where(ActionRow.job_id != "100", ActionRow.state == "done")
        )
    assert tries == 3  # bounded: max_start_attempts, then left alone
    assert err and "Invalid job id" in err
    assert others and others > 0  # the other jobs were started meanwhile
    counters = svc.counters.copy()
    assert counters["errors"]["start_gave_up"] == 1
    assert counters["actions"][("start", "failed")] == 3


def test_reconciliation_waits_for_the_rms(sqlite_engine: Engine, cluster_factory: Any) -> None:
    cluster = flaky(cluster_factory)
    svc = cluster_factory.make_service(sqlite_engine, cluster)
    # A start journaled by a previous process that died before the RMS call.
    svc.store.begin_action("start", time_=0, job_id="100", nodes=["n0"])
    cluster.snapshot_failures = 1
    assert not svc.run_now().ok  # the RMS is unreachable: nothing reconciled, nothing started
    assert len(svc.store.pending_actions()) == 1
    assert svc.run_now().ok  # reconciled first (job 100 still pending: failed), then acted
    assert svc.store.pending_actions() == []
    with svc.store.sessions() as s:
        states = s.scalars(
            select(ActionRow.state).where(ActionRow.job_id == "100").order_by(ActionRow.id)
        ).all()
    assert states == ["failed", "done"]  # started once, by the second cycle


def test_database_failure_fails_the_cycle_not_the_loop(
    sqlite_engine: Engine, cluster_factory: Any
) -> None:
    cluster = flaky(cluster_factory)
    svc = cluster_factory.make_service(sqlite_engine, cluster)
    assert svc.run_now().ok
    cluster.advance_to(cluster.now + 100)
    # A real database failure: a table the cycle writes disappears.
    with sqlite_engine.begin() as conn:
        conn.execute(text("ALTER TABLE power_samples RENAME TO power_samples_away"))
    broken = svc.run_now()
    assert not broken.ok and "power_samples" in (broken.error or "")
    assert svc.counters.copy()["errors"]["store"] == 1
    with sqlite_engine.begin() as conn:
        conn.execute(text("ALTER TABLE power_samples_away RENAME TO power_samples"))
    cluster.advance_to(cluster.now + 100)
    snap = cluster.snapshot()  # what the next cycle sees (it does not move the clock)
    assert svc.run_now().ok  # caches reloaded: the jobs' lifecycle is consistent again
    with svc.store.sessions() as s:
        states = dict(s.execute(select(JobRow.state, func.count()).group_by(JobRow.state)).all())
    assert states.get("queued", 0) == len(snap.queued)
    assert states.get("running", 0) == len(snap.running)


class _Careless(Dispatcher):
    """Plans every queued job now on n0, held or not (a dispatcher bug the loop must stop)."""

    name = "careless"

    def plan(self, snap: Snapshot) -> Plan:
        return Plan(snap.time, tuple(Assignment(j.id, snap.time, ("n0",)) for j in snap.queued))


def test_a_held_job_is_never_started(sqlite_engine: Engine, cluster_factory: Any) -> None:
    cluster = cluster_factory.small_cluster()
    cluster.hold("100")  # its owner holds it
    svc = cluster_factory.make_service(sqlite_engine, cluster)
    svc.dispatcher = _Careless()
    svc.run_now()
    with svc.store.sessions() as s:
        assert s.scalar(select(func.count()).where(ActionRow.job_id == "100")) == 0
    assert "100" in {j.id for j in cluster.snapshot().queued}
