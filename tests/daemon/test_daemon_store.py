"""Migrations, the schema check, the journal, reconciliation after a crash (SQLite)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, func, select, text

from wattsched.daemon.store import Store
from wattsched.daemon.store_models import ActionRow, CycleRow, JobRow, PlanEntryRow
from wattsched.daemon.store_schema import (
    SchemaError,
    check_schema,
    current_revision,
    head_revision,
    make_engine,
    migrate,
)


def test_upgrade_from_empty(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'sub' / 'w.db'}")
    assert current_revision(engine) is None
    assert migrate(engine) == head_revision()
    assert check_schema(engine) == head_revision()
    with engine.connect() as conn:
        tables = {r[0] for r in conn.execute(text("SELECT name FROM sqlite_master"))}
    assert {
        "nodes",
        "node_states",
        "jobs",
        "cycles",
        "plan_entries",
        "actions",
        "power_samples",
    } <= tables


def test_empty_schema_refused(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'w.db'}")
    with pytest.raises(SchemaError, match="wattsched migrate"):
        check_schema(engine)


def test_previous_revision_refused_then_upgraded(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'w.db'}")
    assert migrate(engine, "0001") == "0001"
    assert head_revision() != "0001"
    with pytest.raises(SchemaError) as err:
        check_schema(engine)
    assert err.value.current == "0001"
    assert migrate(engine) == head_revision()  # the upgrade path from the old schema
    check_schema(engine)


def test_unknown_schema_refused(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'w.db'}")
    migrate(engine)
    with engine.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = '0000'"))
    with pytest.raises(SchemaError) as err:
        check_schema(engine)
    assert err.value.current == "0000"
    assert "0000" in str(err.value) and head_revision() in str(err.value)


def test_cycle_records_lifecycle_and_journal(sqlite_engine: Engine, cluster_factory: Any) -> None:
    cluster = cluster_factory.small_cluster()
    svc = cluster_factory.make_service(sqlite_engine, cluster)
    for _ in range(6):
        svc.run_now()
        cluster.advance_to(cluster.now + 200)
    store = svc.store
    with store.sessions() as s:
        states = dict(s.execute(select(JobRow.state, func.count()).group_by(JobRow.state)).all())
        starts = s.scalars(select(ActionRow).where(ActionRow.kind == "start")).all()
        by_us = s.scalar(select(func.count()).where(JobRow.started_by == "wattsched"))
        cycles = s.scalar(select(func.count()).select_from(CycleRow))
        entries = s.scalars(select(PlanEntryRow.cycle_id).distinct()).all()
    assert cycles == 6
    assert states.get("finished", 0) > 0
    assert all(a.state == "done" and a.finished_at is not None for a in starts)
    assert len({a.job_id for a in starts}) == len(starts)  # never twice
    assert by_us and by_us > 0
    assert len(entries) <= 1  # only the latest plan's entries are kept


def test_pending_start_reconciled(sqlite_engine: Engine, cluster_factory: Any) -> None:
    cluster = cluster_factory.small_cluster()
    store = Store(sqlite_engine)
    # A crash after journaling, before/after the RMS call: one job started, one not.
    cluster.advance_to(50)
    snap = cluster.snapshot()
    a_run = store.begin_action("start", time_=snap.time, job_id="100", nodes=["n0"])
    cluster.start("100", ["n0"])
    a_not = store.begin_action("start", time_=snap.time, job_id="101", nodes=["n1"])
    svc = cluster_factory.make_service(sqlite_engine, cluster)
    assert svc.reconcile() == 2
    with store.sessions() as s:
        got = {a.id: a for a in s.scalars(select(ActionRow))}
    assert got[a_run].state == "done"
    assert got[a_not].state == "failed" and "still pending" in (got[a_not].error or "")
    assert store.pending_actions() == []
    svc.run_now()  # 101 may now be started, 100 is not started again
    with store.sessions() as s:
        n100 = s.scalar(
            select(func.count()).where(ActionRow.job_id == "100", ActionRow.state == "done")
        )
    assert n100 == 1
