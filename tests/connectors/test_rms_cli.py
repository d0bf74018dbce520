"""``wattsched rms ...`` end to end: the real CLI against the real Slurm test cluster."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from harnesses import SGEHarness, SlurmHarness
from typer.testing import CliRunner

from wattsched.daemon.cli import app
from wattsched.scheduler.model import PowerState


def _config(tmp_path: Path, body: str) -> Path:
    p = tmp_path / "rms.toml"
    p.write_text(body)
    return p


def test_simulated_snapshot_and_bad_config(tmp_path: Path) -> None:
    cfg = _config(tmp_path, '[connector]\nkind = "simulated"\nsimulated_nodes = 3\n')
    res = CliRunner().invoke(app, ["rms", "snapshot", "-c", str(cfg)])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert [n["name"] for n in data["nodes"]] == ["n1", "n2", "n3"]
    res = CliRunner().invoke(app, ["rms", "snapshot", "-c", str(cfg), "--table"])
    assert res.exit_code == 0 and "n3" in res.stdout
    bad = _config(tmp_path, '[connector]\nkind = "lsf"\n')
    res = CliRunner().invoke(app, ["rms", "snapshot", "-c", str(bad)])
    assert res.exit_code == 2 and "kind" in res.output
    ssh_missing = _config(
        tmp_path, '[connector]\nkind = "slurm"\n[connector.runner]\nkind = "ssh"\n'
    )
    res = CliRunner().invoke(app, ["rms", "snapshot", "-c", str(ssh_missing)])
    assert res.exit_code == 2 and "host" in res.output


@pytest.mark.slurm
def test_rms_commands_against_real_slurm(slurm: SlurmHarness, tmp_path: Path) -> None:
    cfg = _config(
        tmp_path,
        f'[connector]\nkind = "slurm"\n[connector.env]\nSLURM_CONF = "{slurm.cluster.conf}"\n'
        "[connector.job_power]\ncore_w = 20\n",
    )
    jid = slurm.submit(2)
    cli = CliRunner()
    res = cli.invoke(app, ["rms", "snapshot", "-c", str(cfg)])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    job = next(j for j in data["queued"] if j["id"] == jid)
    assert job["units"] == 2 and job["held"] is False and job["unit_power_w"] == 20
    res = cli.invoke(app, ["rms", "start", jid, "--nodes", "n3,n4", "-c", str(cfg)])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout) == {"action": "start", "job": jid, "nodes": ["n3", "n4"]}
    assert sorted(slurm.ran_on(jid) or ()) == ["n3", "n4"]
    res = cli.invoke(app, ["rms", "start", jid, "--nodes", "n1", "-c", str(cfg)])
    assert res.exit_code == 1 and "UnknownJobError" in res.output
    jid2 = slurm.submit(1, user_hold=True)
    res = cli.invoke(app, ["rms", "snapshot", "-c", str(cfg), "--table"])
    assert res.exit_code == 0 and jid2 in res.stdout
    for verb in ("release", "hold"):
        res = cli.invoke(app, ["rms", verb, jid2, "-c", str(cfg)])
        assert res.exit_code == 0, res.output
    res = cli.invoke(app, ["rms", "hold", "424242", "-c", str(cfg)])
    assert res.exit_code == 1
    res = cli.invoke(app, ["rms", "power", "n1", "off", "-c", str(cfg)])
    assert res.exit_code == 0, res.output
    deadline = time.monotonic() + 30
    while slurm.node_power("n1") is not PowerState.OFF and time.monotonic() < deadline:
        time.sleep(0.25)
    assert slurm.node_power("n1") is PowerState.OFF
    res = cli.invoke(app, ["rms", "power", "n1", "on", "-c", str(cfg)])
    assert res.exit_code == 0, res.output
    deadline = time.monotonic() + 30
    while slurm.node_power("n1") is not PowerState.ON and time.monotonic() < deadline:
        time.sleep(0.25)
    assert slurm.node_power("n1") is PowerState.ON
    res = cli.invoke(app, ["rms", "power", "nX9", "on", "-c", str(cfg)])
    assert res.exit_code == 1 and "UnknownNodeError" in res.output


@pytest.mark.sge
def test_rms_commands_against_real_grid_engine(sge: SGEHarness, tmp_path: Path) -> None:
    env = "\n".join(f'{k} = "{v}"' for k, v in sge.cluster.env.items())
    cfg = _config(tmp_path, f'[connector]\nkind = "sge"\n[connector.env]\n{env}\n')
    jid = sge.submit(1)
    cli = CliRunner()
    res = cli.invoke(app, ["rms", "snapshot", "-c", str(cfg)])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert [n["name"] for n in data["nodes"]] == ["localhost"]
    assert [j["id"] for j in data["queued"]] == [jid]
    res = cli.invoke(app, ["rms", "start", jid, "--nodes", "localhost", "-c", str(cfg)])
    assert res.exit_code == 0, res.output
    assert sge.ran_on(jid) == ("localhost",)
    res = cli.invoke(app, ["rms", "power", "localhost", "off", "-c", str(cfg)])
    assert res.exit_code == 1 and "UnsupportedOperation" in res.output
