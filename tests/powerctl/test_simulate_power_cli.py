"""``wattsched simulate --power-policy``: the metrics of a replay with node power switching."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from wattsched.daemon.cli import app


def write_swf(path: Path) -> None:
    """30 jobs in three bursts 20,000 s apart, 1-4 procs, 300-1,500 s runtimes."""
    lines = []
    t = 0
    for k in range(30):
        t += 100 if k % 10 else 20_000
        procs = 1 + k % 4
        run = 300 + (k * 97) % 1200
        fields = [k + 1, t, 0, run, procs, -1, -1, procs, 2 * run, -1, 1, 1, 1, -1, 1, 1, -1, -1]
        lines.append(" ".join(str(f) for f in fields))
    path.write_text("\n".join(lines) + "\n")


def simulate(tmp: Path, *extra: str) -> dict:
    trace = tmp / "t.swf"
    write_swf(trace)
    args = [
        "simulate", "--no-progress", "--trace", str(trace), "--nodes", "4", "--cores", "4",
        "--dispatcher", "easy", "--metrics-out", str(tmp / "m.json"),
        "--schedule-out", str(tmp / "s.csv"), *extra,
    ]  # fmt: skip
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output + repr(result.exception)
    return json.loads((tmp / "m.json").read_text())


@pytest.mark.parametrize("policy", ["idle", "hgfs"])
def test_simulate_with_power_policy_reports_savings(tmp_path: Path, policy: str) -> None:
    (tmp_path / "none").mkdir()
    base = simulate(tmp_path / "none")
    assert "energy_saved_kwh" not in base  # no policy: the metrics are as before
    out = tmp_path / policy
    out.mkdir()
    m = simulate(out, "--power-policy", policy, "--idle-s", "600")
    assert m["power_policy"] == policy
    assert m["jobs"] == 30 and m["unfinished_jobs"] == 0 and m["cap_violation_s"] == 0
    assert m["reconfigurations"] > 0 and m["power_errors"] == 0
    assert m["energy_saved_kwh"] > 0
    assert m["energy_it_kwh"] < base["energy_it_kwh"]


def test_simulate_rejects_an_unknown_policy(tmp_path: Path) -> None:
    trace = tmp_path / "t.swf"
    write_swf(trace)
    result = CliRunner().invoke(
        app,
        ["simulate", "--no-progress", "--trace", str(trace), "--nodes", "4", "--cores", "4",
         "--dispatcher", "easy", "--metrics-out", str(tmp_path / "m.json"),
         "--schedule-out", str(tmp_path / "s.csv"), "--power-policy", "sometimes"],
    )  # fmt: skip
    assert result.exit_code != 0 and "sometimes" in result.output
