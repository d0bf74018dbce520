"""The dispatchers' cross-cycle shortcuts (incremental planning after arrivals, the queue
index) must not change a single decision: replay with and without them and compare."""

from __future__ import annotations

import random

import pytest

from wattsched.connectors.simulated import SimulatedCluster
from wattsched.daemon.replay import replay
from wattsched.scheduler import dispatcher as registry
from wattsched.scheduler.dispatcher import Dispatcher
from wattsched.scheduler.model import (
    Job,
    Node,
    NodePowerModel,
    Plan,
    PowerCap,
    Resources,
    RunningJob,
    Snapshot,
)
from wattsched.scheduler.prb import PRBDispatcher


class Forgetful(Dispatcher):
    """Runs the wrapped dispatcher as if every cycle were its first."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name

    def plan(self, snap: Snapshot) -> Plan:
        return registry.create(self.name).plan(snap)


def workload(seed: int) -> tuple[list[Node], list[Job]]:
    rng = random.Random(seed)
    nodes = [
        Node(
            f"n{i}",
            Resources(cores=16, mem_mb=32000, gpus=2 if i % 3 == 0 else 0),
            NodePowerModel(idle_w=20, first_core_w=10, core_w=4, gpu_w=30),
            efficiency=1.0 + (i % 2) * 0.2,
        )
        for i in range(10)
    ]
    jobs, t = [], 0
    for j in range(400):
        t += rng.choice([0, 0, 5, 30, 120])
        wall = rng.randint(60, 3000)
        jobs.append(
            Job(
                str(j),
                t,
                wall,
                rng.choice([1, 1, 2, 4]),
                Resources(
                    cores=rng.choice([1, 2, 8, 16]),
                    mem_mb=rng.choice([0, 1000, 8000]),
                    gpus=rng.choice([0, 0, 1]),
                ),
                ewt=rng.choice([1800, 3600, 21600]),
                runtime=rng.randint(0, wall),
            )
        )
    return nodes, jobs


@pytest.mark.parametrize("name", ["fifo", "easy", "prb"])
@pytest.mark.parametrize("seed", [1, 2])
def test_shortcuts_change_nothing(name: str, seed: int) -> None:
    nodes, jobs = workload(seed)
    cap = PowerCap(((0, 2400.0), (20_000, 1500.0), (60_000, 3000.0)))
    fast = SimulatedCluster(nodes, jobs, cap)
    replay(fast, registry.create(name))
    slow = SimulatedCluster(nodes, jobs, cap)
    replay(slow, Forgetful(name))
    got = {k: (r.start, r.nodes) for k, r in fast.records.items()}
    want = {k: (r.start, r.nodes) for k, r in slow.records.items()}
    assert got == want
    assert fast.cap_violation_s == 0


@pytest.mark.parametrize("seed", [3, 4, 5])
@pytest.mark.parametrize("capped", [False, True])
def test_prb_after_its_own_starts_tries_only_arrivals_and_changes_nothing(
    seed: int, capped: bool
) -> None:
    # After a plan whose starts are the cluster's only change, PRB tries only the jobs that
    # arrived since (PRBDispatcher._only_own_starts): the very decisions of a fresh dispatcher
    # at every cycle, cap steps included, and the shortcut is taken.
    nodes, jobs = workload(seed)
    cap = (
        PowerCap(((0, 2400.0), (20_000, 1500.0), (60_000, 3000.0)))
        if capped
        else PowerCap.unlimited()
    )
    fast = SimulatedCluster(nodes, jobs, cap)
    prb = PRBDispatcher()
    replay(fast, prb)
    slow = SimulatedCluster(nodes, jobs, cap)
    replay(slow, Forgetful("prb"))
    got = {k: (r.start, r.nodes) for k, r in fast.records.items()}
    want = {k: (r.start, r.nodes) for k, r in slow.records.items()}
    assert got == want
    assert prb.own_start_shortcuts > 0


def _own_start_then(step_at: int) -> tuple[PRBDispatcher, Plan]:
    """PRB plans at 0 (job 1 starts, job 2 fails for power), then at 10 after its own start
    only, with the cap stepping up at ``step_at``: the dispatcher and its second plan."""
    nodes = (Node("n0", Resources(cores=16), NodePowerModel(idle_w=20, core_w=10)),)
    cap = PowerCap(((0, 100.0), (step_at, 1000.0)))
    a = Job("1", 0, 50, 1, Resources(cores=2))
    b = Job("2", 0, 5000, 1, Resources(cores=8))
    prb = PRBDispatcher()
    first = prb.plan(Snapshot(0, nodes, (), (a, b), cap, queue_edits=0))
    assert [s.job_id for s in first.starts_now()] == ["1"]
    ran = RunningJob(a, 0, first.assignments[0].nodes, 50)
    return prb, prb.plan(Snapshot(10, nodes, (ran,), (b,), cap, queue_edits=0))


def test_prb_own_start_shortcut_only_on_the_very_cluster_the_pass_ended_with() -> None:
    # No cap step since: job 2 fails again, found by the shortcut.
    prb, second = _own_start_then(10_000)
    assert not second.assignments and prb.own_start_shortcuts == 1
    # The cap stepped up since: job 2 fits now, and the full pass finds it.
    prb, second = _own_start_then(5)
    assert [s.job_id for s in second.starts_now()] == ["2"] and prb.own_start_shortcuts == 0
