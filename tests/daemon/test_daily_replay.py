"""The profit paper's daily replay end to end: the CLI on a real SWF trace, and the profit
counted over the horizon (work past it earns nothing)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from wattsched.connectors.traces.cooling_files import builtin_pue_table
from wattsched.daemon.cli import app
from wattsched.daemon.daily_replay import DailyOptions, run_daily
from wattsched.scheduler.cooling import WINTER_DAY, CoolingModel
from wattsched.scheduler.model import Job, Node, Resources
from wattsched.scheduler.profit import Prices

SWF = Path(__file__).resolve().parents[3] / "shared" / "data" / "swf"


def test_work_past_the_horizon_earns_nothing() -> None:
    nodes = [Node("n1", Resources(cores=1))]
    # Two 20 h one-core jobs on the only core: the second ends on day 2.
    jobs = [Job(f"j{i}", 0, 72_000, 1, Resources(cores=1), runtime=72_000, unit_power_w=100)
            for i in range(2)]  # fmt: skip
    cooling = CoolingModel(WINTER_DAY, builtin_pue_table("air"))
    prices = Prices(core_hour=1.0, energy_kwh=0.0)
    _, _, m = run_daily(nodes, jobs, DailyOptions("rules-est", horizon_days=1), cooling, prices)
    assert m["horizon_days"] == 1
    assert m["revenue"] == pytest.approx(24.0)  # one core-day inside the horizon
    assert m["profit_whole_run"] == pytest.approx(40.0)  # both jobs, all their hours


def test_simulate_daily_on_a_real_trace(tmp_path: Path) -> None:
    trace = SWF / "KTH-SP2-1996.swf"
    if not trace.exists():
        pytest.skip(f"shared data not found at {trace}")
    out = tmp_path / "m.json"
    result = CliRunner().invoke(app, [
        "simulate-daily", "--trace", str(trace), "--nodes", "100", "--cores", "1",
        "--core-watts", "7.8:11.11", "--scheduler", "multisearch", "--workers", "1",
        "--limit-jobs", "300", "--metrics-out", str(out), "--no-progress",
    ])  # fmt: skip
    assert result.exit_code == 0, result.output
    m = json.loads(out.read_text())
    assert (
        m["jobs"] == 300 and m["profit"] > 0 and 1.0 < m["mean_pue"] < 2.0
    )  # a 1 kW machine: far below the table's 50 kW reference load


def _kth(tmp_path: Path) -> Path:
    trace = SWF / "KTH-SP2-1996.swf"
    if not trace.exists():
        pytest.skip(f"shared data not found at {trace}")
    return trace


def test_simulate_dispatcher_aliases_run_the_daily_replay(tmp_path: Path) -> None:
    trace = _kth(tmp_path)
    common = ["--trace", str(trace), "--nodes", "100", "--cores", "1", "--core-watts",
              "7.8:11.11", "--limit-jobs", "200", "--no-progress"]  # fmt: skip
    out = {}
    for name, argv in {
        "daily": ["simulate-daily", "--scheduler", "rules-wt", "--strict", "--cooling", "hybrid",
                  "--season", "winter"],
        "alias": ["simulate", "--dispatcher", "rules-wt", "--strict", "--cooling", "hybrid",
                  "--season", "winter", "--schedule-out", str(tmp_path / "s.csv")],
    }.items():  # fmt: skip
        path = tmp_path / f"{name}.json"
        result = CliRunner().invoke(app, [*argv, *common, "--metrics-out", str(path)])
        assert result.exit_code == 0, result.output
        out[name] = json.loads(path.read_text())
    assert out["alias"]["strict"] is True and out["alias"]["cooling"] == "hybrid"
    assert out["alias"]["profit"] == out["daily"]["profit"]
    refused = CliRunner().invoke(app, [
        "simulate", "--dispatcher", "multisearch", "--power-cap", "5000", *common,
        "--metrics-out", str(tmp_path / "x.json"), "--schedule-out", str(tmp_path / "x.csv"),
    ])  # fmt: skip
    assert refused.exit_code != 0 and "--power-cap" in refused.output


def test_relaxsearch_and_delaysearch_days_never_below_multisearch(tmp_path: Path) -> None:
    trace = _kth(tmp_path)
    for name in ("delaysearch", "relaxsearch"):
        out = tmp_path / f"{name}.json"
        result = CliRunner().invoke(app, [
            "simulate-daily", "--trace", str(trace), "--nodes", "20", "--cores", "2",
            "--core-watts", "7.8:11.11", "--scheduler", name, "--workers", "1",
            "--limit-jobs", "150", "--days", "2", "--delay-time-s", "1", "--relax-time-s", "2",
            "--metrics-out", str(out), "--no-progress",
        ])  # fmt: skip
        assert result.exit_code == 0, result.output
        m = json.loads(out.read_text())
        assert m["days"] == 2 and m["max_days"] == 2 and len(m["per_day"]) == 2
        for day in m["per_day"]:
            assert day["profit"] >= day["multisearch_profit"]


@pytest.mark.parametrize(
    ("option", "name", "text", "where"),
    [
        ("--temperature", "t.csv", "00:00,2\n06:00,warm\n", "t.csv:2: field 'celsius' = 'warm'"),
        ("--prices", "p.toml", "energy_kwh = -0.1\n", "p.toml: field 'energy_kwh' = -0.1"),
        ("--pue-table", "pue.csv", "it_kw,0,10\n1,1.1,1.2\n2,1.1,\n", "pue.csv:3: field 'row'"),
    ],
)
def test_simulate_daily_refuses_bad_files_by_file_line_field_value(
    tmp_path: Path, option: str, name: str, text: str, where: str
) -> None:
    trace = _kth(tmp_path)
    bad = tmp_path / name
    bad.write_text(text)
    result = CliRunner().invoke(app, [
        "simulate-daily", "--trace", str(trace), "--nodes", "10", "--cores", "1",
        "--scheduler", "rules-est", "--limit-jobs", "10", option, str(bad),
        "--metrics-out", str(tmp_path / "m.json"), "--no-progress",
    ])  # fmt: skip
    assert result.exit_code != 0
    assert where in " ".join(result.output.split())
