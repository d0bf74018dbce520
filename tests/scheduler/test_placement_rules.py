"""Placement rules (free, scatter, pack, exclusive): the model's check, the mapper, the
independent validator and the simulated cluster."""

from __future__ import annotations

import pytest

from wattsched.connectors.base import PlacementError
from wattsched.connectors.simulated import SimulatedCluster
from wattsched.scheduler.mapper import StateCache, placement_of
from wattsched.scheduler.model import (
    Job,
    ModelError,
    Node,
    NodePowerModel,
    Placement,
    PowerCap,
    Resources,
    RunningJob,
    Snapshot,
)
from wattsched.scheduler.validate import Executed, validate_schedule

PM = NodePowerModel(idle_w=10, core_w=1)
NODES = tuple(Node(f"n{i}", Resources(cores=4), PM) for i in range(4))


def job(jid: str = "j", units: int = 2, rule: Placement = Placement.FREE, **kw: object) -> Job:
    return Job(jid, 0, 100, units, Resources(cores=1), placement=rule, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("rule", "nodes", "why"),
    [
        (Placement.FREE, ("n1", "n1"), ""),  # free: units may share a node
        (Placement.SCATTER, ("n1", "n2"), ""),
        (Placement.SCATTER, ("n1", "n1"), "distinct"),  # scatter: one unit per node
        (Placement.PACK, ("n1", "n1"), ""),
        (Placement.PACK, ("n1", "n2"), "one node"),  # pack: all units on one node
        (Placement.FREE, ("n1",), "1 nodes for 2 units"),  # one node per unit, always
    ],
)
def test_placement_violation(rule: Placement, nodes: tuple[str, ...], why: str) -> None:
    got = job(rule=rule).placement_violation(nodes)
    assert (why in got and got) if why else got == ""


def test_unknown_rule_is_refused() -> None:
    with pytest.raises(ModelError, match="placement"):
        job(rule="spread")  # type: ignore[arg-type]


def _place(snap: Snapshot, j: Job) -> tuple[str, ...] | None:
    cache = StateCache()
    state = cache.state(snap)
    jv = cache.vec(j)
    placed = state.place(jv, state.order_efficiency_load(), snap.time)
    return None if placed is None else state.names_for(*placed)


def _snap(running: tuple[RunningJob, ...] = ()) -> Snapshot:
    return Snapshot(0, NODES, running, (), PowerCap.unlimited())


def test_mapper_free_fills_one_node_first() -> None:
    busy = RunningJob(job("r", 1), 0, ("n2",), 100)
    assert _place(_snap((busy,)), job(units=3)) == ("n2", "n2", "n2")


def test_mapper_scatter_uses_distinct_nodes() -> None:
    busy = RunningJob(job("r", 1), 0, ("n2",), 100)
    got = _place(_snap((busy,)), job(units=3, rule=Placement.SCATTER))
    assert got is not None and len(set(got)) == 3


def test_mapper_scatter_needs_enough_nodes() -> None:
    assert _place(_snap(), job(units=5, rule=Placement.SCATTER)) is None


def test_mapper_pack_takes_one_node_with_room() -> None:
    busy = RunningJob(job("r", 2), 0, ("n0", "n0"), 100)
    got = _place(_snap((busy,)), job(units=3, rule=Placement.PACK))
    assert got is not None and len(set(got)) == 1 and got[0] != "n0"  # n0 has 2 cores left
    assert _place(_snap(), job(units=5, rule=Placement.PACK)) is None


def test_mapper_exclusive_takes_idle_nodes_and_books_them_whole() -> None:
    busy = RunningJob(job("r", 1), 0, ("n0",), 100)
    excl = job("x", 2, Placement.SCATTER, exclusive=True)
    got = _place(_snap((busy,)), excl)
    assert got is not None and "n0" not in got
    running = (busy, RunningJob(excl, 0, got, 100))
    small = job("s", 4)  # 4 one-core units: fit on n0 (3 left) + the last idle node
    placed = _place(_snap(running), small)
    assert placed is not None and not set(placed) & set(got)
    assert _place(_snap(running), job("s", 8)) is None  # the exclusive nodes stay closed


def test_check_refuses_rule_breaks() -> None:
    cache = StateCache()
    busy = RunningJob(job("r", 1, exclusive=True), 0, ("n0",), 100)
    snap = _snap((busy,))
    state = cache.state(snap)
    cases = [
        (job("a", 2, Placement.SCATTER), ("n1", "n1"), "scatter"),
        (job("b", 2, Placement.PACK), ("n1", "n2"), "pack"),
        (job("c", 1), ("n0",), "exclusive"),
        (job("d", 2, Placement.SCATTER), ("n1", "n2"), ""),
    ]
    for j, nodes, why in cases:
        idx, cnt = placement_of(state.arrays, nodes)
        got = state.check(cache.vec(j), idx, cnt, 0)
        assert (why in got) if why else got == "", (j.id, got)


def test_state_release_reopens_exclusive_nodes() -> None:
    cache = StateCache()
    excl = RunningJob(job("x", 1, exclusive=True), 0, ("n0",), 100)
    state = cache.state(_snap((excl,)))
    assert state.n_excl == 1
    state = cache.state(_snap())
    assert state.n_excl == 0 and not state.excl.any()


def test_validator_flags_rule_breaks() -> None:
    runs = [
        Executed(job("a", 2, Placement.SCATTER), 0, 10, ("n1", "n1")),
        Executed(job("b", 2, Placement.PACK), 0, 10, ("n2", "n3")),
        Executed(job("x", 1, exclusive=True), 20, 30, ("n0",)),
        Executed(job("c", 1), 25, 35, ("n0",)),
    ]
    errors = validate_schedule(NODES, runs, PowerCap.unlimited())
    assert any("job a breaks" in e and "scatter" in e for e in errors)
    assert any("job b breaks" in e and "pack" in e for e in errors)
    assert any("exclusive to job x" in e for e in errors)
    ok = [
        Executed(job("x", 1, exclusive=True), 20, 30, ("n0",)),
        Executed(job("c", 1), 30, 35, ("n0",)),  # after the exclusive job ended
    ]
    assert validate_schedule(NODES, ok, PowerCap.unlimited()) == []


def test_simulated_cluster_refuses_rule_breaks() -> None:
    jobs = [
        job("a", 2, Placement.SCATTER, runtime=50),
        job("x", 1, exclusive=True, runtime=50),
        job("c", 1, runtime=50),
    ]
    cluster = SimulatedCluster(list(NODES), jobs, PowerCap.unlimited(), offline=True)
    with pytest.raises(PlacementError, match="distinct") as info:
        cluster.start("a", ["n1", "n1"])
    assert info.value.job_id == "a" and info.value.nodes == ("n1", "n1")
    assert "a" in {j.id for j in cluster.snapshot().queued}  # still pending
    cluster.start("x", ["n0"])
    with pytest.raises(PlacementError, match="exclusive to job x"):
        cluster.start("c", ["n0"])
    cluster.start("c", ["n1"])


def test_simulated_cluster_refuses_exclusive_on_busy_node() -> None:
    jobs = [job("c", 1, runtime=50), job("y", 1, exclusive=True, runtime=5)]
    cluster = SimulatedCluster(list(NODES), jobs, PowerCap.unlimited(), offline=True)
    cluster.start("c", ["n0"])
    with pytest.raises(PlacementError, match="busy"):
        cluster.start("y", ["n0"])
