"""EASY's reservation and backfill shortcuts decide as the plain loops they replaced.

:class:`Reference` is EASY with the reservation search and the backfill loop as they were
before (every end time tried, every candidate tried), kept here as the oracle. Both plan every
cycle of random replays (caps, placement rules, exclusive jobs, many jobs of one shape, with
and without the full plan); every plan, the head's reservation included, must be the same.
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wattsched.connectors.simulated import SimulatedCluster
from wattsched.daemon.replay import replay
from wattsched.scheduler.dispatcher import Dispatcher
from wattsched.scheduler.easy import (
    EASYDispatcher,
    _Reservation,
    _room_now_and_spare,
    _units_in,
)
from wattsched.scheduler.easy_reserve import cap_times
from wattsched.scheduler.mapper import ClusterState, placement_of
from wattsched.scheduler.model import (
    Assignment,
    Job,
    Node,
    NodePowerModel,
    Placement,
    Plan,
    PowerCap,
    Resources,
    Snapshot,
)
from wattsched.scheduler.node_arrays import EPS_W, IntArray, JobVec


class Reference(EASYDispatcher):
    """EASY with the reservation search and the backfill loop before the shortcuts."""

    def __init__(self, full_plan: bool = False) -> None:
        super().__init__(full_plan=full_plan, exact_pool=False)  # the general path, below

    def _reserve(
        self,
        state: ClusterState,
        head: Job,
        now: int,
        ends: list[tuple[int, str]],
        started: dict[str, tuple[JobVec, IntArray, IntArray]],
    ) -> _Reservation | None:
        jv = self.cache.vec(head)
        future = state.copy()
        order = state.order_index()
        placements = self.cache.running_placements()
        pending = sorted(ends)
        times = sorted({t for t, _ in pending} | cap_times(state.cap, now, pending))
        need = jv.total.tolist()
        pooled = list(future.free_total_l)
        k = 0
        released = 0
        for t in times:
            while k < len(pending) and pending[k][0] <= t:
                pjv = (
                    started[pending[k][1]]
                    if pending[k][1] in started
                    else placements[pending[k][1]]
                )[0]
                pooled = [a + b for a, b in zip(pooled, pjv.total_l, strict=True)]
                k += 1
            if any(n > p for n, p in zip(need, pooled, strict=True)):
                continue
            batch = []
            while released < k:
                jid = pending[released][1]
                released += 1
                batch.append(started[jid] if jid in started else placements[jid])
            future.release_many(batch)
            placed = future.place(jv, order, t)
            if placed is None:
                continue
            future.commit(jv, *placed)
            spare_w = future.cap_limit(t, head.walltime) - future.power_w
            spare = future.free.copy()
            if head.exclusive:
                spare[placed[0]] = 0
            return _Reservation(t, spare, spare_w, future.names_for(*placed), placed[0])
        return None

    def _backfill(
        self,
        state: ClusterState,
        rest: list[Job],
        now: int,
        order: IntArray,
        res: _Reservation | None,
    ) -> list[Assignment]:
        out: list[Assignment] = []
        for job in rest:
            jv = self.cache.vec(job)
            if state.quick_reject(jv):
                continue
            short = res is None or now + job.walltime <= res.shadow
            if short:
                placed = state.place(jv, order, now)
            else:
                assert res is not None
                if jv.min_w * (1 - 1e-9) > res.power_spare + EPS_W:
                    continue
                spare_total = res.spare.sum(axis=0).tolist()
                if any(a > b for a, b in zip(jv.total_l, spare_total, strict=True)):
                    continue
                both = _room_now_and_spare(state, res.spare)
                if any(a > b for a, b in zip(jv.total_l, both, strict=True)):
                    continue
                limit_k = _units_in(res.spare, jv)
                if jv.exclusive:
                    limit_k[res.idx] = 0
                placed = state.place(jv, order, now, limit_k=limit_k)
                if placed is not None:
                    idx, cnt = placed
                    worst = float(np.dot(state.unit_watts(jv, idx), cnt)) + float(
                        state.arrays.first_core_w[idx].sum()
                    )
                    if worst > res.power_spare + EPS_W:
                        placed = None
            if placed is None:
                continue
            idx, cnt = placed
            state.commit(jv, idx, cnt)
            out.append(Assignment(job.id, now, state.names_for(idx, cnt)))
            if not short and res is not None:
                res.spare[idx] -= cnt[:, None] * jv.req
                res.power_spare -= float(np.dot(state.unit_watts(jv, idx), cnt)) + float(
                    state.arrays.first_core_w[idx].sum()
                )
        return out


class Both(Dispatcher):
    """Plans with EASY and with the reference; records every cycle where they differ."""

    def __init__(self, full_plan: bool) -> None:
        super().__init__()
        self.fast = EASYDispatcher(full_plan=full_plan)
        self.ref = Reference(full_plan=full_plan)
        self.diffs: list[tuple[Plan, Plan]] = []
        self.reserved = 0
        self.backfilled = 0

    def plan(self, snap: Snapshot) -> Plan:
        got = self.fast.plan(snap)
        want = self.ref.plan(snap)
        if got.assignments != want.assignments:
            self.diffs.append((got, want))
        later = any(a.start > snap.time for a in got.assignments)
        self.reserved += later
        self.backfilled += later and any(a.start == snap.time for a in got.assignments)
        return got


@st.composite
def instances(draw: st.DrawFn) -> tuple[list[Node], list[Job], PowerCap]:
    n_nodes = draw(st.integers(1, 6))
    nodes = [
        Node(
            f"n{i}",
            Resources(cores=draw(st.sampled_from([1, 2, 4, 8])), mem_mb=4000, gpus=i % 2),
            NodePowerModel(
                idle_w=10.0,
                first_core_w=draw(st.sampled_from([0.0, 15.0])),
                core_w=draw(st.sampled_from([1.0, 5.0])),
                gpu_w=40.0,
            ),
        )
        for i in range(n_nodes)
    ]
    cores = min(n.capacity.cores for n in nodes)
    # Few shapes, many jobs: jobs of one kind fail together (the backfill's shortcut).
    shapes = draw(
        st.lists(
            st.tuples(st.integers(1, cores), st.integers(0, 1), st.integers(1, 3)),
            min_size=1,
            max_size=3,
        )
    )
    jobs = []
    t = 0
    for j in range(draw(st.integers(1, 30))):
        t += draw(st.integers(0, 40))
        c, g, units = draw(st.sampled_from(shapes))
        if g and not any(n.capacity.gpus for n in nodes):
            g = 0
        wall = draw(st.integers(1, 300))
        jobs.append(
            Job(
                str(j),
                t,
                wall,
                units if units <= n_nodes * max(1, cores // c) else 1,
                Resources(cores=c, mem_mb=100, gpus=g),
                unit_power_w=draw(st.sampled_from([None, None, 3.0])),
                runtime=draw(st.integers(0, wall)),
                placement=draw(
                    st.sampled_from([Placement.FREE, Placement.FREE, Placement.SCATTER])
                ),
                exclusive=draw(st.sampled_from([False, False, False, True])),
            )
        )
    static = 10.0 * n_nodes
    worst = max(j.units * (3.0 + 5.0 * j.unit.cores + 40.0 * j.unit.gpus + 15.0) for j in jobs)
    kind = draw(st.sampled_from(["none", "const", "steps"]))
    if kind == "none":
        cap = PowerCap.unlimited()
    elif kind == "const":
        cap = PowerCap.constant(static + worst + draw(st.floats(0, 200)))
    else:
        base = static + worst + draw(st.floats(0, 200))
        cap = PowerCap(((0, base + 150), (draw(st.integers(1, 400)), base), (800, base + 60)))
    return nodes, jobs, cap


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(inst=instances(), full_plan=st.booleans())
def test_easy_plans_as_the_plain_loops(inst: tuple, full_plan: bool) -> None:
    nodes, jobs, cap = inst
    both = Both(full_plan)
    result = replay(SimulatedCluster(nodes, jobs, cap), both, max_cycles=10_000)
    assert both.diffs == []
    assert result.start_errors == 0


def test_the_oracle_sees_reservations_and_backfills() -> None:
    """The comparison is not vacuous: the replays reserve for heads and backfill past them."""
    rng = np.random.default_rng(3)
    nodes = [
        Node(f"n{i}", Resources(cores=4, mem_mb=4000), NodePowerModel(idle_w=10, core_w=2))
        for i in range(4)
    ]
    jobs = [
        Job(
            str(j),
            2 * j,
            int(rng.integers(10, 400)),
            int(rng.integers(1, 4)),
            Resources(cores=int(rng.choice([1, 2, 4]))),
            runtime=int(rng.integers(5, 300)),
        )
        for j in range(200)
    ]
    both = Both(full_plan=False)
    replay(SimulatedCluster(nodes, jobs, PowerCap.unlimited()), both)
    assert both.diffs == []
    assert both.reserved > 10 and both.backfilled > 5


class Placements(EASYDispatcher):
    """EASY that checks, at every cycle, the running jobs' placements its cache took from its
    own planned starts against those read from the node names."""

    def __init__(self) -> None:
        super().__init__()
        self.wrong: list[str] = []
        self.reused = 0

    def plan(self, snap: Snapshot) -> Plan:
        planned = dict(self.cache._planned)
        self.cache.state(snap)
        arrays = self.cache._arrays
        assert arrays is not None
        for rj in snap.running:
            _, idx, cnt = self.cache.running_placements()[rj.job.id]
            self.reused += rj.job.id in planned and planned[rj.job.id][1] is idx
            want = placement_of(arrays, rj.nodes)
            if idx.tolist() != want[0].tolist() or cnt.tolist() != want[1].tolist():
                self.wrong.append(rj.job.id)
        return super().plan(snap)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(inst=instances())
def test_planned_placements_are_the_named_nodes(inst: tuple) -> None:
    nodes, jobs, cap = inst
    easy = Placements()
    replay(SimulatedCluster(nodes, jobs, cap), easy, max_cycles=10_000)
    assert easy.wrong == []


def test_planned_placements_are_reused() -> None:
    """The check above is not vacuous: started jobs' placements come from the plan."""
    nodes = [
        Node(f"n{i}", Resources(cores=4, mem_mb=4000), NodePowerModel(idle_w=10, core_w=2))
        for i in range(3)
    ]
    jobs = [Job(str(j), j, 100, 1 + j % 3, Resources(cores=1), runtime=50) for j in range(20)]
    easy = Placements()
    replay(SimulatedCluster(nodes, jobs, PowerCap.unlimited()), easy)
    assert easy.wrong == []
    assert easy.reused >= 10
