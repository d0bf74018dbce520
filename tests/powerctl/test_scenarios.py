"""EECluster's synthetic scenarios: the rates of their Table 1 patterns, repeatable, and
SWF that the trace reader takes whole on the scenarios' cluster."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from wattsched.connectors.traces.swf import read_swf
from wattsched.daemon.cli import app
from wattsched.powerctl.tuning.scenarios import HOUR, SCENARIOS, WEEK_H, generate, write_swf


def _per_hour(jobs: list, hours: int) -> np.ndarray:
    counts = np.zeros(hours)
    for j in jobs:
        counts[j.submit // HOUR] += 1
    return counts


def test_the_same_seed_gives_the_same_trace_and_another_seed_another() -> None:
    assert generate(3, 1, seed=4) == generate(3, 1, seed=4)
    assert generate(3, 1, seed=4) != generate(3, 1, seed=5)


def test_a_gap_scale_lowers_the_arrival_rate_and_1_changes_nothing() -> None:
    assert generate(2, 1, seed=4, gap_scale=1.0) == generate(2, 1, seed=4)
    months = 12
    hours = round(months * 730)
    expected = float(np.sum(HOUR / SCENARIOS[2].mean_gap_s(np.arange(hours)))) / 2
    n = len(generate(2, months, seed=4, gap_scale=2.0))
    assert abs(n - expected) <= 4 * np.sqrt(expected)
    with pytest.raises(ValueError, match="gap_scale"):
        generate(2, 1, seed=4, gap_scale=0)


@pytest.mark.parametrize("scenario", [1, 2, 3, 4])
def test_arrivals_follow_the_scenario_rates(scenario: int) -> None:
    months = 24
    jobs = generate(scenario, months, seed=11)
    hours = round(months * 730)
    counts = _per_hour(jobs, hours)
    idx = np.arange(hours)
    expected = HOUR / SCENARIOS[scenario].mean_gap_s(idx)
    # Each kind of hour (by its rate) gets its rate's arrivals: a Poisson count within four
    # standard deviations of its mean.
    for rate in np.unique(expected):
        sel = expected == rate
        mean = rate * sel.sum()
        assert abs(counts[sel].sum() - mean) <= 4 * np.sqrt(mean), (rate, sel.sum())
    if scenario >= 2:
        day, hour = (idx // 24) % 7, idx % 24
        workday = (day < 5) & (hour >= 8) & (hour < 20)
        assert counts[workday].mean() > 3 * counts[~workday].mean()
    if scenario >= 3:
        week = idx // WEEK_H
        workday = ((idx // 24) % 7 < 5) & (idx % 24 >= 8) & (idx % 24 < 20)
        busy = counts[workday & (week % 5 == 1)].mean()
        quiet = counts[workday & (week % 5 == 3)].mean()
        assert busy > 4 * quiet


def test_jobs_are_well_formed() -> None:
    jobs = generate(4, 6, seed=2)
    assert all(60 <= j.runtime <= j.walltime and j.walltime % 900 == 0 for j in jobs)
    assert {j.procs for j in jobs} == {1, 2, 4, 8, 16, 32}
    assert [j.submit for j in jobs] == sorted(j.submit for j in jobs)


def test_the_swf_reads_back_whole_on_the_scenario_cluster(tmp_path: Path) -> None:
    jobs = generate(2, 2, seed=3)
    path = tmp_path / "s2.swf"
    write_swf(path, jobs, 2, 3)
    wl = read_swf(path, cores_per_node=8, nodes=16)
    assert len(wl.jobs) == len(jobs)
    assert wl.report.skipped == {}
    wide = next(j for j, s in zip(wl.jobs, jobs, strict=True) if s.procs == 32)
    assert wide.units == 4 and wide.unit.cores == 8


def test_the_command_writes_the_trace_and_refuses_an_unknown_scenario(tmp_path: Path) -> None:
    out = tmp_path / "s1.swf"
    r = CliRunner().invoke(app, ["tune", "scenario", "1", "--out", str(out), "--months", "1"])
    assert r.exit_code == 0, r.output
    assert out.read_text().startswith("; EECluster synthetic scenario 1")
    bad = CliRunner().invoke(app, ["tune", "scenario", "5", "--out", str(out)])
    assert bad.exit_code == 2
