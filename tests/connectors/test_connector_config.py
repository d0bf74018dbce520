"""``connectors/config.py``: the [connector] table and the build_connector factory."""

from __future__ import annotations

from pathlib import Path

import pytest
from replay_runner import ReplayRunner

from wattsched.connectors.config import (
    ConnectorConfigError,
    build_connector,
    build_runner,
    load_connector_config,
    parse_connector_config,
)
from wattsched.connectors.pbs import PBSConnector
from wattsched.connectors.runner import LocalRunner, SSHRunner
from wattsched.connectors.sge import SGEConnector
from wattsched.connectors.simulated import SimulatedCluster
from wattsched.connectors.slurm import SlurmConnector


def test_each_kind_builds_its_connector() -> None:
    fake = ReplayRunner({})
    assert isinstance(build_connector({"kind": "slurm"}, runner=fake), SlurmConnector)
    assert isinstance(build_connector({"kind": "pbs"}, runner=fake), PBSConnector)
    sge = build_connector({"kind": "sge", "sge_queue": "short.q"}, runner=fake)
    assert isinstance(sge, SGEConnector) and sge.queue == "short.q"
    sim = build_connector({"kind": "simulated", "simulated_nodes": 2})
    assert isinstance(sim, SimulatedCluster) and len(sim.snapshot().nodes) == 2


def test_options_reach_the_connector() -> None:
    conn = build_connector(
        {
            "kind": "slurm",
            "partitions": ["batch"],
            "default_walltime_s": 600,
            "node_power": {"idle_w": 50},
            "job_power": {"core_w": 7},
            "trace_file": "ignored.swf",  # the daemon's own keys are ignored here
        },
        runner=ReplayRunner({}),
    )
    assert isinstance(conn, SlurmConnector)
    opts = conn.options
    assert opts.partitions == ("batch",) and opts.default_walltime_s == 600
    assert opts.node_power.idle_w == 50 and opts.job_power.core_w == 7


def test_runners_from_config(tmp_path: Path) -> None:
    local = build_runner(parse_connector_config({"env": {"SLURM_CONF": "/x"}}))
    assert isinstance(local, LocalRunner) and local.env["SLURM_CONF"] == "/x"
    cfg_file = tmp_path / "c.toml"
    cfg_file.write_text(
        '[connector]\nkind = "slurm"\n[connector.runner]\nkind = "ssh"\nhost = "head1"\n'
        'user = "ws"\nkey_file = "id_ed25519"\nknown_hosts = "known_hosts"\n'
    )
    ssh = build_runner(load_connector_config(cfg_file))
    assert isinstance(ssh, SSHRunner) and ssh.host == "head1" and ssh.port == 22
    assert ssh.key_file == tmp_path / "id_ed25519"  # relative to the config file


@pytest.mark.parametrize(
    ("table", "key"),
    [
        ({"kind": "lsf"}, "kind"),  # not a connector we have
        ({"runner": {"kind": "ssh", "host": "h"}}, "runner"),  # ssh without user/key/known_hosts
        ({"default_walltime_s": 0}, "default_walltime_s"),  # must be > 0
        ({"job_power": {"core_w": -1}}, "job_power.core_w"),  # negative watts
        ({"runner": {"kind": "local", "hots": "x"}}, "runner.hots"),  # typo in runner table
    ],
)
def test_bad_tables_name_the_key(table: dict[str, object], key: str) -> None:
    with pytest.raises(ConnectorConfigError) as err:
        parse_connector_config(table)
    assert any(p[0].startswith(key) for p in err.value.problems), err.value.problems


def test_missing_file_and_table(tmp_path: Path) -> None:
    with pytest.raises(ConnectorConfigError):
        load_connector_config(tmp_path / "none.toml")
    f = tmp_path / "x.toml"
    f.write_text("[api]\nbind = '127.0.0.1:1'\n")
    with pytest.raises(ConnectorConfigError):
        load_connector_config(f)
