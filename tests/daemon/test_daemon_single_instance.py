"""One acting daemon per store, the port bound before the first cycle, readiness, the
monotonic period, and a database file deleted or replaced under the daemon."""

from __future__ import annotations

import socket
import time
from pathlib import Path
from typing import Any

import pytest
from daemon_proc import run_cli, serve, wait_for, write_config
from sqlalchemy import Engine, func, select

from wattsched.daemon.cycle_timer import CycleTimer
from wattsched.daemon.instance_lock import InstanceLockHeld, acquire_instance_lock
from wattsched.daemon.store import make_engine
from wattsched.daemon.store_models import ActionRow, CycleRow


def counts(db: Path) -> tuple[int, int]:
    engine = make_engine(f"sqlite:///{db}")
    with engine.connect() as c:
        out = (
            int(c.scalar(select(func.count()).select_from(CycleRow)) or 0),
            int(c.scalar(select(func.count()).select_from(ActionRow)) or 0),
        )
    engine.dispose()
    return out


@pytest.mark.slow
def test_a_second_daemon_on_the_same_store_refuses_and_does_nothing(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    db = tmp_path / "shared.db"
    cfg_a = write_config(a, database_url=f"sqlite:///{db}", speedup=1)
    cfg_b = write_config(b, database_url=f"sqlite:///{db}", speedup=1)
    assert run_cli("migrate", "-c", str(cfg_a)).returncode == 0
    with serve(cfg_a, a / "log") as d:
        wait_for(lambda: d.get("/status").json()["cycles"] >= 2, 60, "2 cycles")
        before = d.get("/status").json()["cycles"]
        second = run_cli("serve", "-c", str(cfg_b))
        assert second.returncode == 2
        assert "another wattsched" in second.stderr and "pid" in second.stderr
        assert str(db) in second.stderr
        # It ran no cycle: every cycle row is the first daemon's (its count goes on).
        assert d.get("/status").json()["cycles"] >= before


@pytest.mark.slow
def test_a_taken_port_is_refused_before_any_cycle(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        cfg = write_config(tmp_path, port=port)
        assert run_cli("migrate", "-c", str(cfg)).returncode == 0
        r = run_cli("serve", "-c", str(cfg))
    assert r.returncode == 2 and f"127.0.0.1:{port}" in r.stderr
    assert counts(tmp_path / "var" / "w.db") == (0, 0)  # not one cycle, not one action


def test_the_sqlite_lock_is_exclusive_and_dies_with_its_holder(sqlite_engine: Engine) -> None:
    lock = acquire_instance_lock(sqlite_engine)
    with pytest.raises(InstanceLockHeld, match="another wattsched"):
        acquire_instance_lock(sqlite_engine)
    lock.release()
    acquire_instance_lock(sqlite_engine).release()


@pytest.mark.postgres
def test_the_postgres_lock_is_exclusive(postgres_engine: Engine) -> None:
    lock = acquire_instance_lock(postgres_engine)
    other = make_engine(postgres_engine.url.render_as_string(hide_password=False))
    try:
        with pytest.raises(InstanceLockHeld, match="server pid"):
            acquire_instance_lock(other)
        lock.release()
        acquire_instance_lock(other).release()
    finally:
        other.dispose()


def test_the_period_follows_the_monotonic_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[float] = []
    real = time.time
    timer = CycleTimer(lambda: calls.append(time.monotonic()), 0.05)
    timer.start()
    try:
        end = time.monotonic() + 10
        while len(calls) < 3 and time.monotonic() < end:
            time.sleep(0.01)
        # The wall clock steps back an hour: the period goes on regardless.
        monkeypatch.setattr(time, "time", lambda: real() - 3600)
        n = len(calls)
        while len(calls) < n + 3 and time.monotonic() < end:
            time.sleep(0.01)
    finally:
        timer.stop()
    assert len(calls) >= n + 3


def test_readiness(sqlite_engine: Engine, cluster_factory: Any) -> None:
    svc = cluster_factory.make_service(sqlite_engine, cluster_factory.small_cluster())
    mono = [1000.0]
    svc.monotonic = lambda: mono[0]
    assert svc.readiness() == "no successful cycle yet"
    assert svc.run_now().ok
    assert svc.readiness() == ""
    mono[0] += 3.5 * svc.cycle_seconds
    assert "last successful cycle" in svc.readiness()
    assert svc.run_now().ok and svc.readiness() == ""
    svc.failures_in_row = 3
    assert "cycles failed" in svc.readiness()


def test_a_replaced_database_stops_the_cycle(
    tmp_path: Path, sqlite_engine: Engine, cluster_factory: Any
) -> None:
    svc = cluster_factory.make_service(sqlite_engine, cluster_factory.small_cluster())
    assert svc.run_now().ok
    path = svc.store.path
    assert path is not None
    path.rename(tmp_path / "moved.db")  # an operator moves it away...
    path.write_bytes(b"")  # ...and something creates an empty one in its place
    summary = svc.run_now()
    assert not summary.ok and "was replaced" in (summary.error or "")
    assert "was replaced" in svc.readiness()
    path.unlink()
    assert "was deleted" in svc.readiness()


def test_an_empty_store_beside_running_jobs_is_refused(
    sqlite_engine: Engine, cluster_factory: Any
) -> None:
    from wattsched.daemon.service_cli import empty_store_problem

    cluster = cluster_factory.small_cluster()
    svc = cluster_factory.make_service(sqlite_engine, cluster)
    assert empty_store_problem(svc) == ""  # nothing runs: a new store is fine
    cluster.advance_to(50)
    job = cluster.snapshot().queued[0]
    nodes = [n.name for n in cluster.snapshot().nodes][: job.units]
    cluster.start(job.id, nodes)  # started by someone, maybe by the wattsched whose db was lost
    assert "restore it from a backup" in empty_store_problem(svc)
    svc.run_now()  # once the store has a history, it is not empty any more
    assert empty_store_problem(svc) == ""
