"""``wattsched simulate`` end to end on the shared traces: outputs, metrics, plot."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from wattsched.daemon.cli import app

REPO = Path(__file__).resolve().parents[2]
EURORA_50 = "eurora/historical_traces/50/hist_50_20140331_112453.log_crypt"


def run(args: list[str]) -> None:
    result = CliRunner().invoke(app, ["simulate", "--no-progress", *args])
    assert result.exit_code == 0, result.output + repr(result.exception)


def outputs(tmp: Path) -> list[str]:
    return [
        "--metrics-out", str(tmp / "m.json"),
        "--schedule-out", str(tmp / "s.csv"),
        "--power-out", str(tmp / "p.csv"),
        "--plot", str(tmp / "p.png"),
    ]  # fmt: skip


def check_outputs(tmp: Path, jobs: int) -> dict:
    m = json.loads((tmp / "m.json").read_text())
    for key in (
        "makespan_s", "mean_wait_s", "mean_weighted_wait", "mean_bounded_slowdown", "qos_p90",
        "energy_it_kwh", "peak_power_w", "cap_violation_s", "plan_seconds_mean",
        "plan_seconds_p99", "wall_seconds", "jobs", "skipped_jobs", "node_power_models",
    ):  # fmt: skip
        assert key in m, key
    assert m["jobs"] == jobs
    assert m["cap_violation_s"] == 0
    rows = list(csv.DictReader((tmp / "s.csv").open()))
    assert len(rows) == jobs
    assert list(rows[0]) == ["job_id", "submit", "start", "end", "units", "power_w"]
    for r in rows:
        assert int(r["start"]) >= int(r["submit"]) or m["offline"]
        node, cores, gpus, mics, mem = r["units"].split(";")[0].split(":")
        assert node and min(int(cores), int(gpus), int(mics), int(mem)) >= 0
    power = list(csv.DictReader((tmp / "p.csv").open()))
    assert list(power[0]) == ["time", "it_power_w", "cap_w", "nodes_on", "queued", "running"]
    assert (tmp / "p.png").read_bytes()[:4] == b"\x89PNG"
    return m


@pytest.mark.parametrize("dispatcher", ["fifo", "easy", "prb"])
def test_simulate_eurora_with_cap_profile(
    shared_data: Path, tmp_path: Path, dispatcher: str
) -> None:
    e = shared_data / "eurora"
    run([
        "--trace", str(shared_data / EURORA_50), "--format", "eurora",
        "--system", str(e / "system_configs" / "nodes_#8"),
        "--queues", str(e / "system_configs" / "system_queues"),
        "--job-power", str(e / "eurora_power_predictions" / "power_predictions"),
        "--power-cap-file", str(e / "variable_power_caps" / "power_caps_few_jobs_less_hard"),
        "--dispatcher", dispatcher, "--offline", *outputs(tmp_path),
    ])  # fmt: skip
    m = check_outputs(tmp_path, 50)
    assert m["peak_power_w"] <= 700 + 1e-6  # the profile's only step: 700 W


def test_simulate_swf_kth_excerpt(shared_data: Path, tmp_path: Path) -> None:
    run([
        "--trace", str(shared_data / "swf" / "KTH-SP2-1996.swf"),
        "--system", str(REPO / "deploy" / "systems" / "kth-sp2.toml"),
        "--dispatcher", "easy", "--limit-jobs", "500", "--power-cap", "19500",
        *outputs(tmp_path),
    ])  # fmt: skip
    m = check_outputs(tmp_path, 500)
    assert m["peak_power_w"] <= 19500
    assert m["unfinished_jobs"] == 0


def test_simulate_rejects_bad_input(tmp_path: Path) -> None:
    bad = tmp_path / "bad.swf"
    bad.write_text("1 0 0 10 4 -1 -1 4 100 -1 1 1 1 -1 -1 -1 -1 -1\n2 x 0 10 4\n")
    result = CliRunner().invoke(
        app,
        ["simulate", "--no-progress", "--trace", str(bad), "--nodes", "4", "--cores", "4",
         "--dispatcher", "fifo", *outputs(tmp_path)],
    )  # fmt: skip
    assert result.exit_code == 2
    assert "bad.swf:2" in result.output
