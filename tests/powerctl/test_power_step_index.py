"""The power step's shortcuts of issue 11 give what the formulas they replaced give.

The node of each commanded name is looked up by the names' kept positions
(:func:`~wattsched.powerctl.node_diff.name_positions`) instead of a dict of every node; the
plan's nodes are one frozenset shared by the policy and the power step
(:func:`~wattsched.powerctl.policy.planned_set`); the nodes a policy may power off are found
by the safety rules written out in one pass (:func:`~wattsched.powerctl.policy.may_power_off`).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.powerctl.power_builders import node, plan, snapshot
from wattsched.daemon.power_cycle import _index
from wattsched.powerctl.node_diff import name_positions
from wattsched.powerctl.policy import may_power_off, planned_nodes, planned_set, power_off_refusal
from wattsched.scheduler.model import Node, PowerState

NAMES = [f"n{i}" for i in range(6)]
STATES = list(PowerState)


def _positions_afresh(nodes: tuple[Node, ...]) -> dict[str, int] | None:
    pos = {n.name: i for i, n in enumerate(nodes)}
    return pos if len(pos) == len(nodes) else None


def _index_afresh(nodes: tuple[Node, ...]) -> tuple[dict[str, Node], dict[str, Node] | None]:
    """The step's index as it was: every node by name (the last of a name), and the same for
    the safety rules unless a name comes twice."""
    index = {n.name: n for n in nodes}
    return index, (index if len(index) == len(nodes) else None)


def _same_for(asked: list[tuple[str, bool]], got: Any, want: Any) -> bool:
    """``got`` and ``want`` hold the same node objects for every name asked (or both none)."""
    if got is None or want is None:
        return got is want
    return all((n in got) == (n in want) and got.get(n) is want.get(n) for n, _ in asked)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 3),  # which earlier tuple to start from
            st.sets(st.integers(0, len(NAMES) - 1)),  # positions switched (a new object)
            st.sampled_from(["keep", "reverse", "drop", "rename", "twice"]),
        ),
        min_size=1,
        max_size=20,
    ),
    st.lists(st.tuples(st.sampled_from([*NAMES, "ghost"]), st.booleans()), max_size=5),
)
def test_the_commanded_nodes_are_those_of_an_index_of_every_node(
    steps: list[Any], asked: list[tuple[str, bool]]
) -> None:
    tuples = [tuple(node(n) for n in NAMES)]
    for base, switched, how in steps:
        nodes = list(tuples[-1 - min(base, len(tuples) - 1)])
        nodes = [
            dataclasses.replace(x, state=PowerState.OFF) if i in switched else x
            for i, x in enumerate(nodes)
        ]
        if how == "reverse":
            nodes.reverse()
        elif how == "drop" and len(nodes) > 1:
            nodes = nodes[:-1]
        elif how == "rename":
            nodes[0] = dataclasses.replace(nodes[0], name="renamed")
        elif how == "twice":
            nodes[-1] = dataclasses.replace(nodes[-1], name=nodes[0].name)
        tuples.append(tuple(nodes))
    for nodes in tuples + tuples[::-1]:
        assert name_positions(nodes) == _positions_afresh(nodes)
        got, first = _index(nodes, asked)
        want, want_first = _index_afresh(nodes)
        assert _same_for(asked, got, want)
        assert _same_for(asked, first, want_first)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.lists(st.tuples(st.integers(0, 20), st.lists(st.sampled_from(NAMES), max_size=3))),
        min_size=1,
        max_size=5,
    ),
    st.lists(st.integers(0, 4), min_size=1, max_size=10),
)
def test_the_planned_set_equals_planned_nodes_whatever_plan_was_asked_last(
    plans: list[Any], order: list[int]
) -> None:
    made = [plan(10, *[(f"j{i}", t, on) for i, (t, on) in enumerate(a)]) for a in plans]
    for k in order:
        p = made[k % len(made)]
        got = planned_set(p)
        assert got == frozenset(planned_nodes(p))
        assert planned_set(p) is got  # kept while the plan is the same object


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(NAMES),
            st.sampled_from(STATES),
            st.booleans(),  # available
            st.one_of(st.none(), st.integers(0, 5000)),  # last power failure
        ),
        max_size=8,
    ),
    st.integers(0, 6000),  # now
    st.integers(0, 4000),  # back-off
    st.sets(st.sampled_from(NAMES)),  # busy
    st.sets(st.sampled_from(NAMES)),  # planned
)
def test_may_power_off_keeps_the_nodes_no_safety_rule_refuses(
    rows: list[Any], now: int, backoff: int, busy: set[str], planned: set[str]
) -> None:
    nodes = [node(name, state=s, available=a, last_power_failure=f) for name, s, a, f in rows]
    snap, p = snapshot(now, nodes), plan(now)
    want = [
        n
        for n in nodes
        if power_off_refusal(n, snap, p, backoff, busy=busy, planned=planned) is None
    ]
    got = may_power_off(nodes, now, backoff, frozenset(busy), frozenset(planned))
    assert got == want and all(a is b for a, b in zip(got, want, strict=True))
