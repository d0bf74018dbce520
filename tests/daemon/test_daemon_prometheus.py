"""A real Prometheus (Debian ``prometheus``) scrapes the daemon's /metrics."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest
from daemon_proc import bind_of, run_cli, serve, write_config
from daemon_services import ServiceUnavailable, prometheus_server

pytestmark = [pytest.mark.prometheus, pytest.mark.slow]


def test_prometheus_scrapes_wattsched_series(tmp_path: Path) -> None:
    cfg = write_config(tmp_path, cap_w=1500, cycle_s=0.5)
    assert run_cli("migrate", "-c", str(cfg)).returncode == 0
    with serve(cfg, tmp_path / "log"):
        try:
            prom_cm = prometheus_server(bind_of(cfg))
            prom = prom_cm.__enter__()
        except ServiceUnavailable as exc:
            pytest.skip(f"Prometheus unavailable: {exc}")
        try:
            names: list[str] = []
            cap: list[dict[str, object]] = []
            end = time.monotonic() + 60
            while time.monotonic() < end:
                r = httpx.get(f"{prom}/api/v1/label/__name__/values", timeout=5)
                names = [n for n in r.json().get("data", []) if n.startswith("wattsched_")]
                q = httpx.get(
                    f"{prom}/api/v1/query", params={"query": "wattsched_power_cap_watts"}, timeout=5
                )
                cap = q.json()["data"]["result"]
                if cap and "wattsched_actions_total" in names:
                    break
                time.sleep(0.5)
            targets = httpx.get(f"{prom}/api/v1/targets", timeout=5).json()
            health = [t["health"] for t in targets["data"]["activeTargets"]]
        finally:
            prom_cm.__exit__(None, None, None)
    assert health == ["up"]
    assert float(cap[0]["value"][1]) == 1500.0  # type: ignore[index]
    for name in (
        "wattsched_power_estimate_watts",
        "wattsched_nodes",
        "wattsched_jobs",
        "wattsched_cycle_duration_seconds_bucket",
        "wattsched_actions_total",
        "wattsched_energy_joules_total",
        "wattsched_solver_status",
    ):
        assert name in names, name
