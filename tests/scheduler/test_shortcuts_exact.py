"""The dispatchers' cross-cycle shortcuts (incremental planning after arrivals, the queue
index) must not change a single decision: replay with and without them and compare."""

from __future__ import annotations

import random

import pytest

from wattsched.connectors.simulated import SimulatedCluster
from wattsched.daemon.replay import replay
from wattsched.scheduler import dispatcher as registry
from wattsched.scheduler.dispatcher import Dispatcher
from wattsched.scheduler.model import Job, Node, NodePowerModel, Plan, PowerCap, Resources, Snapshot


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
