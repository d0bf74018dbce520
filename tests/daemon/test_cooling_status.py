"""PUE, cooling power and profit rate of the running cluster in /status and the metrics."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine

from wattsched.connectors.simulated import SimulatedCluster
from wattsched.daemon.api.app import create_app
from wattsched.daemon.config import ConfigError, Settings, load_config
from wattsched.daemon.cooling_report import build_reporter
from wattsched.daemon.loop import Service
from wattsched.daemon.store import Store
from wattsched.scheduler import dispatcher as registry
from wattsched.scheduler.hybrid.synthetic import eurora_like_jobs, eurora_like_nodes
from wattsched.scheduler.model import PowerCap


def test_status_and_metrics_show_pue_cooling_and_profit(sqlite_engine: Engine) -> None:
    cluster = SimulatedCluster(
        eurora_like_nodes(8), eurora_like_jobs(20, seed=1), PowerCap.unlimited()
    )
    summer = build_reporter("air", "summer", None, None)
    winter = build_reporter("air", "winter", None, None)
    assert summer is not None and winter is not None
    svc = Service(
        cluster, registry.create("prb"), Store(sqlite_engine), mode="enforce", cooling=summer
    )
    svc.run_now()
    cluster.advance_to(cluster.now + 60)
    last = svc.run_now()
    assert last.ok and last.pue is not None and last.power_w is not None
    assert 1.0 <= last.pue <= 5.0
    assert last.cooling_w == pytest.approx(last.power_w * (last.pue - 1.0))
    # Running jobs earn: the profit rate is revenue less the energy bill.
    now = summer.now(cluster.snapshot(), last.power_w)
    assert now.revenue_per_h > 0 and now.profit_per_h == pytest.approx(
        now.revenue_per_h - now.energy_cost_per_h
    )
    # Winter air is colder: a PUE no higher at the same IT power and time.
    assert winter.now(cluster.snapshot(), last.power_w).pue <= now.pue
    with TestClient(create_app(Settings(connector={"kind": "slurm"}), svc)) as c:
        st = c.get("/status").json()
        metrics = c.get("/metrics").text
    assert st["pue"] == pytest.approx(last.pue) and st["cooling_w"] == pytest.approx(last.cooling_w)
    assert st["profit_per_h"] is not None and st["celsius"] is not None
    names = (
        "wattsched_pue_ratio",
        "wattsched_cooling_power_estimate_watts",
        "wattsched_profit_rate_per_hour",
        "wattsched_outside_temperature_celsius",
    )
    for name in names:
        assert f"\n{name} " in metrics


def test_no_cooling_table_no_cooling_figures(sqlite_engine: Engine) -> None:
    cluster = SimulatedCluster(eurora_like_nodes(2), [], PowerCap.unlimited())
    svc = Service(cluster, registry.create("prb"), Store(sqlite_engine))
    assert svc.run_now().pue is None


def test_a_bad_cooling_table_is_refused(tmp_path: Path) -> None:
    cfg = tmp_path / "w.toml"
    cfg.write_text('[connector]\nkind = "slurm"\n[cooling]\nkind = "water"\n')
    with pytest.raises(ConfigError, match="cooling"):
        load_config(cfg)
