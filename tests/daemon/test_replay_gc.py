"""Issue 11: a replay keeps the objects alive before it out of the garbage collector's full
collections while it runs (``gc.freeze``), and leaves the collector as it found it: nothing
frozen after it, or what something else froze still frozen; it also looks at the oldest
generation less often while it runs (``FULL_EVERY``), and puts the threshold back."""

from __future__ import annotations

import gc

import pytest

from wattsched.connectors.simulated import SimulatedCluster
from wattsched.daemon.replay import FULL_EVERY, replay
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


def test_a_replay_looks_at_the_oldest_generation_less_often_and_puts_it_back() -> None:
    old = gc.get_threshold()
    assert old[2] < FULL_EVERY
    seen: list[tuple[int, int, int]] = []
    replay(_cluster(), registry.create("easy"), progress=lambda done, total: seen.append(
        gc.get_threshold()
    ))  # fmt: skip
    assert seen and all(t == (old[0], old[1], FULL_EVERY) for t in seen)
    assert gc.get_threshold() == old


def test_a_replay_puts_the_threshold_back_when_it_fails() -> None:
    old = gc.get_threshold()

    def fail(done: int, total: int) -> None:
        raise RuntimeError("stop")

    with pytest.raises(RuntimeError, match="stop"):
        replay(_cluster(), registry.create("easy"), progress=fail)
    assert gc.get_threshold() == old
    assert gc.get_freeze_count() == 0


def test_a_replay_leaves_a_higher_or_a_changed_threshold_alone() -> None:
    old = gc.get_threshold()
    try:
        gc.set_threshold(old[0], old[1], FULL_EVERY * 2)
        replay(_cluster(), registry.create("easy"))
        assert gc.get_threshold() == (old[0], old[1], FULL_EVERY * 2)
        # something else sets its own threshold during the replay: left as it set it
        gc.set_threshold(*old)
        replay(_cluster(), registry.create("easy"),
               progress=lambda done, total: gc.set_threshold(500, 10, 10))  # fmt: skip
        assert gc.get_threshold() == (500, 10, 10)
    finally:
        gc.set_threshold(*old)
