"""End to end: ``wattsched serve`` in enforce mode on the simulated Eurora cluster.

The daemon runs as a real subprocess; the tests read its API, its metrics and its SQLite
file, SIGTERM it, kill -9 it mid-run and restart it.
"""

from __future__ import annotations

import signal
from collections import Counter
from pathlib import Path

import httpx2
import pytest
from daemon_proc import TOKEN, run_cli, serve, wait_for, write_config
from sqlalchemy import select

from wattsched.daemon.store import Store
from wattsched.daemon.store_models import ActionRow, JobRow
from wattsched.daemon.store_schema import head_revision, make_engine

pytestmark = pytest.mark.slow


def store_of(root: Path) -> Store:
    return Store(make_engine(f"sqlite:///{root / 'var' / 'w.db'}"))


def test_serve_refuses_an_unmigrated_database(tmp_path: Path) -> None:
    cfg = write_config(tmp_path)
    r = run_cli("serve", "-c", str(cfg))
    assert r.returncode == 2
    assert "wattsched migrate" in r.stderr


def test_enforce_within_the_cap_api_and_metrics(tmp_path: Path) -> None:
    cfg = write_config(tmp_path, cap_w=1500)
    assert run_cli("migrate", "-c", str(cfg)).returncode == 0
    with serve(cfg, tmp_path / "log") as d:
        wait_for(lambda: d.get("/status").json()["cycles"] >= 8, 60, "8 cycles")
        st = d.get("/status").json()
        assert st["mode"] == "enforce" and st["cap_w"] == 1500
        power = d.get("/power", params={"window": 10**7}).json()
        assert max(p["it_power_w"] for p in power) > 1000  # the cap binds...
        assert all(p["it_power_w"] <= 1500 + 1e-6 for p in power)  # ...and holds
        running = d.get("/jobs", params={"state": "running"}).json()
        finished = d.get("/jobs", params={"state": "finished"}).json()
        assert running["total"] + finished["total"] > 0
        metrics = d.get("/metrics").text
        assert 'wattsched_actions_total{kind="start",result="done"}' in metrics
        assert "wattsched_power_cap_watts 1500.0" in metrics
        r = httpx2.post(d.url + "/cycle", headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30)
        assert r.status_code == 200 and r.json()["ok"]
        assert httpx2.post(d.url + "/cycle", timeout=10).status_code == 401
        status = run_cli("status", "--url", d.url)
        assert status.returncode == 0 and "queue_length" in status.stdout
        d.proc.send_signal(signal.SIGTERM)
        assert d.proc.wait(30) == 0
    assert "stopping" in (tmp_path / "log").read_text()
    store = store_of(tmp_path)
    assert store.pending_actions() == []
    with store.sessions() as s:
        by_us = s.scalars(select(JobRow).where(JobRow.started_by == "wattsched")).all()
    assert by_us


def test_kill_9_and_restart_never_starts_a_job_twice(tmp_path: Path) -> None:
    cfg = write_config(tmp_path, cap_w=1500, cycle_s=0.2, speedup=60)
    assert run_cli("migrate", "-c", str(cfg)).returncode == 0
    store = store_of(tmp_path)
    with serve(cfg, tmp_path / "log") as d:
        wait_for(lambda: len(store.done_starts()) >= 30, 60, "30 starts")
        d.proc.send_signal(signal.SIGKILL)  # mid-run: no chance to clean up
        d.proc.wait(10)
    before = {a.id: (a.job_id, a.state) for a in _actions(store)}
    with serve(cfg, tmp_path / "log") as d:
        n0 = d.get("/status").json()["cycles"]
        wait_for(lambda: d.get("/status").json()["cycles"] >= n0 + 10, 60, "10 more cycles")
        d.proc.send_signal(signal.SIGTERM)
        assert d.proc.wait(30) == 0
    after = {a.id: a for a in _actions(store)}
    # No action lost: every action journaled before the kill is still there, with an outcome.
    assert set(before) <= set(after)
    assert all(a.state in ("done", "failed") for a in after.values())
    for aid, (_, state) in before.items():
        if state != "pending":
            assert after[aid].state == state
    # Never twice: one successful start per job.
    done = Counter(a.job_id for a in after.values() if a.kind == "start" and a.state == "done")
    assert done and max(done.values()) == 1
    assert len(done) > 30  # the restarted daemon went on starting jobs
    log = (tmp_path / "log").read_text()
    assert log.count("Application startup complete") == 2
    assert "could not replay" not in log  # the simulated cluster was rebuilt from the journal


def _actions(store: Store) -> list[ActionRow]:
    with store.sessions() as s:
        return list(s.scalars(select(ActionRow).order_by(ActionRow.id)))


@pytest.mark.postgres
def test_serve_on_postgresql(tmp_path: Path, postgres_url: str) -> None:
    """migrate and serve on a real PostgreSQL: the same loop, the same journal."""
    from sqlalchemy import create_engine, text

    admin = create_engine(postgres_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text("CREATE DATABASE wattsched_e2e"))
    admin.dispose()
    url = postgres_url.rsplit("/", 1)[0] + "/wattsched_e2e"
    cfg = write_config(tmp_path, cap_w=1500, database_url=url)
    r = run_cli("migrate", "-c", str(cfg))
    assert r.returncode == 0, r.stderr
    assert f"<empty> -> {head_revision()}" in r.stdout
    with serve(cfg, tmp_path / "log") as d:
        wait_for(lambda: d.get("/status").json()["cycles"] >= 5, 60, "5 cycles")
        assert d.get("/jobs", params={"state": "running"}).json()["total"] > 0
        d.proc.send_signal(signal.SIGTERM)
        assert d.proc.wait(30) == 0
    store = Store(make_engine(url))
    done = Counter(a.job_id for a in store.done_starts())
    assert done and max(done.values()) == 1
    assert store.pending_actions() == []
    store.engine.dispose()
