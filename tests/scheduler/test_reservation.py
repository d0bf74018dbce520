"""A reservation for a starving wide job (``scheduler/reservation.py``): greedy PRB starves a
two-node urgent job under a steady flow of one-node jobs; with the reservation it starts once
it has waited twice its queue's expected wait, and no start delays it."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from wattsched.connectors.simulated import SimulatedCluster
from wattsched.daemon.replay import replay
from wattsched.scheduler.dispatcher import create
from wattsched.scheduler.hybrid.dispatcher import HybridDispatcher
from wattsched.scheduler.mapper import StateCache
from wattsched.scheduler.model import Job, Node, PowerCap, Resources, RunningJob, Snapshot
from wattsched.scheduler.reservation import (
    Arrivals,
    heads_first,
    reserve,
    starving,
    whole_node_accelerators,
)

WHOLE = Resources(cores=16)
NODES = [Node("n1", WHOLE), Node("n2", WHOLE)]


def _wide(submit: int = 600) -> Job:
    return Job(id="w", submit=submit, walltime=3600, units=2, unit=WHOLE, queue="reservation",
               ewt=1800, runtime=60)  # fmt: skip


def _flow(count: int = 40) -> list[Job]:
    """A one-node job every 500 s, each running 1,000 s: both nodes are never idle at once."""
    return [Job(id=f"p{k}", submit=500 * k, walltime=1000, units=1, unit=WHOLE,
                queue="parallel", ewt=21_600, runtime=1000) for k in range(count)]  # fmt: skip


def _start_of_wide(dispatcher: object) -> int:
    cluster = SimulatedCluster(NODES, [_wide(), *_flow()], PowerCap.constant(10_000.0),
                               record_power=False)  # fmt: skip
    res = replay(cluster, dispatcher)  # type: ignore[arg-type]
    assert res.start_errors == 0 and cluster.cap_violation_s == 0
    assert all(r.start is not None for r in cluster.records.values())
    start = cluster.records["w"].start
    assert start is not None
    return start


def test_greedy_prb_starves_the_wide_job_the_reservation_does_not() -> None:
    assert _start_of_wide(create("prb")) >= 19_000  # only once the flow has dried up
    # Starving from 600 + 2 x 1,800; then the jobs on its nodes end within 1,000 s.
    assert 4_200 <= _start_of_wide(create("prb-reserve")) <= 5_200


def _hybrid(reserve: bool) -> HybridDispatcher:
    return HybridDispatcher(mode="online", workers=1, cycle_budget_s=0.05, predictor=False,
                            reserve=reserve)  # fmt: skip


def test_the_online_hybrid_with_reserve_starts_the_wide_job_too() -> None:
    assert _start_of_wide(_hybrid(reserve=False)) >= 19_000  # its fill is greedy
    assert _start_of_wide(_hybrid(reserve=True)) <= 5_200


def _snapshot(now: int) -> Snapshot:
    p0, p1 = _flow(2)
    running = (RunningJob(p0, 0, ("n1",), 1000), RunningJob(p1, 500, ("n2",), 1500))
    return Snapshot(now, tuple(NODES), running, (_wide(), *_flow(6)[2:]),
                    PowerCap.constant(10_000.0))  # fmt: skip


def test_only_a_wide_job_that_waited_long_enough_starves() -> None:
    walltime = lambda j: j.walltime  # noqa: E731
    assert starving(_snapshot(600), walltime) == []  # waited 0 s of its 3,600
    assert [j.id for j in starving(_snapshot(4_200), walltime)] == ["w"]
    assert starving(_snapshot(4_200), walltime, wide=3) == []


def test_a_start_that_would_delay_the_head_is_refused() -> None:
    snap = _snapshot(900)  # n1 frees at 1,000, n2 at 1,500: the head's shadow time
    cache = StateCache()
    state = cache.state(snap)
    res = reserve(snap, cache, state, _wide())
    assert res is not None and res.shadow == 1500 and sorted(res.nodes.tolist()) == [0, 1]
    p = cache.vec(_flow(3)[2])
    n1 = state.arrays.names.index("n1")
    idx, cnt = np.array([n1]), np.array([1])
    assert res.admits(p, idx, cnt, 900, 600)  # ends by 1,500
    assert not res.admits(p, idx, cnt, 900, 1000)  # runs past it on the head's node
    out, found = heads_first(snap, cache, state, lambda j: j.walltime)
    assert out == [] and found is None  # not starving yet at 900


def _busy_snapshot() -> Snapshot:
    """At 4,200 the wide job starves; both nodes are busy until 5,000 and 5,100."""
    p0, p1 = _flow(2)
    running = (RunningJob(p0, 4000, ("n1",), 5000), RunningJob(p1, 4100, ("n2",), 5100))
    return Snapshot(4_200, tuple(NODES), running, (_wide(), *_flow(12)[9:]),
                    PowerCap.constant(10_000.0))  # fmt: skip


def test_prb_reserve_publishes_its_reservation_as_a_later_start() -> None:
    plan = create("prb-reserve").plan(_busy_snapshot())
    head = plan.by_job()["w"]
    assert head.start == 5_100 and sorted(head.nodes) == ["n1", "n2"]
    assert list(plan.starts_now()) == []  # nothing fits now; the head is not started
    assert plan.stats.extra == {"reserved": "w", "shadow": 5_100}


def test_the_hybrid_publishes_its_reservation_too() -> None:
    plan = _hybrid(reserve=True).plan(_busy_snapshot())
    head = plan.by_job()["w"]
    assert head.start == 5_100 and sorted(head.nodes) == ["n1", "n2"]
    assert plan.stats.extra["reserved"] == "w" and plan.stats.extra["shadow"] == 5_100
    assert "w" not in _hybrid(reserve=False).plan(_busy_snapshot()).by_job()


def test_the_value_test_ranks_against_the_recent_arrivals() -> None:
    walltime = lambda j: j.walltime  # noqa: E731
    snap = _snapshot(4_200)
    assert [j.id for j in starving(snap, walltime)] == ["w"]  # against the queue
    small = [Job(id=f"d{k}", submit=100 * k, walltime=60, units=1, unit=Resources(cores=1),
                 queue="debug", ewt=3600, runtime=60) for k in range(10)]  # fmt: skip
    assert starving(snap, walltime, reference=small) == []  # worth less than what arrived
    arrivals = Arrivals(size=4)
    arrivals.observe(snap)  # 5 queued: w, p2 .. p5
    arrivals.observe(snap)  # still queued, known: not new again
    assert [j.id for j in arrivals.jobs] == ["p2", "p3", "p4", "p5"]
    cap = PowerCap.constant(10_000.0)
    arrivals.observe(Snapshot(4_300, tuple(NODES), (), (_wide(), *small[:2]), cap))
    assert [j.id for j in arrivals.jobs] == ["p4", "p5", "d0", "d1"]  # the last 4 to arrive
    arrivals.observe(Snapshot(4_400, tuple(NODES), (), (), cap))
    arrivals.observe(Snapshot(4_500, tuple(NODES), (), (_wide(),), cap))
    assert [j.id for j in arrivals.jobs][-1] == "w"  # gone, then queued again: requeued


def _whole_node_job() -> Job:
    return Job(id="u", submit=600, walltime=300, units=1, unit=WHOLE, queue="reservation",
               ewt=1800, runtime=60)  # fmt: skip


def _core_flow(count: int = 100) -> list[Job]:
    """A one-core job every 70 s, each running 1,000 s: 14-15 of the node's 16 cores always
    busy, the node never empty until the flow dries up."""
    return [Job(id=f"c{k}", submit=70 * k, walltime=1000, units=1, unit=Resources(cores=1),
                queue="parallel", ewt=21_600, runtime=1000) for k in range(count)]  # fmt: skip


def test_a_one_unit_whole_node_job_is_wide_with_wide_cores() -> None:
    walltime = lambda j: j.walltime  # noqa: E731
    snap = Snapshot(4_200, (NODES[0],), (), (_whole_node_job(), *_core_flow(60)[55:]),
                    PowerCap.constant(10_000.0))  # fmt: skip
    assert starving(snap, walltime) == []  # one unit: not wide
    assert [j.id for j in starving(snap, walltime, wide_cores=16)] == ["u"]
    assert starving(snap, walltime, wide_cores=17) == []


def _hybrid_start_of(job: Job, node: Node, flow: list[Job], **params: object) -> int:
    """When the online hybrid (``params``) starts ``job`` on ``node`` beside ``flow``."""
    cluster = SimulatedCluster([node], [job, *flow], PowerCap.constant(10_000.0),
                               record_power=False)  # fmt: skip
    hybrid = HybridDispatcher(mode="online", workers=1, cycle_budget_s=0.05, predictor=False,
                              **params)  # fmt: skip
    res = replay(cluster, hybrid)
    assert res.start_errors == 0 and cluster.cap_violation_s == 0
    assert all(r.start is not None for r in cluster.records.values())
    got = cluster.records[job.id].start
    assert got is not None
    return got


def test_the_hybrid_reserves_a_node_for_a_starving_whole_node_job() -> None:
    def start(reserve_cores: int | None) -> int:
        return _hybrid_start_of(_whole_node_job(), NODES[0], _core_flow(),
                                reserve_cores=reserve_cores)  # fmt: skip

    assert start(0) >= 6_500  # only once the flow has dried up (7,000 s)
    # Starving from 600 + 2 x 1,800; then the one-core jobs on its node end within 1,000 s.
    assert 4_200 <= (reserved := start(16)) <= 5_300
    assert start(None) == reserved  # the default: the largest node's cores (16), a whole node


GPU_NODE = Node("g1", Resources(cores=16, gpus=2))


def _two_gpu_job() -> Job:
    return Job(id="g", submit=600, walltime=600, units=1, unit=Resources(cores=2, gpus=2),
               queue="debug", ewt=1800, runtime=12)  # fmt: skip


def _gpu_flow(count: int = 20) -> list[Job]:
    """A one-GPU job every 500 s, each running 1,000 s: both of the node's GPUs busy (but
    for the instant one ends and the next arrives) until the flow dries up (10,500 s)."""
    return [Job(id=f"q{k}", submit=500 * k, walltime=1000, units=1,
                unit=Resources(cores=1, gpus=1), queue="parallel", ewt=21_600, runtime=1000)
            for k in range(count)]  # fmt: skip


def test_a_job_that_needs_all_of_a_nodes_gpus_is_wide_with_also_wide() -> None:
    walltime = lambda j: j.walltime  # noqa: E731
    snap = Snapshot(4_200, (GPU_NODE, NODES[0]), (), (_two_gpu_job(), *_gpu_flow()[8:]),
                    PowerCap.constant(10_000.0))  # fmt: skip
    accel = whole_node_accelerators(snap.nodes)
    assert accel(_two_gpu_job()) and not accel(_gpu_flow(1)[0])
    assert not whole_node_accelerators(NODES)(_two_gpu_job())  # no node has a GPU: none wide
    assert starving(snap, walltime) == []  # one unit, two cores: not wide
    assert [j.id for j in starving(snap, walltime, also_wide=accel)] == ["g"]
    assert starving(replace(snap, time=3_000), walltime, also_wide=accel) == []  # not waited


def test_the_hybrid_reserves_both_gpus_for_a_starving_two_gpu_job() -> None:
    def start(reserve_accel: bool) -> int:
        return _hybrid_start_of(_two_gpu_job(), GPU_NODE, _gpu_flow(), reserve_accel=reserve_accel)

    assert start(False) >= 9_500  # only once the flow has dried up
    # Starving from 600 + 2 x 1,800; then the one-GPU job on the other GPU ends within 1,000 s.
    assert 4_200 <= start(True) <= 5_300
