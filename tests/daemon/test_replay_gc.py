"""Issue 11: a replay keeps the objects alive before it out of the garbage collector's full
collections while it runs (``gc.freeze``), and leaves the collector as it found it: nothing
frozen after it, or what something else froze still frozen."""

from __future__ import annotations

import gc

from wattsched.connectors.simulated import SimulatedCluster
from wattsched.daemon.replay import replay
from wattsched.scheduler import dispatcher as registry
from wattsched.scheduler.model import Job, Node, NodePowerModel, PowerCap, Resources


def _cluster() -> SimulatedCluster:
    nodes = [Node(f"n{i}", Resources(cores=2), NodePowerModel(idle_w=50)) for i in range(2)]
    jobs = [Job(str(k), 10 * k, 100, 1, Resources(cores=1), runtime=50) for k in range(20)]
    return SimulatedCluster(nodes, jobs, PowerCap.unlimited())


def test_a_replay_freezes_what_was_alive_and_unfreezes_it_after() -> None:
    assert gc.get_freeze_count() == 0
    seen: list[int] = []
    cluster = _cluster()
    replay(cluster, registry.create("easy"), progress=lambda done, total: seen.append(
        gc.get_freeze_count()
    ))  # fmt: skip
    assert seen and all(n > 0 for n in seen)  # frozen while it ran
    assert gc.get_freeze_count() == 0
    assert all(r.end is not None for r in cluster.records.values())


def test_a_replay_leaves_what_something_else_froze_frozen() -> None:
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        replay(_cluster(), registry.create("easy"))
        assert gc.get_freeze_count() == frozen
    finally:
        gc.unfreeze()
