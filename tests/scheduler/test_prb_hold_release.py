"""PRB on a connector that keeps its job objects (the simulated cluster): a job released from
a hold is tried at the very next cycle, and a job put on hold is not planned."""

from __future__ import annotations

from wattsched.connectors.simulated import SimulatedCluster
from wattsched.daemon.controller import run_cycle
from wattsched.scheduler import dispatcher as registry
from wattsched.scheduler.model import Job, Node, PowerCap, Resources


def _cluster(cores: int = 2, run_s: int = 10_000) -> SimulatedCluster:
    """One node of ``cores`` cores and three one-core jobs of ``run_s`` seconds, all at 0."""
    nodes = [Node("n0", Resources(cores=cores))]
    jobs = [Job(str(k), 0, run_s, 1, Resources(cores=1), runtime=run_s) for k in (1, 2, 3)]
    return SimulatedCluster(nodes, jobs, PowerCap.unlimited())


def test_a_released_job_starts_at_the_next_cycle() -> None:
    cluster, prb = _cluster(), registry.create("prb")
    cluster.hold("2")
    cluster.hold("3")
    first = run_cycle(cluster, prb)
    assert [a.job_id for a in first.started] == ["1"]
    assert not run_cycle(cluster, prb).started  # nothing changed: nothing starts
    # Job 2 is in the middle of the queue (not at its end, where a new object is easy to see);
    # nothing else changes: no arrival, start, end or node change.
    cluster.release("2")
    assert [a.job_id for a in run_cycle(cluster, prb).started] == ["2"]


def test_a_job_put_on_hold_is_not_planned() -> None:
    cluster, prb = _cluster(cores=1, run_s=100), registry.create("prb")
    assert [a.job_id for a in run_cycle(cluster, prb).started] == ["1"]
    cluster.hold("2")  # the next in line, held while it waits
    assert cluster.advance()  # job 1 ends: the node is free
    cycle = run_cycle(cluster, prb)
    assert "2" not in {a.job_id for a in cycle.plan.assignments}
    assert [a.job_id for a in cycle.started] == ["3"]
