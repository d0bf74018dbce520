"""Thermal replays: temperatures evolve with power; the guard keeps every node under its
threshold for any dispatcher (checked by the independent thermal validator)."""

from __future__ import annotations

import csv
import json
import random
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from wattsched.connectors.simulated import SimulatedCluster
from wattsched.connectors.simulated_thermal import ThermalSimulatedCluster
from wattsched.daemon.cli import app
from wattsched.daemon.replay import replay
from wattsched.daemon.thermal_sim import thermal_setup
from wattsched.scheduler.dispatcher import create
from wattsched.scheduler.model import Job, Node, NodePowerModel, Resources
from wattsched.scheduler.thermal.model import ThermalParams
from wattsched.scheduler.thermal.validate_thermal import validate_thermal
from wattsched.scheduler.validate import Executed, validate_schedule

THERMAL = """
t_sup = 20.0
t_thresh = 90.0
r = 0.5
c = 6000.0
"""


def _nodes() -> list[Node]:
    pm = NodePowerModel(idle_w=40.0, core_w=30.0)  # 160 W full: steady 101 C > 90 C, tau 50 min
    return [Node(f"n{i}", Resources(cores=4, mem_mb=8000), pm) for i in range(6)]


def _jobs(seed: int, n: int = 60) -> list[Job]:
    rng = random.Random(seed)
    out, t = [], 0
    for k in range(n):
        t += rng.randint(0, 300)
        wall = rng.randint(600, 3600)
        out.append(
            Job(
                str(k + 1), t, wall, rng.randint(1, 3), Resources(cores=rng.randint(1, 4)),
                runtime=rng.randint(300, wall),
            )
        )  # fmt: skip
    return out


def _runs(cluster: SimulatedCluster) -> list[Executed]:
    return [
        Executed(r.job, r.start, r.end, r.nodes)
        for r in cluster.records.values()
        if r.start is not None and r.end is not None
    ]


def _replay(
    tmp_path: Path, dispatcher: str, seed: int, guard: bool, mode: str = "suspend"
) -> ThermalSimulatedCluster:
    f = tmp_path / "thermal.toml"
    f.write_text(THERMAL + f'on_overheat = "{mode}"\n')
    nodes, jobs = _nodes(), _jobs(seed)
    from wattsched.scheduler.model import PowerCap

    cluster, disp = thermal_setup(
        f, nodes, jobs, PowerCap.unlimited(), False, create(dispatcher), guard=guard
    )
    replay(cluster, disp)
    assert not cluster.unfinished()
    assert validate_schedule(nodes, _runs(cluster), PowerCap.unlimited()) == []
    return cluster


@pytest.mark.parametrize("dispatcher", ["easy", "prb", "fifo"])
@pytest.mark.parametrize("seed", [1, 2])
def test_guard_never_passes_the_threshold(tmp_path: Path, dispatcher: str, seed: int) -> None:
    guarded = _replay(tmp_path, dispatcher, seed, guard=True)
    assert guarded.tracker is not None
    params = guarded.tracker.params
    assert guarded.tracker.violations == 0
    assert guarded.tracker.max_t.max() <= params.t_thresh + 1e-6
    assert validate_thermal(_nodes(), _runs(guarded), params) == []
    assert guarded.slow_events == 0  # the guard leaves nothing to suspend
    # the same workload without the guard (nor suspension) does pass it (the test has teeth),
    # and the independent validator sees it too
    free = _replay(tmp_path, dispatcher, seed, guard=False, mode="none")
    assert free.tracker is not None and free.tracker.violations > 0
    assert validate_thermal(_nodes(), _runs(free), params) != []


def test_tracker_matches_the_validator_temperatures(tmp_path: Path) -> None:
    cluster = _replay(tmp_path, "easy", 3, guard=False)
    assert cluster.tracker is not None
    params = cluster.tracker.params
    # a lower threshold the tracker's maximum passes: the validator agrees on the maximum
    hot = float(cluster.tracker.max_t.max())
    low = ThermalParams(params.names, params.r, params.c, params.d, params.t_sup, hot - 0.01)
    slowed = cluster.slow_intervals()
    assert slowed  # this replay suspends nodes: the validator follows the pauses
    assert validate_thermal(_nodes(), _runs(cluster), low, slowed=slowed) != []
    high = ThermalParams(params.names, params.r, params.c, params.d, params.t_sup, hot + 0.01)
    assert validate_thermal(_nodes(), _runs(cluster), high, slowed=slowed) == []


def test_simulate_cli_thermal_outputs(shared_data: Path, tmp_path: Path) -> None:
    f = tmp_path / "thermal.toml"
    f.write_text("t_sup = 20.0\nt_thresh = 60.0\nr = 0.08\nc = 4000.0\n")
    e = shared_data / "eurora"
    args = [
        "simulate", "--no-progress", "--format", "eurora",
        "--trace", str(e / "historical_traces/50/hist_50_20140331_112453.log_crypt"),
        "--system", str(e / "system_configs/nodes_#8"),
        "--queues", str(e / "system_configs/system_queues"),
        "--job-power", str(e / "eurora_power_predictions/power_predictions"),
        "--dispatcher", "easy", "--thermal", str(f),
        "--metrics-out", str(tmp_path / "m.json"), "--schedule-out", str(tmp_path / "s.csv"),
        "--power-out", str(tmp_path / "p.csv"), "--plot", str(tmp_path / "p.png"),
    ]  # fmt: skip
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output + repr(res.exception)
    m = json.loads((tmp_path / "m.json").read_text())
    th = m["thermal"]
    assert th["guard"] is True and th["threshold_violations"] == 0
    assert th["on_overheat"] == "suspend" and th["suspend_events"] == 0
    assert th["max_outlet_c"] <= 60.0 + 1e-6 and th["mean_outlet_c"] > 20.0
    rows = list(csv.DictReader((tmp_path / "p.csv").open()))
    assert {"max_outlet_c", "suspended_nodes", "throttled_nodes"} <= set(rows[0])
    assert max(float(r["max_outlet_c"]) for r in rows) <= 60.0 + 1e-6
    assert (tmp_path / "p.thermal.png").read_bytes()[:4] == b"\x89PNG"


def test_simulate_cli_refuses_a_bad_thermal_file(shared_data: Path, tmp_path: Path) -> None:
    f = tmp_path / "bad.toml"
    f.write_text("t_sup = 30.0\nt_thresh = 25.0\nr = 0.08\nc = 4000.0\n")
    e = shared_data / "eurora"
    args = [
        "simulate", "--no-progress", "--format", "eurora",
        "--trace", str(e / "historical_traces/50/hist_50_20140331_112453.log_crypt"),
        "--system", str(e / "system_configs/nodes_#8"),
        "--queues", str(e / "system_configs/system_queues"),
        "--job-power", str(e / "eurora_power_predictions/power_predictions"),
        "--dispatcher", "easy", "--thermal", str(f),
        "--metrics-out", str(tmp_path / "m.json"), "--schedule-out", str(tmp_path / "s.csv"),
    ]  # fmt: skip
    res = CliRunner().invoke(app, args)
    assert res.exit_code != 0
    assert "bad.toml" in res.output and "t_thresh" in res.output and "25.0" in res.output


def test_zero_cost_without_thermal() -> None:
    # the plain cluster has no thermal state at all
    c = SimulatedCluster(_nodes(), _jobs(1, 3))
    assert not hasattr(c, "tracker")
    assert np.isfinite(c.power_now_w)


@pytest.mark.parametrize("dispatcher", ["easy", "fifo"])
def test_a_job_too_hot_to_ever_run_does_not_hold_the_queue(tmp_path: Path, dispatcher: str) -> None:
    f = tmp_path / "thermal.toml"
    f.write_text(THERMAL)
    from wattsched.scheduler.model import PowerCap

    # the head needs every node at 4 x 60 W a unit: 280 W, far over 90 C for hours
    hot = Job("1", 0, 20_000, 6, Resources(cores=4), unit_power_w=240.0, runtime=20_000)
    small = [Job(str(k), 10, 600, 1, Resources(cores=1), runtime=600) for k in range(2, 8)]
    cluster, disp = thermal_setup(
        f, _nodes(), [hot, *small], PowerCap.unlimited(), False, create(dispatcher)
    )
    replay(cluster, disp)
    assert [j.id for j in cluster.unfinished()] == ["1"]
    assert all(cluster.records[j.id].start == 10 for j in small)
    assert cluster.tracker is not None and cluster.tracker.violations == 0
