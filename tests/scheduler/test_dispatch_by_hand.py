"""Replays whose schedules and metrics were worked out by hand."""

from __future__ import annotations

import pytest

from wattsched.connectors.simulated import SimulatedCluster
from wattsched.daemon.replay import replay
from wattsched.daemon.replay_output import outcomes
from wattsched.scheduler import dispatcher as registry
from wattsched.scheduler.metrics import schedule_metrics
from wattsched.scheduler.model import Job, Node, NodePowerModel, PowerCap, Resources

POWER = NodePowerModel(idle_w=10, first_core_w=0, core_w=5, transition_w=10)


def two_nodes() -> list[Node]:
    return [Node(f"n{i}", Resources(cores=4), POWER) for i in range(2)]


def four_jobs() -> list[Job]:
    def job(i: str, submit: int, units: int, cores: int, wall: int, run: int, ewt: int) -> Job:
        return Job(i, submit, wall, units, Resources(cores=cores), ewt=ewt, runtime=run)

    return [
        job("A", 0, 1, 4, 100, 100, 3600),
        job("B", 1, 2, 4, 100, 50, 3600),  # needs both nodes
        job("C", 2, 1, 2, 50, 50, 1800),  # short, high-priority queue
        job("D", 3, 1, 4, 200, 200, 3600),
    ]


# Starts worked out by hand (see the comments): FIFO blocks behind B; EASY backfills C before
# B's reservation at 100 but not D (it would delay B); PRB has no reservation, starts C then D
# as soon as they fit, and B waits until D ends at 252.
EXPECTED = {
    "fifo": {"A": 0, "B": 100, "C": 150, "D": 150},
    "easy": {"A": 0, "B": 100, "C": 2, "D": 150},
    "prb": {"A": 0, "B": 252, "C": 2, "D": 52},
}
# mean wait, mean weighted wait (max EWT 3600: C weighs 2), makespan
EXPECTED_METRICS = {
    "fifo": (98.5, 135.5, 350),
    "easy": (61.5, 61.5, 350),
    "prb": (75.0, 75.0, 302),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_four_jobs_two_nodes(name: str) -> None:
    cluster = SimulatedCluster(two_nodes(), four_jobs())
    replay(cluster, registry.create(name))
    starts = {jid: r.start for jid, r in cluster.records.items()}
    assert starts == EXPECTED[name]
    m = schedule_metrics(outcomes(cluster))
    wait, weighted, makespan = EXPECTED_METRICS[name]
    assert m["mean_wait_s"] == pytest.approx(wait)
    assert m["mean_weighted_wait"] == pytest.approx(weighted)
    assert m["makespan_s"] == makespan


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_power_cap_serialises_jobs(name: str) -> None:
    # One 4-core node, 10 W idle + 5 W a core, cap 20 W: only two cores may be busy at once.
    node = Node("n0", Resources(cores=4), POWER)
    jobs = [Job(x, 0, 10, 1, Resources(cores=2), runtime=10) for x in ("X", "Y")]
    cluster = SimulatedCluster([node], jobs, PowerCap.constant(20))
    replay(cluster, registry.create(name))
    assert cluster.records["X"].start == 0
    assert cluster.records["Y"].start == 10
    assert cluster.peak_power_w == pytest.approx(20)
    assert cluster.cap_violation_s == 0
    # Energy: 20 W for 20 s.
    assert cluster.energy_j == pytest.approx(400)


def test_cap_step_down_is_respected() -> None:
    # The cap drops from 100 W to 20 W at t=5: a 10 s job needing 30 W must not start at 0.
    node = Node("n0", Resources(cores=4), POWER)
    jobs = [Job("Z", 0, 10, 1, Resources(cores=4), runtime=10)]
    cap = PowerCap(((0, 100.0), (5, 20.0), (50, 100.0)))
    cluster = SimulatedCluster([node], jobs, cap)
    replay(cluster, registry.create("prb"))
    assert cluster.records["Z"].start == 50
    assert cluster.cap_violation_s == 0


@pytest.mark.parametrize("name", ["prb", "easy", "fifo", "hybrid"])
def test_a_rule_that_fails_does_not_hold_back_another_rule_of_the_same_shape(name: str) -> None:
    # One node of 2 cores. A (two 1-core units, one per node: scatter) cannot be placed; B,
    # the same shape with the free rule, fits on the one node and starts when it arrives (PRB's
    # pass used to skip B as "a shape that failed"). FIFO, the control, blocks behind A.
    from wattsched.scheduler.model import Placement

    node = [Node("n0", Resources(cores=2), POWER)]
    jobs = [
        Job("A", 0, 100, 2, Resources(cores=1), runtime=100, placement=Placement.SCATTER),
        Job("B", 1, 100, 2, Resources(cores=1), runtime=100),
    ]
    cluster = SimulatedCluster(node, jobs)
    replay(cluster, registry.create(name), max_cycles=3)
    starts = {jid: r.start for jid, r in cluster.records.items()}
    assert starts["A"] is None
    assert (starts["B"] == 1) is (name != "fifo")
