"""Issue 11: the replay skips cycles that provably start nothing; skipping changes nothing.

Every case replays twice, skipping and not, and must give the same schedule (every job's
start and nodes), the same energy and the same power record, with fewer cycles."""

from __future__ import annotations

import pytest
from replay_cases import CASES, DATA

from wattsched.connectors.simulated import SimulatedCluster
from wattsched.daemon.replay import replay
from wattsched.scheduler import dispatcher as registry
from wattsched.scheduler.model import Job, Node, NodePowerModel, PowerCap, Resources


def _random_workload(seed: int) -> tuple[list[Node], list[Job]]:
    import random

    rng = random.Random(seed)
    nodes = [
        Node(
            f"n{i}",
            Resources(cores=8, mem_mb=16000, gpus=1 if i % 2 else 0),
            NodePowerModel(idle_w=20, first_core_w=10, core_w=4, gpu_w=30),
            available=i != 3,
        )
        for i in range(6)
    ]
    jobs, t = [], 0
    for j in range(300):
        t += rng.choice([0, 0, 10, 60, 300])
        wall = rng.randint(60, 4000)
        jobs.append(
            Job(
                str(j), t, wall, rng.choice([1, 1, 2, 3]),
                Resources(cores=rng.choice([1, 2, 4, 8]), mem_mb=rng.choice([0, 4000]),
                          gpus=rng.choice([0, 0, 1])),
                ewt=rng.choice([1800, 21600]), runtime=rng.randint(1, wall),
                held=rng.random() < 0.02,
            )
        )  # fmt: skip
    return nodes, jobs


def _both(nodes: list[Node], jobs: list[Job], cap: PowerCap, name: str) -> None:
    a = SimulatedCluster(nodes, jobs, cap)
    ra = replay(a, registry.create(name), skip=True)
    b = SimulatedCluster(nodes, jobs, cap)
    rb = replay(b, registry.create(name), skip=False)
    assert {k: (r.start, r.nodes) for k, r in a.records.items()} == {
        k: (r.start, r.nodes) for k, r in b.records.items()
    }
    assert a.energy_j == pytest.approx(b.energy_j, rel=1e-12)
    assert [(s.time, s.it_power_w) for s in a.samples] == [
        (s.time, s.it_power_w) for s in b.samples
    ]
    assert rb.skipped == 0 and ra.skipped > 0
    assert ra.cycles + ra.skipped == rb.cycles


@pytest.mark.parametrize("name", ["fifo", "easy", "prb"])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_skipping_changes_nothing_random(name: str, seed: int) -> None:
    nodes, jobs = _random_workload(seed)
    cap = PowerCap(((0, 600.0), (20_000, 350.0), (50_000, 900.0)))
    _both(nodes, jobs, cap, name)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["kth-easy-5000", "curie-prb-5000", "eurora-easy-cap"])
def test_skipping_changes_nothing_on_traces(name: str) -> None:
    if not DATA.is_dir():
        pytest.skip(f"shared data not found at {DATA}")
    case = CASES[name]
    nodes, jobs, cap = case.load()
    _both(nodes, jobs[:2000], cap, case.dispatcher)


def test_no_skipping_with_a_policy_or_a_search() -> None:
    from wattsched.powerctl.idle_timeout import IdleTimeoutPolicy

    nodes, jobs = _random_workload(1)
    res = replay(
        SimulatedCluster(nodes, jobs, PowerCap.unlimited()),
        registry.create("easy"),
        power_policy=IdleTimeoutPolicy(idle_s=600),
    )
    assert res.skipped == 0
    assert not registry.create("hybrid").skips_exact


def _loop_of_before(cluster: SimulatedCluster, name: str) -> tuple[int, int]:
    """The replay's loop before the cluster skipped the idle steps itself
    (:meth:`SimulatedCluster.advance_while_idle`): the skip rules asked at every step."""
    from wattsched.daemon.acting import MemoryJournal
    from wattsched.daemon.controller import run_cycle
    from wattsched.daemon.job_records import StartRecord
    from wattsched.daemon.replay import _starts_nothing

    dispatcher, journal = registry.create(name), MemoryJournal()
    starts: dict[str, StartRecord] = {}
    cycles = skipped = 0
    idle: tuple[int, int, int] | None = None
    while True:
        if _starts_nothing(cluster, idle):
            skipped += 1
            if idle is not None:
                idle = (idle[0], cluster.arrivals_seen, idle[2])
            if not cluster.advance():
                break
            continue
        cycle = run_cycle(cluster, dispatcher, journal=journal, starts=starts)
        t = cycle.plan.time
        idle = (
            None
            if any(a.start <= t for a in cycle.plan.assignments)
            else (cluster.changes, cluster.arrivals_seen, cluster.now)
        )
        cycles += 1
        if cycle.plan.wake_at is not None:
            cluster.wake_at(cycle.plan.wake_at)
        if not cluster.advance():
            break
    return cycles, skipped


@pytest.mark.parametrize("name", ["fifo", "easy", "prb"])
@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_idle_steps_skipped_by_the_cluster_as_by_the_loop(name: str, seed: int) -> None:
    """The same cycles, skips, schedule and power record as the loop of before."""
    nodes, jobs = _random_workload(seed)
    cap = PowerCap(((0, 600.0), (20_000, 350.0), (50_000, 900.0)))
    a, b = SimulatedCluster(nodes, jobs, cap), SimulatedCluster(nodes, jobs, cap)
    res = replay(a, registry.create(name))
    assert (res.cycles, res.skipped) == _loop_of_before(b, name)
    assert {k: (r.start, r.end, r.nodes) for k, r in a.records.items()} == {
        k: (r.start, r.end, r.nodes) for k, r in b.records.items()
    }
    assert a.samples == b.samples and a.energy_j == b.energy_j
