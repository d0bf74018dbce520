"""``ClusterState.check``: the last look at a planned start before it is carried out."""

from __future__ import annotations

import numpy as np
import pytest

from wattsched.scheduler.mapper import StateCache
from wattsched.scheduler.model import (
    Job,
    Node,
    NodePowerModel,
    Placement,
    PowerCap,
    PowerState,
    Resources,
    RunningJob,
    Snapshot,
)

PM = NodePowerModel(idle_w=10, first_core_w=5, core_w=2, transition_w=20)


def snapshot(cap: float = 1000.0) -> Snapshot:
    nodes = (
        Node("a", Resources(cores=4), PM),
        Node("b", Resources(cores=4), PM),
        Node("c", Resources(cores=4), PM, available=False),  # drained
        Node("d", Resources(cores=4), PM, state=PowerState.OFF),
    )
    busy = Job("r", 0, 100, 1, Resources(cores=3))
    return Snapshot(10, nodes, (RunningJob(busy, 0, ("a",), 100),), (), PowerCap.constant(cap))


@pytest.mark.parametrize(
    ("nodes", "cap", "why"),
    [
        (["b", "b"], 1000.0, ""),  # two 2-core units fit on the empty node
        (["a", "b"], 1000.0, "a node lacks room"),  # a has 1 core left (the running job)
        (["b"], 1000.0, "wrong number of units"),  # one node for two units
        (["b", "c"], 1000.0, "a node is not usable"),  # c is drained
        (["b", "d"], 1000.0, "a node is not usable"),  # d is off
        # static 10+10+10+0 = 30, a busy: 5 + 3*2 = 11 -> 41; the job adds 5 + 4*2 = 13 -> 54
        (["b", "b"], 53.0, "over the power cap"),
        (["b", "b"], 54.0, ""),
    ],
)
def test_check(nodes: list[str], cap: float, why: str) -> None:
    snap = snapshot(cap)
    cache = StateCache()
    state = cache.state(snap)
    job = Job("j", 0, 50, 2, Resources(cores=2))
    jv = cache.vec(job)
    names = state.arrays.index
    counts: dict[int, int] = {}
    for n in nodes:
        counts[names[n]] = counts.get(names[n], 0) + 1
    idx = np.array(list(counts), dtype=np.int64)
    cnt = np.array(list(counts.values()), dtype=np.int64)
    assert state.check(jv, idx, cnt, snap.time) == why


def rule_snapshot(exclusive_running: bool = False) -> Snapshot:
    nodes = tuple(Node(n, Resources(cores=4), PM) for n in ("a", "b", "c"))
    busy = Job("r", 0, 100, 1, Resources(cores=1), exclusive=exclusive_running)
    return Snapshot(10, nodes, (RunningJob(busy, 0, ("a",), 100),), (), PowerCap.unlimited())


def placed(snap: Snapshot, job: Job) -> list[str] | None:
    cache = StateCache()
    state = cache.state(snap)
    out = state.place(cache.vec(job), state.order_index(), snap.time)
    return None if out is None else list(state.names_for(*out))


@pytest.mark.parametrize(
    ("placement", "units", "exclusive", "expected"),
    [
        (Placement.FREE, 2, False, ["a", "a"]),  # fills the first node in order
        (Placement.SCATTER, 2, False, ["a", "b"]),  # one unit a node
        (Placement.SCATTER, 4, False, None),  # only three nodes
        (Placement.PACK, 2, False, ["a", "a"]),
        (Placement.PACK, 4, False, ["b", "b", "b", "b"]),  # a has 3 cores left: b holds all
        (Placement.FREE, 2, True, ["b", "b"]),  # exclusive: a runs a job
        (Placement.SCATTER, 3, True, None),  # exclusive and scattered: two empty nodes only
    ],
)
def test_place_honours_the_rule(
    placement: Placement, units: int, exclusive: bool, expected: list[str] | None
) -> None:
    job = Job("j", 0, 50, units, Resources(cores=1), placement=placement, exclusive=exclusive)
    assert placed(rule_snapshot(), job) == expected


def test_a_node_held_whole_takes_no_other_job() -> None:
    job = Job("j", 0, 50, 1, Resources(cores=1))
    assert placed(rule_snapshot(exclusive_running=True), job) == ["b"]
    snap = rule_snapshot(exclusive_running=True)
    cache = StateCache()
    state = cache.state(snap)
    jv = cache.vec(job)
    idx = np.array([state.arrays.index["a"]])
    assert state.check(jv, idx, np.array([1]), snap.time) == (
        "a node is held whole by an exclusive job"
    )


@pytest.mark.parametrize(
    ("placement", "nodes", "why"),
    [
        (Placement.SCATTER, ["b", "b"], "scattered units share a node"),
        (Placement.PACK, ["b", "c"], "packed units span nodes"),
        (Placement.FREE, ["b", "b"], ""),
    ],
)
def test_check_names_the_broken_rule(placement: Placement, nodes: list[str], why: str) -> None:
    snap = rule_snapshot()
    cache = StateCache()
    state = cache.state(snap)
    jv = cache.vec(Job("j", 0, 50, 2, Resources(cores=1), placement=placement))
    counts: dict[int, int] = {}
    for n in nodes:
        counts[state.arrays.index[n]] = counts.get(state.arrays.index[n], 0) + 1
    idx = np.array(list(counts), dtype=np.int64)
    cnt = np.array(list(counts.values()), dtype=np.int64)
    assert state.check(jv, idx, cnt, snap.time) == why


def test_a_failed_node_counts_at_its_idle_draw() -> None:
    # A node whose slurmd died usually still draws power: counted at idle, not at off_w, in
    # the estimate and in the room left under the cap.
    pm = NodePowerModel(idle_w=100, core_w=10, off_w=5)
    nodes = (Node("a", Resources(cores=4), pm), Node("b", Resources(cores=4), pm))
    failed = (nodes[0], Node("b", Resources(cores=4), pm, state=PowerState.FAILED))
    assert pm.state_watts(PowerState.FAILED) == 100
    job = Job("j", 0, 50, 1, Resources(cores=4))
    for ns, fits in ((nodes, False), (failed, False)):
        # 200 W of idle draw + 40 W for the job: 230 W is too little either way.
        snap = Snapshot(0, ns, (), (), PowerCap.constant(230.0))
        assert (placed(snap, job) is not None) == fits
    snap = Snapshot(0, failed, (), (), PowerCap.constant(240.0))
    assert placed(snap, job) == ["a"]
