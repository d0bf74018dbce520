"""Tuning HGFS by replay: the encoding, a tiny NSGA-II run, the pick, and bad input."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from power_builders import bursty_workload, cluster_nodes, job, node

from wattsched.connectors.simulated import SimulatedCluster
from wattsched.daemon.replay import replay
from wattsched.powerctl.hgfs import HGFSParams
from wattsched.powerctl.idle_timeout import IdleTimeoutPolicy
from wattsched.powerctl.policy import DEFAULT_BACKOFF_S
from wattsched.powerctl.tuning.encoding import bounds, decode, encode
from wattsched.powerctl.tuning.evaluate import (
    SplitError,
    Workload,
    evaluate,
    idle_ceiling,
    policy_for,
    replay_objectives,
    saving_ceiling,
    split_in_time,
)
from wattsched.powerctl.tuning.front import PickError, front_json, load_front, pick
from wattsched.powerctl.tuning.measures import (
    PAPER,
    PHYSICAL,
    TUNED,
    off_seconds,
    paper_saved_j,
)
from wattsched.powerctl.tuning.search import Evaluator, seeds, tune
from wattsched.scheduler import dispatcher as registry
from wattsched.scheduler.model import PowerState


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 5), st.integers(0, 2**31 - 1))
def test_the_encoding_round_trips(n_sets: int, seed: int) -> None:
    lo, hi = bounds(n_sets)
    x = np.random.default_rng(seed).uniform(lo, hi)
    p = decode(x, n_sets)  # always valid parameters (HGFSParams checks itself)
    assert len(p.centers) == n_sets and p.wait_off_s <= p.wait_on_s
    assert decode(encode(p), n_sets) == p
    assert np.all(encode(p) >= lo - 1e-9) and np.all(encode(p) <= hi + 1e-9)


def workloads() -> tuple[Workload, Workload, Workload]:
    nodes = tuple(cluster_nodes(6))
    parts = split_in_time("bursty", bursty_workload(120))
    return tuple(Workload(f"p{i}", nodes, tuple(p)) for i, p in enumerate(parts))  # type: ignore[return-value]


def dominated(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    return all(y <= x for x, y in zip(a, b, strict=True)) and a != b


@pytest.fixture(scope="module")
def tiny() -> dict:
    train, validation, _ = workloads()
    result = tune(train, validation, population=8, generations=3, seed=7, workers=1)
    return front_json(result, {"trace": "bursty"})


def test_a_tiny_run_returns_a_non_dominated_front_that_replays_to_its_objectives(
    tiny: dict,
) -> None:
    train, validation, _ = workloads()
    objs = [
        tuple(p["train"][k] for k in ("qos_p90", TUNED, "reconfigurations")) for p in tiny["points"]
    ]
    mins = [(q, -s, r) for q, s, r in objs]
    assert tiny["points"]
    assert not any(dominated(a, b) for a in mins for b in mins)
    for p in tiny["points"]:
        params = decode(p["x"], tiny["n_sets"])
        assert evaluate(train, params).to_json() == p["train"]
        assert evaluate(validation, params).to_json() == p["validation"]
    assert {b["idle_s"] for b in tiny["baselines"]} == {300, 900, 1800, 3600}


def test_the_front_is_never_dominated_by_its_seeds(tiny: dict) -> None:
    # The paper's default and HGFS acting as each idle timeout start the search: the final
    # front holds them or points at least as good in all three objectives (on train).
    train, _, _ = workloads()
    front = [
        (p["train"]["qos_p90"], -p["train"][TUNED], p["train"]["reconfigurations"])
        for p in tiny["points"]
    ]
    for params in seeds(3):
        o = evaluate(train, params).minimised()
        assert any(all(f <= s for f, s in zip(pt, o, strict=True)) for pt in front), params


def test_no_replay_saves_more_than_its_own_ceiling(tiny: dict) -> None:
    train, _, _ = workloads()
    assert tiny["ceiling"]["train"] == saving_ceiling(train)  # the tuned measure
    assert tiny["ceiling_physical"]["train"] == saving_ceiling(train, measure=PHYSICAL)
    policies = [decode(p["x"], tiny["n_sets"]) for p in tiny["points"]]
    saved: dict[str, list[float]] = {PAPER: [], PHYSICAL: []}
    for policy in [*policies, *seeds(3), 0, 60, 300]:
        hgfs = policy if isinstance(policy, HGFSParams) else None
        idle = policy if isinstance(policy, int) else None
        cluster = SimulatedCluster(list(train.nodes), list(train.jobs))
        replay(cluster, registry.create("easy"), power_policy=policy_for(hgfs, idle))
        o = evaluate(train, hgfs, idle_s=idle)
        assert o.saved_fraction == cluster.power_saved_j / (
            cluster.energy_j + cluster.power_saved_j
        )
        for m in (PAPER, PHYSICAL):
            saved[m].append(o.saved(m))
            assert saved[m][-1] <= idle_ceiling(cluster, train.nodes, m) + 1e-12, (m, policy)
    for m in (PAPER, PHYSICAL):
        assert max(saved[m]) > 0.5 * saving_ceiling(train, measure=m)  # they did save
    # the same schedule, the paper's measure is the larger: no busy power in its denominator
    assert all(p >= q for p, q in zip(saved[PAPER], saved[PHYSICAL], strict=True))


def test_the_off_time_agrees_with_the_clusters_own_energy_books() -> None:
    # These nodes draw their idle power while booting or shutting down and nothing when off,
    # so the energy the cluster itself books as saved (idle W - the state's W, integrated)
    # is idle W x the time off: eq. (4) rebuilt from the power log must equal it.
    train, _, _ = workloads()
    assert all(n.power.transition_w == n.power.idle_w and n.power.off_w == 0 for n in train.nodes)
    for policy in [*seeds(3), HGFSParams()]:
        cluster = SimulatedCluster(list(train.nodes), list(train.jobs))
        replay(cluster, registry.create("easy"), power_policy=policy_for(policy))
        assert cluster.power_commands > 0
        assert paper_saved_j(cluster, train.nodes) == pytest.approx(cluster.power_saved_j)


def test_the_ceiling_of_a_hand_made_schedule() -> None:
    # Two nodes; one 100 s one-node job from 0: n1 idles 100 s, n0 never.
    nodes = tuple(cluster_nodes(2))
    jobs = (replace(bursty_workload(1)[0], submit=0, runtime=100, walltime=100),)
    w = Workload("hand", nodes, jobs)
    cluster = SimulatedCluster(list(nodes), list(jobs))
    replay(cluster, registry.create("easy"))
    ran = next(iter(cluster.records.values()))
    idle = next(n for n in nodes if n.name not in ran.nodes)
    gain = idle.power.state_watts(PowerState.ON) - idle.power.state_watts(PowerState.OFF)
    assert saving_ceiling(w, measure=PHYSICAL) == pytest.approx(gain * 100 / cluster.energy_j)
    # the paper's: idle W x 100 s over idle W x 2 nodes x 100 s
    assert saving_ceiling(w) == pytest.approx(0.5)


def test_the_papers_measure_on_a_hand_made_replay() -> None:
    # Two nodes of 100 W idle (10 s to shut down, 120 s to boot); one-node jobs of 100 s at
    # 0 and at 2,000 s; the idle timeout at 300 s, no node kept on. One node never runs the
    # first job: off at 300 s (down at 310 s); the other runs it until 100 s and is switched
    # off at 400 s (down at 410 s). At 2,000 s one of them boots for the second job, which
    # starts at 2,120 s and ends at 2,220 s. Off time: 2,000 - 410 + 2,220 - 310 = 3,500 s
    # (whichever node boots: 2,000 - 310 + 2,220 - 410 too). Both draw 100 W idle, so
    #   eq. (4) = 100 W x 3,500 s = 350,000 J over 100 W x 2 nodes x 2,220 s = 444,000 J
    nodes = tuple(node(f"n{i}") for i in range(2))
    jobs = (job("a", 0, runtime=100), job("b", 2000, runtime=100))
    cluster = SimulatedCluster(list(nodes), list(jobs))
    policy = IdleTimeoutPolicy(idle_s=300, min_on=0)
    replay(cluster, registry.create("easy"), power_policy=policy)
    assert cluster.now == 2220 and sorted((t, on) for t, _, on in cluster.power_log) == [
        (300, False),
        (400, False),
        (2000, True),
    ]  # the hand-made schedule is the one replayed
    assert sum(off_seconds(cluster, nodes).values()) == 3500
    o = replay_objectives(cluster, nodes)
    assert o.paper_saved_fraction == pytest.approx(350_000 / 444_000)
    assert o.paper_saved_kwh == pytest.approx(350_000 / 3.6e6)
    assert o.saved_kwh == pytest.approx(cluster.power_saved_j / 3.6e6)
    # a node that starts off and is never switched: off the whole span, half the idle W x span
    off = (node("n0"), node("n1", state=PowerState.OFF))
    o = evaluate(Workload("off", off, (job("a", 0, runtime=100),)))
    assert o.reconfigurations == 0 and o.paper_saved_fraction == pytest.approx(0.5)


def test_equal_parameters_are_replayed_once() -> None:
    train, _, _ = workloads()
    ev = Evaluator(train, n_sets=3)
    x = list(encode(HGFSParams()))
    y = list(x)
    y[1] += 0.2  # queue_on rounds to the same integer: the same policy
    a, b, c = ev([x, y, x])
    assert a == b == c and ev.evaluations == 1
    ev([x])
    assert ev.evaluations == 1


def test_the_same_seed_gives_the_same_front(tiny: dict) -> None:
    train, validation, _ = workloads()
    again = front_json(
        tune(train, validation, population=8, generations=3, seed=7, workers=2), {"trace": "bursty"}
    )
    assert [p["x"] for p in again["points"]] == [p["x"] for p in tiny["points"]]


def test_pick_respects_its_bounds_and_says_what_is_close(tiny: dict, tmp_path: Path) -> None:
    vals = [p["validation"] for p in tiny["points"]]
    q = sorted(v["qos_p90"] for v in vals)[len(vals) // 2]
    r = max(v["reconfigurations"] for v in vals)
    chosen = pick(tiny, q, r)["validation"]
    assert chosen["qos_p90"] <= q and chosen["reconfigurations"] <= r
    within = [v for v in vals if v["qos_p90"] <= q and v["reconfigurations"] <= r]
    assert chosen[TUNED] == max(v[TUNED] for v in within)
    with pytest.raises(PickError, match="closest"):
        pick(tiny, -1.0, -1.0)
    f = tmp_path / "front.json"
    f.write_text(json.dumps(tiny))
    assert load_front(f)["points"] == tiny["points"]
    f.write_text("{}")
    with pytest.raises(ValueError, match="not a wattsched tuning front"):
        load_front(f)


def test_the_front_says_its_measure_and_an_old_front_is_picked_in_its_own(
    tiny: dict, tmp_path: Path
) -> None:
    assert tiny["measure"] == TUNED == PAPER and tiny["format"].endswith("/2")
    assert set(tiny["ceiling"]) == set(tiny["ceiling_physical"]) == {"train", "validation"}
    # A /1 file (before the paper's measure): tuned on the physical saving, which pick uses.
    old_keys = ("qos_p90", "saved_fraction", "reconfigurations", "energy_kwh", "power_failures")
    old = {
        **{k: v for k, v in tiny.items() if k not in ("measure", "ceiling_physical")},
        "format": "wattsched-hgfs-front/1",
        "points": [
            {**p, "train": {k: p["train"][k] for k in old_keys},
             "validation": {k: p["validation"][k] for k in old_keys}}
            for p in tiny["points"]
        ],
    }  # fmt: skip
    f = tmp_path / "old.json"
    f.write_text(json.dumps(old))
    doc = load_front(f)
    assert doc["measure"] == PHYSICAL
    chosen = pick(doc, 1e9, 1e9)["validation"]
    assert chosen["saved_fraction"] == max(p["validation"]["saved_fraction"] for p in old["points"])
    with pytest.raises(PickError, match="saved_fraction"):
        pick(doc, -1.0, -1.0)
    f.write_text(json.dumps({**tiny, "measure": "joules"}))
    with pytest.raises(ValueError, match="unknown energy-saved measure"):
        load_front(f)


def test_a_trace_too_short_to_split_is_refused() -> None:
    with pytest.raises(SplitError, match=r"tiny.swf: 30 jobs .* \[15, 7, 8\]"):
        split_in_time("tiny.swf", bursty_workload(30))


def test_a_picked_file_is_what_the_daemon_loads(tiny: dict, tmp_path: Path) -> None:
    from wattsched.powerctl.build import load_hgfs_params

    chosen = pick(tiny, 1e9, 1e9)
    f = tmp_path / "hgfs.json"
    f.write_text(json.dumps({"params": chosen["params"], "validation": chosen["validation"]}))
    assert load_hgfs_params(f) == decode(chosen["x"], tiny["n_sets"])
    assert isinstance(load_hgfs_params(f), HGFSParams)


def test_replays_run_on_a_dask_cluster_with_the_same_front(tiny: dict) -> None:
    """``--dask-scheduler``: the same function per replay on a Dask cluster (a LocalCluster
    of 2 worker processes here), the same front for the same seed."""
    from distributed import LocalCluster

    train, validation, _ = workloads()
    with LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as lc:
        res = tune(train, validation, population=8, generations=3, seed=7,
                   dask_scheduler=lc.scheduler_address)  # fmt: skip
    assert [p.x for p in res.points] == [p["x"] for p in tiny["points"]]


def test_failed_power_commands_in_replays_are_seeded_counted_and_backed_off() -> None:
    nodes = tuple(cluster_nodes(6))
    jobs = tuple(bursty_workload(120))
    clean = evaluate(Workload("w", nodes, jobs), idle_s=300)
    assert clean.power_failures == 0 and clean.reconfigurations > 0
    flaky = Workload("w", nodes, jobs, power_failure_p=0.3, seed=5)
    a, b = evaluate(flaky, idle_s=300), evaluate(flaky, idle_s=300)
    assert a == b  # the same seed, the same draws
    assert a.power_failures > 0
    assert evaluate(replace(flaky, seed=6), idle_s=300) != a
    # Every command fails: nothing is switched, and a node that failed is not tried again
    # before the power book's failure back-off (as in production), not at every cycle.
    dead = SimulatedCluster(list(nodes), list(jobs), power_failure_p=1.0)
    replay(dead, registry.create("easy"), power_policy=IdleTimeoutPolicy(idle_s=300))
    assert dead.power_commands == 0 and dead.power_saved_j == 0.0
    tries_per_node = (dead.now - dead.start_time) // DEFAULT_BACKOFF_S + 1
    assert 0 < dead.power_failures <= len(nodes) * tries_per_node
