"""Switching a simulated node: each power state's node is the node with only its state
changed, and a node switched back and forth reuses its objects (a policy's replay switches
thousands of times)."""

from __future__ import annotations

from dataclasses import replace

from wattsched.connectors.simulated import SimulatedCluster
from wattsched.scheduler.model import Job, Node, NodePowerModel, PowerCap, PowerState, Resources


def _cluster() -> SimulatedCluster:
    nodes = [
        Node(f"n{i}", Resources(cores=4), NodePowerModel(idle_w=50), boot_s=30, shutdown_s=5)
        for i in range(3)
    ]
    jobs = [Job("1", 0, 10_000, 1, Resources(cores=1), runtime=10_000)]
    return SimulatedCluster(nodes, jobs, PowerCap.unlimited())


def _node(cluster: SimulatedCluster, name: str) -> Node:
    return next(n for n in cluster.snapshot().nodes if n.name == name)


def test_a_switched_node_is_the_node_with_its_state_changed_and_its_objects_reused() -> None:
    cluster = _cluster()
    first = _node(cluster, "n2")
    seen: dict[PowerState, list[Node]] = {}
    for _ in range(3):
        for on in (False, True):
            cluster.power("n2", on)
            for _ in range(2):  # the command, then its transition done
                node = _node(cluster, "n2")
                assert node == replace(first, state=node.state)
                seen.setdefault(node.state, []).append(node)
                if node.state in (PowerState.SHUTTING_DOWN, PowerState.BOOTING):
                    cluster.advance()
    assert set(seen) == {
        PowerState.SHUTTING_DOWN, PowerState.OFF, PowerState.BOOTING, PowerState.ON
    }  # fmt: skip
    for state, nodes in seen.items():
        # From the second round on the same object stands for the node in that state.
        assert all(n is nodes[-1] for n in nodes[1:]), state
    assert _node(cluster, "n0") is cluster.snapshot().nodes[0]  # the others untouched
