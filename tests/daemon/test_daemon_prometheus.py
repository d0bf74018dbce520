"""A real Prometheus (Debian ``prometheus``) scrapes the daemon's /metrics."""

from __future__ import annotations

import re
import shutil
import subprocess
import time
from pathlib import Path

import httpx2
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
                r = httpx2.get(f"{prom}/api/v1/label/__name__/values", timeout=5)
                names = [n for n in r.json().get("data", []) if n.startswith("wattsched_")]
                q = httpx2.get(
                    f"{prom}/api/v1/query", params={"query": "wattsched_power_cap_watts"}, timeout=5
                )
                cap = q.json()["data"]["result"]
                if cap and "wattsched_actions_total" in names:
                    break
                time.sleep(0.5)
            targets = httpx2.get(f"{prom}/api/v1/targets", timeout=5).json()
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


RULES = Path(__file__).resolve().parents[2] / "deploy" / "prometheus" / "alerts.yml"


def test_the_alert_rules_load_and_evaluate_on_real_scrapes(tmp_path: Path) -> None:
    promtool = shutil.which("promtool")
    if promtool is not None:
        check = subprocess.run([promtool, "check", "rules", str(RULES)], capture_output=True)
        assert check.returncode == 0, check.stdout + check.stderr
    cfg = write_config(tmp_path, cap_w=1500, cycle_s=0.5)
    assert run_cli("migrate", "-c", str(cfg)).returncode == 0
    with serve(cfg, tmp_path / "log"):
        try:
            prom_cm = prometheus_server(bind_of(cfg), rules=RULES)
            prom = prom_cm.__enter__()
        except ServiceUnavailable as exc:
            pytest.skip(f"Prometheus unavailable: {exc}")
        try:
            rules: list[dict[str, object]] = []
            scraped: list[str] = []
            end = time.monotonic() + 60
            while time.monotonic() < end:
                groups = httpx2.get(f"{prom}/api/v1/rules", timeout=5).json()["data"]["groups"]
                rules = [r for g in groups for r in g["rules"]]
                if rules and all(r.get("lastEvaluation", "").startswith("20") for r in rules):
                    names = httpx2.get(f"{prom}/api/v1/label/__name__/values", timeout=5)
                    scraped = names.json()["data"]
                    if "wattsched_actions_total" in scraped:
                        break
                time.sleep(0.5)
        finally:
            prom_cm.__exit__(None, None, None)
    assert len(rules) == 6
    # Every series the rules read is one the daemon really exports (a typo would evaluate
    # to nothing, silently).
    used = set(re.findall(r"wattsched_[a-z_]+", RULES.read_text()))
    assert used and used <= set(scraped), used - set(scraped)
    for r in rules:
        assert r["health"] == "ok", (r["name"], r.get("lastError"))
    # A healthy daemon fires nothing: every expression is evaluated against the real series.
    assert all(r["state"] == "inactive" for r in rules), [(r["name"], r["state"]) for r in rules]
