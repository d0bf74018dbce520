"""A node at its threshold is suspended (HPC) or throttled (Cloud) in the simulated cluster:
the jobs' ends move later by the paused or stretched time, consistently in the books, the
records and the validators."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from tests.thermal.test_thermal_replay import THERMAL, _jobs, _nodes, _runs
from wattsched.connectors.simulated_thermal import ThermalSimulatedCluster
from wattsched.connectors.traces.thermal_file import read_thermal_file
from wattsched.daemon.replay import replay
from wattsched.daemon.thermal_sim import thermal_setup
from wattsched.scheduler.dispatcher import create
from wattsched.scheduler.model import Job, Node, NodePowerModel, PowerCap, Resources
from wattsched.scheduler.thermal.model import ThermalModelError
from wattsched.scheduler.thermal.validate_thermal import validate_stretch, validate_thermal
from wattsched.scheduler.validate import validate_schedule


def _unguarded(tmp_path: Path, dispatcher: str, seed: int, mode: str) -> ThermalSimulatedCluster:
    f = tmp_path / f"thermal_{mode}.toml"
    f.write_text(THERMAL + f'on_overheat = "{mode}"\n')
    nodes, jobs = _nodes(), _jobs(seed)
    cluster, disp = thermal_setup(
        f, nodes, jobs, PowerCap.unlimited(), False, create(dispatcher), guard=False
    )
    replay(cluster, disp)
    assert not cluster.unfinished()
    assert validate_schedule(nodes, _runs(cluster), PowerCap.unlimited()) == []
    return cluster


def _one_step_overshoot(cluster: ThermalSimulatedCluster) -> float:
    """What the hottest possible node gains in one second above the threshold."""
    assert cluster.tracker is not None
    p = cluster.tracker.params
    full = np.full(p.n, 160.0)  # the test nodes' full draw
    hottest = float(p.steady(full).max())
    tau = float((p.r * p.c).min())
    return (hottest - p.t_thresh) * (1 - math.exp(-1 / tau))


@pytest.mark.parametrize(
    ("dispatcher", "seed", "mode"),
    [("easy", 1, "suspend"), ("easy", 2, "suspend"), ("fifo", 1, "suspend"),
     ("easy", 1, "throttle"), ("fifo", 2, "throttle")],
)  # fmt: skip
def test_an_unguarded_replay_that_overheats_suspends(
    tmp_path: Path, dispatcher: str, seed: int, mode: str
) -> None:
    free = _unguarded(tmp_path, dispatcher, seed, "none")
    assert free.tracker is not None
    params = free.tracker.params
    over = _one_step_overshoot(free)
    assert free.tracker.max_t.max() > params.t_thresh + 10 * over  # it does overheat

    sus = _unguarded(tmp_path, dispatcher, seed, mode)
    assert sus.tracker is not None
    assert sus.slow_events > 0 and sus.slowed_s() > 0
    assert sus.tracker.max_t.max() <= params.t_thresh + over
    slowed = sus.slow_intervals()
    rates = {rate for *_, rate in slowed}
    assert rates == {0.0} if mode == "suspend" else rates <= {0.0, 0.5} and 0.5 in rates
    runs = _runs(sus)
    assert validate_stretch(runs, slowed) == []
    assert validate_thermal(_nodes(), runs, params, slowed=slowed, tol_c=over) == []
    # without the pauses, the same starts and ends would pass the threshold: the pauses matter
    assert validate_thermal(_nodes(), runs, params, tol_c=over) != []
    # paused jobs ended later than their runtime after their start
    late = [r for r in runs if r.end - r.start > min(r.job.runtime or 0, r.job.walltime)]
    assert {j for j, *_ in slowed} == {r.job.id for r in late}


def _one_node(
    tmp_path: Path, mode: str, runtime: int = 6000, core_w: float = 30.0
) -> ThermalSimulatedCluster:
    # 160 W busy: target 20 + 0.5 x 160 = 100 C; tau = 0.5 x 6000 = 3000 s; no recirculation
    f = tmp_path / "one.toml"
    f.write_text(
        "t_sup = 20.0\nt_thresh = 90.0\nr = 0.5\nc = 6000.0\nd = [[0.0]]\n"
        f'hysteresis_c = 10.0\non_overheat = "{mode}"\nthrottle_factor = 0.5\n'
    )
    node = Node("n0", Resources(cores=4, mem_mb=1000), NodePowerModel(idle_w=40.0, core_w=core_w))
    job = Job("1", 0, 10_000, 1, Resources(cores=4), runtime=runtime)
    params = read_thermal_file(f, ["n0"])
    cluster = ThermalSimulatedCluster([node], [job], thermal=params)
    replay(cluster, create("fifo"))
    return cluster


def test_a_throttled_job_ends_later_by_the_hand_computed_stretch(tmp_path: Path) -> None:
    c = _one_node(tmp_path, "throttle")
    # from 40 C (idle steady) towards 100 C, 90 C at 3000 ln 6 = 5375.3 s: throttled at 5376
    hit = math.ceil(3000 * math.log(6))
    assert hit == 5376
    # 624 s of work left at half speed: 1248 s; at 100 W it cools towards 70 C and would
    # reach the 80 C resume temperature only after 3000 ln(20.005 / 10) = 2080 s
    assert c.records["1"].end == hit + 2 * (6000 - hit) == 6624
    assert c.slow_intervals() == [("1", hit, 6624, 0.5)]
    assert c.slow_events == 1 and c.slowed_s() == 6624 - hit
    assert c.energy_j == pytest.approx(160 * hit + 100 * 2 * (6000 - hit))
    runs = _runs(c)
    assert validate_stretch(runs, c.slow_intervals()) == []
    assert validate_stretch(runs, []) != []  # the stretch is real


def test_a_throttled_node_that_still_heats_is_paused(tmp_path: Path) -> None:
    # 280 W busy: target 160 C; throttled 40 + 120 W: target 100 C, still over 90 C
    c = _one_node(tmp_path, "throttle", core_w=60.0)
    assert c.tracker is not None
    assert c.escalations >= 1
    assert 0.0 in {rate for *_, rate in c.slow_intervals()}
    over = (160 - 90) * (1 - math.exp(-1 / 3000))
    assert c.tracker.max_t.max() <= 90.0 + over
    assert validate_stretch(_runs(c), c.slow_intervals()) == []


def test_a_suspended_job_ends_later_by_the_paused_time(tmp_path: Path) -> None:
    c = _one_node(tmp_path, "suspend")
    hit = 5376
    assert c.tracker is not None
    t_hit = 100 - 60 * math.exp(-hit / 3000)
    # paused: 40 W, target 40 C; 80 C after 3000 ln((t_hit - 40) / 40) s
    paused = math.ceil(3000 * math.log((t_hit - 40) / 40))
    assert c.records["1"].end == 6000 + paused
    assert c.slow_intervals() == [("1", hit, hit + paused, 0.0)]
    assert c.tracker.max_t.max() <= 90.0 + 0.02


@pytest.mark.parametrize(
    ("line", "field", "value"),
    [
        ('on_overheat = "pause"', "on_overheat", "pause"),  # not a mode
        ("throttle_factor = 1.5", "throttle_factor", "1.5"),  # not a slowdown
        ("hysteresis_c = -1.0", "hysteresis_c", "-1.0"),  # negative
    ],
)
def test_bad_overheat_settings_are_refused(
    tmp_path: Path, line: str, field: str, value: str
) -> None:
    f = tmp_path / "bad.toml"
    f.write_text(THERMAL + line + "\n")
    with pytest.raises(ThermalModelError) as e:
        read_thermal_file(f, [n.name for n in _nodes()])
    assert "bad.toml" in str(e.value) and field in str(e.value) and value in str(e.value)


def test_a_node_that_could_never_resume_is_refused(tmp_path: Path) -> None:
    # idle 40 W: 40 C steady; resume at 90 - 60 = 30 C is never reached
    f = tmp_path / "never.toml"
    f.write_text(THERMAL + "hysteresis_c = 60.0\n")
    params = read_thermal_file(f, [n.name for n in _nodes()])
    with pytest.raises(ThermalModelError, match=r"hysteresis_c.*never resume"):
        ThermalSimulatedCluster(_nodes(), _jobs(1, 3), thermal=params)


def test_outputs_show_the_suspensions(tmp_path: Path) -> None:
    import csv
    import json

    from wattsched.daemon.thermal_sim import plot_thermal, thermal_metrics, write_power_thermal

    c = _unguarded(tmp_path, "easy", 1, "suspend")
    m = thermal_metrics(c, create("easy"))
    json.dumps(m)
    assert m["on_overheat"] == "suspend" and m["suspend_events"] == c.slow_events > 0
    assert m["suspended_node_s"] == c.slowed_s() > 0 and m["throttle_events"] == 0
    write_power_thermal(tmp_path / "p.csv", c)
    rows = list(csv.DictReader((tmp_path / "p.csv").open()))
    assert max(int(r["suspended_nodes"]) for r in rows) > 0
    assert all(r["throttled_nodes"] == "0" for r in rows)
    plot_thermal(tmp_path / "p.png", c, "suspended")
    assert (tmp_path / "p.png").read_bytes()[:4] == b"\x89PNG"
