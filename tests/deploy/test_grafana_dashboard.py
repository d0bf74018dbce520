"""The Grafana dashboard ``deploy/grafana/wattsched.json``: its structure, and every PromQL
expression against a real daemon's ``/metrics`` and a real Prometheus scraping it."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import httpx2
import pytest
from daemon_proc import bind_of, run_cli, serve, write_config
from daemon_services import ServiceUnavailable, prometheus_server
from prometheus_client.parser import text_string_to_metric_families

DASHBOARD = Path(__file__).resolve().parents[2] / "deploy" / "grafana" / "wattsched.json"
DS_UID = "${DS_PROMETHEUS}"
METRIC = re.compile(r"\bwattsched_[a-z_]+")
GRAFANA_VARS = {
    # Grafana's own variables, as Grafana would expand them for a 5-minute range.
    "$__rate_interval": "30s",
    "$__interval": "15s",
    "$__range": "5m",
    # The dashboard's variables, set to "All".
    "$job": ".+",
    "$instance": ".+",
}


def load() -> dict[str, Any]:
    """The dashboard as JSON."""
    data: dict[str, Any] = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    return data


def graph_panels(dash: dict[str, Any]) -> list[dict[str, Any]]:
    """Every panel that queries (rows left out)."""
    return [p for p in dash["panels"] if p["type"] != "row"]


def expressions(dash: dict[str, Any]) -> list[str]:
    """Every PromQL expression of the panels."""
    return [t["expr"] for p in graph_panels(dash) for t in p["targets"]]


def expand(expr: str) -> str:
    """``expr`` with Grafana's variables replaced as Grafana would."""
    for name in sorted(GRAFANA_VARS, key=len, reverse=True):
        expr = expr.replace(name, GRAFANA_VARS[name])
    assert "$" not in expr, expr
    return expr


def test_dashboard_structure() -> None:
    dash = load()
    assert dash["schemaVersion"] >= 36
    assert dash["uid"] == "wattsched" and dash["title"]
    assert [i["name"] for i in dash["__inputs"]] == ["DS_PROMETHEUS"]
    assert dash["__inputs"][0]["pluginId"] == "prometheus"
    ids = [p["id"] for p in dash["panels"]]
    assert len(ids) == len(set(ids)), "panel ids must be unique"
    cells: set[tuple[int, int]] = set()
    for p in dash["panels"]:
        g = p["gridPos"]
        assert g["x"] >= 0 and g["w"] > 0 and g["x"] + g["w"] <= 24, p["title"]
        xs, ys = range(g["x"], g["x"] + g["w"]), range(g["y"], g["y"] + g["h"])
        own = {(x, y) for x in xs for y in ys}
        assert not own & cells, f"panel {p['title']!r} overlaps another"
        cells |= own
    for p in graph_panels(dash):
        assert p["type"] in ("timeseries", "stat"), p["title"]
        assert p["datasource"]["uid"] == DS_UID, p["title"]
        assert p["targets"], p["title"]
        refs = [t["refId"] for t in p["targets"]]
        assert len(refs) == len(set(refs)), p["title"]
        for t in p["targets"]:
            assert t["datasource"]["uid"] == DS_UID, p["title"]
            assert METRIC.search(t["expr"]), (p["title"], t["expr"])
    for var in dash["templating"]["list"]:
        assert var["datasource"]["uid"] == DS_UID
    # What the operators asked for (issue 14): one panel at least on each.
    exprs = "\n".join(expressions(dash))
    for needed in (
        "wattsched_power_estimate_watts",
        "wattsched_power_cap_watts",
        "wattsched_nodes",
        "wattsched_jobs",
        "histogram_quantile(0.9, sum by (le) (rate(wattsched_cycle_duration_seconds_bucket",
        "wattsched_actions_total",
        "wattsched_energy_saved_joules_total",
        "wattsched_errors_total",
        "wattsched_planned_mean_wait_seconds",
    ):
        assert needed in exprs, needed


def exported_series(metrics_text: str) -> set[str]:
    """The series names a /metrics text declares (a counter or histogram with no sample yet
    still declares its family: its series are named from the type)."""
    names: set[str] = set()
    for fam in text_string_to_metric_families(metrics_text):
        names.update(s.name for s in fam.samples)
        if fam.type == "counter":
            names.add(fam.name + "_total")
        elif fam.type == "histogram":
            names.update(fam.name + s for s in ("_bucket", "_sum", "_count"))
        else:
            names.add(fam.name)
    return names


# Series that a healthy daemon may not have yet: no error, no failed action, no planned job
# (the mean planned wait is absent when the plan places nobody). Their panels may be empty.
MAY_BE_EMPTY = (
    "wattsched_errors_total",
    'result=~"failed|reconciled_failed"',
    "wattsched_planned_mean_wait_seconds",
)


@pytest.mark.prometheus
@pytest.mark.slow
def test_every_expression_names_exported_series_and_runs_on_real_prometheus(
    tmp_path: Path,
) -> None:
    exprs = [expand(e) for e in expressions(load())]
    cfg = write_config(tmp_path, cap_w=1500, cycle_s=0.5)
    assert run_cli("migrate", "-c", str(cfg)).returncode == 0
    with serve(cfg, tmp_path / "log") as daemon:
        exported = exported_series(daemon.get("/metrics").text)
        used = {m for e in exprs for m in METRIC.findall(e)}
        assert used <= exported, f"not exported by the daemon: {sorted(used - exported)}"
        try:
            prom_cm = prometheus_server(bind_of(cfg))
            prom = prom_cm.__enter__()
        except ServiceUnavailable as exc:
            pytest.skip(f"Prometheus unavailable: {exc}")
        try:
            answers = query_when_scraped(prom, exprs)
        finally:
            prom_cm.__exit__(None, None, None)
    for expr, body in answers.items():
        assert body["status"] == "success", (expr, body)
    empty = [e for e, b in answers.items() if not b["data"]["result"]]
    assert all(any(m in e for m in MAY_BE_EMPTY) for e in empty), f"no series for {empty}"


def query_when_scraped(prom: str, exprs: list[str]) -> dict[str, dict[str, Any]]:
    """Each expression's answer from Prometheus's query API, once at least four scrapes are in
    (a rate needs two samples in its window)."""
    end = time.monotonic() + 60
    while time.monotonic() < end:
        q = httpx2.get(
            f"{prom}/api/v1/query",
            params={"query": "count_over_time(wattsched_build_info[1m])"},
            timeout=5,
        ).json()
        result = q.get("data", {}).get("result", [])
        if result and float(result[0]["value"][1]) >= 4:
            break
        time.sleep(0.5)
    else:
        raise AssertionError("Prometheus did not scrape the daemon four times in 60 s")
    return {
        e: httpx2.get(f"{prom}/api/v1/query", params={"query": e}, timeout=5).json() for e in exprs
    }
