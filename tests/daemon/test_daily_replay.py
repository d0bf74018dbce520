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
