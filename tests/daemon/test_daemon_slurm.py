"""End to end against a real Slurm 22.05 cluster (4 nodes on loopback, the connectors'
fixture code): jobs submitted held by ``deploy/slurm/job_submit.lua``, ``wattsched serve`` in
enforce mode places and releases them within the cap; the API reflects it; kill -9 and
restart start no job twice."""

from __future__ import annotations

import os
import signal
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from daemon_proc import REPO, run_cli, serve, wait_for
from daemon_services import free_port
from sqlalchemy import select

from wattsched.daemon.store import Store, make_engine
from wattsched.daemon.store_models import ActionRow, PowerSampleRow

sys.path.insert(0, str(REPO / "tests" / "connectors"))  # the Slurm fixture's harness
from slurm_cluster import SlurmCluster, missing_binaries, start_cluster

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

TOKEN = "slurm-e2e-token-0123456789abcdef"
CAP_W = 300.0  # 4 nodes idle at 50 W = 200 W; a 4-core job adds 40 W: at most 2 at once


@pytest.fixture(scope="module")
def slurm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmCluster]:
    missing = missing_binaries()
    if missing:
        pytest.skip(f"Slurm not installed ({', '.join(missing)})")
    if os.geteuid() != 0:
        pytest.skip("the Slurm fixture needs root")
    root = tmp_path_factory.mktemp("slurm-daemon")
    try:
        cluster = start_cluster(
            root, 4, job_submit_lua=REPO / "deploy" / "slurm" / "job_submit.lua"
        )
    except RuntimeError as exc:
        pytest.skip(f"Slurm cluster did not come up: {exc}")
    yield cluster
    cluster.stop()


def write_config(root: Path, slurm: SlurmCluster) -> Path:
    (root / "token").write_text(TOKEN)
    cfg = root / "wattsched.toml"
    cfg.write_text(
        f"""
mode = "enforce"
cycle_seconds = 1
dispatcher = "prb"
power_cap_w = {CAP_W}
database_url = "sqlite:///{root / "var" / "w.db"}"
[api]
bind = "127.0.0.1:{free_port()}"
token_file = "token"
[connector]
kind = "slurm"
timeout_s = 20
default_walltime_s = 600
[connector.runner]
kind = "local"
[connector.env]
SLURM_CONF = "{slurm.conf}"
PATH = "/usr/bin:/bin:/usr/sbin:/sbin"
[connector.node_power]
idle_w = 50
core_w = 10
transition_w = 50
[connector.job_power]
core_w = 10
"""
    )
    return cfg


def submit(slurm: SlurmCluster, n: int, seconds: int) -> list[str]:
    ids = []
    for _ in range(n):
        out = slurm.run(
            "sbatch", "--parsable", "-N", "1", "-n", "4", "-t", "5", f"--wrap=sleep {seconds}"
        )
        ids.append(out.strip().split(";")[0])
    return ids


def scheduler_pass(slurm: SlurmCluster) -> None:
    """Wait until Slurm's scheduler has run after the jobs already queued: a witness job
    submitted after them and released by root ran to completion (the pass that started it
    would have started any queued job that was not held)."""
    out = slurm.run("sbatch", "--parsable", "-N1", "-n1", "-t1", "-o/dev/null", "--wrap=true")
    wid = out.strip().split(";")[0]
    slurm.run("scontrol", "release", wid)
    wait_for(
        lambda: "JobState=COMPLETED" in slurm.run("scontrol", "show", "job", "-o", wid),
        60,
        f"witness job {wid} to complete",
    )


def test_daemon_places_held_jobs_within_the_cap(slurm: SlurmCluster, tmp_path: Path) -> None:
    cfg = write_config(tmp_path, slurm)
    assert run_cli("migrate", "-c", str(cfg)).returncode == 0
    ids = submit(slurm, 6, 4)
    # Held by job_submit.lua: nothing starts by itself, even once Slurm has scheduled.
    scheduler_pass(slurm)
    states = slurm.run("squeue", "-h", "-o", "%i %T %r").split("\n")
    assert all("PENDING" in s for s in states if s.strip()), states
    store = Store(make_engine(f"sqlite:///{tmp_path / 'var' / 'w.db'}"))
    with serve(cfg, tmp_path / "log") as d:
        max_running = 0

        def all_started() -> bool:
            nonlocal max_running
            running = slurm.run("squeue", "-h", "-t", "RUNNING", "-o", "%i").split()
            max_running = max(max_running, len(running))
            done = {a.job_id for a in store.done_starts()}
            return set(ids) <= done

        wait_for(all_started, 90, "the daemon to start every job")
        assert max_running <= 2  # the cap held in Slurm itself
        job = d.get(f"/jobs/{ids[0]}").json()
        assert job["started_by"] in ("wattsched", None) and job["actions"][0]["kind"] == "start"
        assert "wattsched_actions_total" in d.get("/metrics").text
        d.proc.send_signal(signal.SIGKILL)
        d.proc.wait(10)
    more = submit(slurm, 2, 2)
    with serve(cfg, tmp_path / "log") as d:
        wait_for(lambda: set(more) <= {a.job_id for a in store.done_starts()}, 60, "restart")
        d.proc.send_signal(signal.SIGTERM)
        assert d.proc.wait(30) == 0
    with store.sessions() as s:
        actions = list(s.scalars(select(ActionRow)))
        power = list(s.scalars(select(PowerSampleRow.it_power_w)))
    done = Counter(a.job_id for a in actions if a.kind == "start" and a.state == "done")
    assert set(done) >= set(ids) | set(more)
    assert max(done.values()) == 1  # never twice, across the kill -9
    assert all(a.state in ("done", "failed") for a in actions)
    assert power and max(power) <= CAP_W
