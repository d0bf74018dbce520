"""The simulated cluster's snapshot queue (issue 11): kept as a list beside the queue's dict
and edited in place (arrivals appended, starts removed and holds replaced at the place found
by bisection over arrival numbers), it must be, object for object and in order, the queue as
the dict holds it, over random arrivals, starts, holds, releases and ends. And the heap of
the queued jobs' cores (:meth:`~wattsched.connectors.simulated.SimulatedCluster.nothing_fits`,
jobs that left dropped lazily) must answer as a scan of the queue."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from wattsched.connectors.base import ConnectorError
from wattsched.connectors.simulated import SimulatedCluster
from wattsched.scheduler.model import Job, Node, NodePowerModel, PowerCap, Resources


def _cluster(submits: list[int], runtimes: list[int]) -> SimulatedCluster:
    nodes = [Node(f"n{i}", Resources(cores=2), NodePowerModel(idle_w=50)) for i in range(2)]
    jobs = [
        Job(str(k), s, 1_000, 1 + k % 2, Resources(cores=1 + k % 3 // 2), runtime=r)
        for k, (s, r) in enumerate(zip(submits, runtimes, strict=True))
    ]
    return SimulatedCluster(nodes, jobs, PowerCap.unlimited())


def _check(cluster: SimulatedCluster) -> None:
    snap = cluster.snapshot()
    assert snap.queued_index is not None
    want = tuple(snap.queued_index.values())
    assert len(snap.queued) == len(want)
    assert all(a is b for a, b in zip(snap.queued, want, strict=True))
    assert snap.queued is cluster.snapshot().queued  # kept while nothing changed
    free = cluster.free_usable()[0]
    scan = bool(want) and all(j.unit.cores * j.units > free for j in want)
    assert cluster.nothing_fits() is scan


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(0, 50), min_size=1, max_size=30),
    st.lists(st.tuples(st.sampled_from("aasssshrn"), st.integers(0, 10_000)), max_size=80),
    st.data(),
)
def test_the_snapshot_queue_is_the_queue_in_order(
    submits: list[int], ops: list[tuple[str, int]], data: st.DataObject
) -> None:
    runtimes = data.draw(st.lists(st.integers(1, 40), min_size=len(submits), max_size=len(submits)))
    cluster = _cluster(submits, runtimes)
    _check(cluster)
    for op, pick in ops:
        queued = cluster.snapshot().queued
        if op == "a":
            if not cluster.advance():
                break
        elif queued:
            job = queued[pick % len(queued)]
            try:
                if op == "s":
                    cluster.start(job.id, [f"n{(pick + u) % 2}" for u in range(job.units)])
                elif op == "h":
                    cluster.hold(job.id)
                elif op == "r":
                    cluster.release(job.id)
            except ConnectorError:
                pass  # a full node or a held job: refused, nothing changed
        _check(cluster)
