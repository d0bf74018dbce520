"""EASY's reservation in one compiled call (``ClusterState.place_after``) against the steps it
replaces: copy, release the ended jobs one by one, place, commit.

It applies where no node holds more than one unit (each unit a whole node, as on KTH-SP2),
there is no cap over the head's run and no exclusive job: then releasing a node's one unit
gives its row back whole. Random states (whole-node and shared nodes, unusable nodes, rules)
check the placement and the free resources after, bit for bit, and that a refusal leaves the
state as it was; random replays check every plan against EASY reserving job by job.
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wattsched.connectors.simulated import SimulatedCluster
from wattsched.daemon.replay import replay
from wattsched.scheduler.dispatcher import Dispatcher
from wattsched.scheduler.easy import EASYDispatcher
from wattsched.scheduler.mapper import ClusterState
from wattsched.scheduler.model import (
    Job,
    Node,
    NodePowerModel,
    Placement,
    Plan,
    PowerCap,
    PowerState,
    Resources,
    Snapshot,
)
from wattsched.scheduler.node_arrays import JobVec, NodeArrays

_RULES = [Placement.FREE, Placement.FREE, Placement.SCATTER, Placement.PACK]


def _job(jid: str, units: int, cores: int, mem: int, rule: Placement, excl: bool = False) -> Job:
    return Job(
        jid, 0, 100, units, Resources(cores=cores, mem_mb=mem), placement=rule, exclusive=excl
    )


@st.composite
def states(draw: st.DrawFn) -> tuple[ClusterState, list[tuple[JobVec, np.ndarray, np.ndarray]]]:
    n = draw(st.integers(1, 12))
    cores = draw(st.sampled_from([1, 1, 2]))
    nodes = tuple(
        Node(
            f"n{i}",
            Resources(cores=cores, mem_mb=100),
            NodePowerModel(idle_w=10.0, core_w=5.0),
            state=draw(st.sampled_from([PowerState.ON] * 5 + [PowerState.OFF])),
        )
        for i in range(n)
    )
    arrays = NodeArrays(nodes)
    cap = draw(st.sampled_from([PowerCap.unlimited(), PowerCap.constant(1e9)]))
    state = ClusterState(arrays, cap)
    running = []
    for j in range(draw(st.integers(0, 10))):
        job = _job(
            str(j),
            draw(st.integers(1, 3)),
            draw(st.integers(1, cores)),
            draw(st.sampled_from([0, 0, 30, 100])),
            draw(st.sampled_from(_RULES)),
            draw(st.sampled_from([False] * 7 + [True])),
        )
        jv = JobVec.of(job, arrays)
        placed = state.place(jv, arrays.listed_order, 0)
        if placed is not None:
            state.commit(jv, *placed)
            running.append((jv, *placed))
    return state, running


def _same(a: ClusterState, b: ClusterState) -> bool:
    return (
        (a.free == b.free).all()
        and (a.busy_units == b.busy_units).all()
        and a.power_w == b.power_w
        and a.free_total_l == b.free_total_l
    )


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), st_run=states())
def test_place_after_is_release_place_commit(data: st.DataObject, st_run: tuple) -> None:
    state, running = st_run
    arrays = state.arrays
    picks = data.draw(st.lists(st.booleans(), min_size=len(running), max_size=len(running)))
    ended = [p for p, pick in zip(running, picks, strict=True) if pick]
    head = _job(
        "h",
        data.draw(st.integers(1, 4)),
        data.draw(st.integers(1, 2)),
        data.draw(st.sampled_from([0, 50, 100, 150])),
        data.draw(st.sampled_from(_RULES)),
        data.draw(st.sampled_from([False] * 5 + [True])),
    )
    jv = JobVec.of(head, arrays)
    before = state.copy()
    got = state.place_after(jv, [p[1] for p in ended], arrays.listed_order, 0)
    assert _same(state, before)  # left unchanged, whatever the answer
    future = state.copy()
    future.release_many(ended)
    placed = future.place(jv, arrays.listed_order, 0)
    applies = (
        not jv.exclusive
        and not state.exclusive_jobs
        and (state.busy_units <= 1).all()
        and state.cap_limit(0, jv.walltime) == float("inf")
    )
    if got is None:
        assert not applies
        return
    assert applies
    idx, cnt, spare = got
    if placed is None:
        assert len(idx) == 0 and len(cnt) == 0
        return
    future.commit(jv, *placed)
    assert idx.tolist() == placed[0].tolist() and cnt.tolist() == placed[1].tolist()
    assert spare.tolist() == future.free.tolist()


def test_place_after_refuses_under_a_cap_and_on_shared_nodes() -> None:
    nodes = tuple(
        Node(f"n{i}", Resources(cores=2, mem_mb=100), NodePowerModel(idle_w=10.0, core_w=5.0))
        for i in range(3)
    )
    arrays = NodeArrays(nodes)
    one = JobVec.of(_job("a", 1, 1, 0, Placement.FREE), arrays)
    capped = ClusterState(arrays, PowerCap.constant(1000.0))
    assert capped.place_after(one, [], arrays.listed_order, 0) is None
    state = ClusterState(arrays, PowerCap.unlimited())
    got = state.place_after(one, [], arrays.listed_order, 0)
    assert got is not None and got[0].tolist() == [0]
    four = JobVec.of(_job("c", 4, 2, 0, Placement.FREE), arrays)
    got = state.place_after(four, [], arrays.listed_order, 0)
    assert got is not None and len(got[0]) == 0  # applies, does not fit
    two = JobVec.of(_job("b", 2, 1, 0, Placement.PACK), arrays)
    state.commit(two, *state.place(two, arrays.listed_order, 0))  # two units on n0
    assert state.place_after(one, [], arrays.listed_order, 0) is None


class Both(Dispatcher):
    """EASY reserving in one call and job by job; records the cycles whose plans differ."""

    def __init__(self, full_plan: bool) -> None:
        super().__init__()
        # The pool pass (test_easy_pool.py) would plan most of these cycles: off here.
        self.fast = EASYDispatcher(full_plan=full_plan, exact_pool=False)
        self.slow = EASYDispatcher(full_plan=full_plan, whole_nodes=False, exact_pool=False)
        self.diffs: list[tuple[Plan, Plan]] = []
        self.reserved = 0

    def plan(self, snap: Snapshot) -> Plan:
        got = self.fast.plan(snap)
        want = self.slow.plan(snap)
        if got.assignments != want.assignments:
            self.diffs.append((got, want))
        self.reserved += any(a.start > snap.time for a in got.assignments)
        return got


@st.composite
def whole_node_replays(draw: st.DrawFn) -> tuple[list[Node], list[Job], PowerCap]:
    n = draw(st.integers(1, 16))
    cores = draw(st.sampled_from([1, 1, 1, 2]))
    nodes = [
        Node(f"n{i}", Resources(cores=cores, mem_mb=128), NodePowerModel(idle_w=95, core_w=95.7))
        for i in range(n)
    ]
    jobs = []
    t = 0
    for j in range(draw(st.integers(1, 40))):
        t += draw(st.integers(0, 30))
        wall = draw(st.integers(1, 300))
        jobs.append(
            Job(
                str(j),
                t,
                wall,
                draw(st.integers(1, n)),
                Resources(cores=draw(st.integers(1, cores)), mem_mb=draw(st.sampled_from([0, 64]))),
                runtime=draw(st.integers(0, wall)),
                placement=draw(st.sampled_from(_RULES[:3])),
                exclusive=draw(st.sampled_from([False] * 9 + [True])),
            )
        )
    cap = draw(st.sampled_from([PowerCap.unlimited(), PowerCap.constant(95.0 * n + 300)]))
    return nodes, jobs, cap


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(inst=whole_node_replays(), full_plan=st.booleans())
def test_easy_plans_as_when_reserving_job_by_job(inst: tuple, full_plan: bool) -> None:
    nodes, jobs, cap = inst
    both = Both(full_plan)
    result = replay(SimulatedCluster(nodes, jobs, cap), both, max_cycles=10_000)
    assert both.diffs == []
    assert result.start_errors == 0


def test_the_comparison_reserves_in_one_call() -> None:
    """Not vacuous: on 1-core nodes the heads are reserved by the one call."""
    rng = np.random.default_rng(5)
    nodes = [
        Node(f"n{i}", Resources(cores=1, mem_mb=128), NodePowerModel(idle_w=95, core_w=95.7))
        for i in range(20)
    ]
    jobs = [
        Job(
            str(j),
            3 * j,
            int(rng.integers(10, 400)),
            int(rng.integers(1, 12)),
            Resources(cores=1),
            runtime=int(rng.integers(5, 300)),
        )
        for j in range(200)
    ]
    both = Both(full_plan=False)
    calls = []
    place_after = ClusterState.place_after

    def counted(self: ClusterState, *a: object) -> object:
        got = place_after(self, *a)  # type: ignore[arg-type]
        calls.append(got is not None)
        return got

    ClusterState.place_after = counted  # type: ignore[method-assign]
    try:
        replay(SimulatedCluster(nodes, jobs, PowerCap.unlimited()), both)
    finally:
        ClusterState.place_after = place_after  # type: ignore[method-assign]
    assert both.diffs == []
    assert both.reserved > 20 and sum(calls) > 20
