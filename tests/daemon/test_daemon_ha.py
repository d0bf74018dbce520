"""High availability on a real PostgreSQL: two ``wattsched serve --standby`` on one store; one
leads, the other serves read-only and takes over when the leader is killed (kill -9, mid-cycle);
across failovers no job is started twice and no action is left pending."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from daemon_proc import REPO, TOKEN, WATTSCHED, Daemon, bind_of, run_cli, wait_for, write_config
from sqlalchemy import create_engine, func, select, text

from wattsched.daemon.store_models import ActionRow
from wattsched.daemon.store_schema import make_engine

pytestmark = [pytest.mark.postgres, pytest.mark.slow]
FAILOVERS = int(os.environ.get("WATTSCHED_HA_FAILOVERS", "10"))
"""Failovers in the suite (the recorded run: 20, bench/results/ha_failover.md)."""


@contextlib.contextmanager
def standby_daemon(cfg: Path, log: Path) -> Iterator[Daemon]:
    out = log.open("ab")
    proc = subprocess.Popen(
        [*WATTSCHED, "serve", "--standby", "-c", str(cfg), "--log-level", "info"],
        stdout=out, stderr=subprocess.STDOUT, cwd=REPO,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    d = Daemon(proc, f"http://{bind_of(cfg)}", log)
    try:
        wait_for(lambda: _up(d), 60, f"{cfg} to answer")
        yield d
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            proc.wait(10)
        out.close()


def _up(d: Daemon) -> bool:
    if d.proc.poll() is not None:
        raise RuntimeError(f"serve exited {d.proc.returncode}: {d.log.read_text()[-2000:]}")
    try:
        return d.get("/health").status_code == 200
    except httpx2.HTTPError:
        return False


def role(d: Daemon) -> str:
    try:
        return str(d.get("/status").json()["role"])
    except (httpx2.HTTPError, KeyError, ValueError):
        return "down"


@pytest.fixture
def ha_db(postgres_url: str) -> Iterator[str]:
    name = f"wattsched_ha_{os.getpid()}"
    admin = create_engine(postgres_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as c:
        c.execute(text(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
        c.execute(text(f"CREATE DATABASE {name}"))
    url = postgres_url.rsplit("/", 1)[0] + "/" + name
    yield url
    with admin.connect() as c:
        c.execute(text(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
    admin.dispose()


def test_the_standby_takes_over_and_no_job_starts_twice(tmp_path: Path, ha_db: str) -> None:
    roots = [tmp_path / "a", tmp_path / "b"]
    cfgs = []
    for r in roots:
        r.mkdir()
        cfgs.append(write_config(r, database_url=ha_db, cycle_s=0.3, speedup=200))
    assert run_cli("migrate", "-c", str(cfgs[0])).returncode == 0
    logs = [r / "log" for r in roots]
    stacks = [contextlib.ExitStack(), contextlib.ExitStack()]
    daemons: list[Daemon | None] = [None, None]
    try:
        daemons[0] = stacks[0].enter_context(standby_daemon(cfgs[0], logs[0]))
        wait_for(lambda: role(daemons[0]) == "leader", 30, "the first daemon to lead")  # type: ignore[arg-type]
        daemons[1] = stacks[1].enter_context(standby_daemon(cfgs[1], logs[1]))
        b = daemons[1]
        assert role(b) == "standby"
        assert b.get("/ready").status_code == 503 and "standby" in b.get("/ready").text
        r = httpx2.put(b.url + "/config/mode", json={"mode": "advise"},
                      headers={"Authorization": f"Bearer {TOKEN}"}, timeout=10)  # fmt: skip
        assert r.status_code == 503 and "standby" in r.text
        takeovers = []
        leader = 0
        for _ in range(FAILOVERS):
            time.sleep(0.45)  # a cycle or so, then mid-cycle (the period is 0.3 s)
            stacks[leader].close()  # kill -9
            standby = daemons[1 - leader]
            assert standby is not None
            t0 = time.monotonic()
            wait_for(lambda s=standby: role(s) == "leader", 30, "the standby to take over")
            takeovers.append(time.monotonic() - t0)
            other = 1 - leader
            stacks[leader] = contextlib.ExitStack()
            daemons[leader] = stacks[leader].enter_context(
                standby_daemon(cfgs[leader], logs[leader])
            )
            assert role(daemons[leader]) == "standby"  # type: ignore[arg-type]
            leader = other
        print(f"takeover seconds: {takeovers}")
        cur = daemons[leader]
        assert cur is not None
        n = cur.get("/status").json()["cycles"]
        wait_for(lambda: cur.get("/status").json()["cycles"] >= n + 3, 30, "cycles after the last")
        # While the last leader runs: what the killed ones left pending is settled (only the
        # running cycle's own actions may be pending, and only for a moment).
        engine = make_engine(ha_db)
        with engine.connect() as c:
            per_job = c.execute(
                select(ActionRow.job_id, ActionRow.incarnation, func.count())
                .where(ActionRow.kind == "start", ActionRow.state == "done")
                .group_by(ActionRow.job_id, ActionRow.incarnation)
            ).all()
            stale = c.scalar(
                select(func.count())
                .select_from(ActionRow)
                .where(ActionRow.state == "pending", ActionRow.created_at < time.time() - 2)
            )
        engine.dispose()
    finally:
        for st in stacks:
            st.close()
    assert per_job, "the daemons started jobs"
    assert all(count == 1 for _, _, count in per_job), "a job started twice across failovers"
    assert stale == 0, "an action was left pending"
    # Each takeover within a few periods (0.3 s) of the leader's death.
    assert max(takeovers) < 10, takeovers
