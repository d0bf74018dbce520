"""``NodeArrays.restated`` (nodes switched, drained or resumed) against the arrays built anew."""

from __future__ import annotations

import dataclasses

from hypothesis import given, settings
from hypothesis import strategies as st

from wattsched.scheduler.model import Node, NodePowerModel, PowerState, Resources
from wattsched.scheduler.node_arrays import NodeArrays

STATES = list(PowerState)


def _nodes(n: int) -> tuple[Node, ...]:
    models = (
        NodePowerModel(idle_w=95.0, off_w=5.0, transition_w=120.0),
        NodePowerModel(idle_w=150.0, off_w=0.0, transition_w=100.0),
    )
    return tuple(
        Node(f"n{i}", Resources(cores=4, mem_mb=1000), power=models[i % 2]) for i in range(n)
    )


changes = st.lists(
    st.tuples(st.integers(0, 7), st.sampled_from(STATES), st.booleans()), max_size=12
)


@settings(max_examples=200, deadline=None)
@given(st.lists(changes, min_size=1, max_size=6))
def test_restated_is_the_arrays_built_anew(steps: list[list[tuple[int, PowerState, bool]]]) -> None:
    nodes = _nodes(8)
    arrays = NodeArrays(nodes)
    for step in steps:
        new = list(nodes)
        for i, state, available in step:
            new[i] = dataclasses.replace(new[i], state=state, available=available)
        nodes = tuple(new)
        kept = arrays.restated(nodes)
        fresh = NodeArrays(nodes)
        assert kept is not None
        assert kept.usable.tolist() == fresh.usable.tolist()
        assert kept.static_w == fresh.static_w or abs(kept.static_w - fresh.static_w) < 1e-9
        assert kept.nodes is nodes
        arrays = kept


def test_another_node_list_is_not_restated() -> None:
    nodes = _nodes(3)
    arrays = NodeArrays(nodes)
    other = list(nodes)
    other[1] = dataclasses.replace(other[1], capacity=Resources(cores=8, mem_mb=1000))
    assert arrays.restated(tuple(other)) is None
    renamed = list(nodes)
    renamed[2] = dataclasses.replace(renamed[2], name="x")
    assert arrays.restated(tuple(renamed)) is None
    assert arrays.restated(nodes[:2]) is None
