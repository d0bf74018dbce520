"""Switching a simulated node: each power state's node is the node with only its state
changed, and a node switched back and forth reuses its objects (a policy's replay switches
thousands of times)."""

from __future__ import annotations

from contextlib import suppress
from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from wattsched.connectors.base import ConnectorError, RMSCommandError
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


def _formula_figures(node: Node) -> tuple[float, int, bool]:
    """A node's static draw and flags as ``_set_node`` computed them from the node before it
    kept them (``state_watts``; ON; ON and available)."""
    return (
        node.power.state_watts(node.state),
        int(node.state is PowerState.ON),
        node.state is PowerState.ON and node.available,
    )


_watts = st.integers(0, 400).map(lambda w: w / 2)  # halves: sums exact in any order
_models = st.builds(NodePowerModel, idle_w=_watts, transition_w=_watts, off_w=_watts)
_steps = st.lists(
    st.tuples(
        st.sampled_from(["on", "off", "advance", "drain", "undrain", "start"]), st.integers(0, 3)
    ),
    max_size=40,
)


@settings(max_examples=150, deadline=None)
@given(models=st.lists(_models, min_size=4, max_size=4), states=st.lists(
    st.sampled_from([PowerState.ON, PowerState.OFF, PowerState.FAILED]), min_size=4, max_size=4
), steps=_steps)  # fmt: skip
def test_kept_node_figures_match_the_node_formula(
    models: list[NodePowerModel], states: list[PowerState], steps: list[tuple[str, int]]
) -> None:
    """The figures a switch reads (kept with each node object) are the power model's and the
    state's, and the draw, ON count, pooled free resources and usable flags they move are those
    of the nodes as they are, through commands, their ends and availability changes."""
    nodes = [
        Node(f"n{i}", Resources(cores=4, mem_mb=8), m, state=s, boot_s=3 + i, shutdown_s=2)
        for i, (m, s) in enumerate(zip(models, states, strict=True))
    ]
    jobs = [Job("1", 0, 10_000, 1, Resources(cores=1), runtime=10_000)]
    cluster = SimulatedCluster(nodes, jobs, PowerCap.unlimited())
    for what, i in steps:
        node = cluster.snapshot().nodes[i]
        if what in ("on", "off"):
            with suppress(RMSCommandError):  # no transition from its state: nothing changed
                cluster.power(node.name, what == "on")
        elif what == "start":  # a busy node: its free resources are not its capacity
            with suppress(ConnectorError):
                cluster.start("1", [node.name])
        elif what == "advance":
            cluster.advance()
        else:  # an admin's drain, as the thermal cluster sets it
            cluster._set_node(i, replace(node, available=what == "undrain"))
        now = cluster.snapshot().nodes
        assert cluster.snapshot().nodes is now  # the same tuple while nothing changes
        assert cluster._figures == [_formula_figures(n) for n in now]
        assert cluster._static_w == sum(n.power.state_watts(n.state) for n in now)
        assert cluster._nodes_on == sum(n.state is PowerState.ON for n in now)
        usable = [n.state is PowerState.ON and n.available for n in now]
        assert cluster._books.usable.tolist() == usable
        assert cluster._books.unusable == usable.count(False)
        assert cluster._pool == cluster._books.pooled_free()


def test_the_power_side_pushes_the_clusters_power_done_kind() -> None:
    """The power module's event kind is the one the cluster's clock handles."""
    from wattsched.connectors import simulated, simulated_power

    assert simulated_power._POWER_DONE == simulated._POWER_DONE
