"""Node temperatures in the daemon: readings over the model, the guard around the dispatcher,
``/nodes`` and the metrics; the ``[thermal]`` table wired from the configuration."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine

from wattsched.connectors.simulated import SimulatedCluster
from wattsched.daemon.api.app import create_app
from wattsched.daemon.config import ConfigError, Settings, load_config
from wattsched.daemon.loop import Service
from wattsched.daemon.store import Store
from wattsched.daemon.store_schema import make_engine, migrate
from wattsched.daemon.thermal_readings import (
    DaemonThermalGuard,
    NodeTemperatures,
    ReadingsError,
    parse_readings,
)
from wattsched.daemon.wiring import build_service
from wattsched.scheduler import dispatcher as registry
from wattsched.scheduler.hybrid.synthetic import eurora_like_jobs, eurora_like_nodes
from wattsched.scheduler.model import PowerCap
from wattsched.scheduler.thermal.model import params_from_toml

THERMAL = "t_sup = 20.0\nt_thresh = 80.0\nr = 0.05\nc = 2000.0\n"
"""Cool enough that the model keeps every node far under the threshold (r P < 30 C)."""


def test_readings_are_parsed_and_bad_lines_named() -> None:
    assert parse_readings("# a comment\nn1 41.5\n\nn2 39 # inline\n", "f") == {
        "n1": 41.5,
        "n2": 39.0,
    }
    with pytest.raises(ReadingsError, match="f: line 2: want 'NODE CELSIUS'"):
        parse_readings("n1 40\nn2\n", "f")
    with pytest.raises(ReadingsError, match="line 1: celsius 'hot' of node 'n1'"):
        parse_readings("n1 hot\n", "f")
    with pytest.raises(ReadingsError, match="celsius '900'"):
        parse_readings("n1 900\n", "f")


def test_a_hot_reading_keeps_jobs_off_its_node_and_shows_in_nodes_and_metrics(
    sqlite_engine: Engine, tmp_path: Path
) -> None:
    nodes = eurora_like_nodes(8)
    hot = nodes[0].name
    readings = tmp_path / "readings"
    readings.write_text(f"{hot} 95.0\n")
    params = params_from_toml(THERMAL, "thermal.toml", [n.name for n in nodes])
    temps = NodeTemperatures(params, readings_file=readings)
    cluster = SimulatedCluster(nodes, eurora_like_jobs(40, seed=3), PowerCap.unlimited())
    svc = Service(
        cluster, DaemonThermalGuard(registry.create("fifo"), temps), Store(sqlite_engine),
        mode="enforce",
    )  # fmt: skip
    used: set[str] = set()
    for _ in range(30):
        assert svc.run_now().ok
        used |= {n for rj in cluster.snapshot().running for n in rj.nodes}
        cluster.advance_to(cluster.now + 600)
    assert used and hot not in used  # jobs ran, never on the node read over its threshold
    by_node = temps.by_node()
    assert by_node[hot] == (95.0, "reading")
    assert all(src == "model" and c < 80.0 for n, (c, src) in by_node.items() if n != hot)

    client = TestClient(create_app(Settings(connector={"kind": "slurm"}), svc))
    shown = {n["name"]: n for n in client.get("/nodes").json()}
    assert shown[hot]["outlet_celsius"] == 95.0 and shown[hot]["outlet_source"] == "reading"
    other = nodes[1].name
    assert shown[other]["outlet_source"] == "model"
    assert shown[other]["outlet_celsius"] == pytest.approx(by_node[other][0])
    metrics = client.get("/metrics").text
    assert f'wattsched_node_outlet_celsius{{node="{hot}"}} 95.0' in metrics
    assert f'wattsched_node_outlet_read{{node="{hot}"}} 1.0' in metrics
    assert f'wattsched_node_outlet_read{{node="{other}"}} 0.0' in metrics

    # A source that fails: the model takes over every node, and the cycle goes on.
    readings.write_text(f"{hot} scorching\n")
    assert svc.run_now().ok
    assert temps.read_errors == 1 and temps.by_node()[hot][1] == "model"


def test_a_readings_command_is_run_without_a_shell(tmp_path: Path) -> None:
    nodes = eurora_like_nodes(2)
    params = params_from_toml(THERMAL, "thermal.toml", [n.name for n in nodes])
    cmd = [sys.executable, "-c", f"print('{nodes[1].name} 61.25')"]
    temps = NodeTemperatures(params, readings_command=cmd)
    cluster = SimulatedCluster(nodes, eurora_like_jobs(2, seed=1), PowerCap.unlimited())
    temps.observe(cluster.snapshot())
    assert temps.by_node()[nodes[1].name] == (61.25, "reading")
    assert temps.by_node()[nodes[0].name][1] == "model"
    failing = NodeTemperatures(params, readings_command=[sys.executable, "-c", "exit(3)"])
    failing.observe(cluster.snapshot())
    assert failing.read_errors == 1


def _config(tmp_path: Path, thermal: str) -> Path:
    data = Path(__file__).resolve().parents[2] / "deploy" / "data"
    (tmp_path / "thermal.toml").write_text(THERMAL)
    cfg = tmp_path / "wattsched.toml"
    cfg.write_text(
        f"""
database_url = "sqlite:///{tmp_path / "w.db"}"
dispatcher = "easy"
[connector]
kind = "simulated"
nodes_file = "{data / "nodes_32"}"
trace_file = "{data / "hist_200_20140331_112449.log_crypt"}"
queues_file = "{data / "system_queues"}"
[thermal]
{thermal}
"""
    )
    return cfg


def test_the_thermal_table_wraps_the_configured_dispatcher(tmp_path: Path) -> None:
    (tmp_path / "readings").write_text("")
    cfg = _config(tmp_path, 'file = "thermal.toml"\nreadings_file = "readings"')
    settings = load_config(cfg)
    migrate(make_engine(settings.database_url))
    svc = build_service(settings)
    assert isinstance(svc.dispatcher, DaemonThermalGuard)
    assert svc.dispatcher.inner.name == "easy"
    assert svc.dispatcher.temps.readings_file == tmp_path / "readings"


def test_bad_thermal_tables_are_refused_naming_the_key(tmp_path: Path) -> None:
    both = 'file = "thermal.toml"\nreadings_file = "r"\nreadings_command = ["cat", "r"]'
    with pytest.raises(ConfigError, match="readings_file or readings_command"):
        load_config(_config(tmp_path, both))
    with pytest.raises(ConfigError, match=r"thermal\.file"):
        load_config(_config(tmp_path, 'readings_file = "r"'))
