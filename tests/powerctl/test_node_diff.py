"""The node diff shared by the power side's caches gives the comparison made afresh."""

from __future__ import annotations

import dataclasses
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.powerctl.power_builders import node
from wattsched.powerctl.node_diff import changed_nodes
from wattsched.scheduler.model import Node, PowerState

NAMES = [f"n{i}" for i in range(5)]


def _afresh(old: tuple[Node, ...], new: tuple[Node, ...]) -> object:
    if len(old) != len(new):
        return None
    out = tuple((a, b) for a, b in zip(old, new, strict=True) if a is not b)
    return None if any(a.name != b.name for a, b in out) else out


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 3),  # which earlier tuple to start from
            st.sets(st.integers(0, len(NAMES) - 1)),  # positions switched (a new object)
            st.booleans(),  # reorder
            st.booleans(),  # drop the last node
        ),
        min_size=1,
        max_size=20,
    ),
    st.lists(st.tuples(st.integers(0, 30), st.integers(0, 30)), max_size=30),
)
def test_changed_nodes_equals_the_comparison_afresh(steps: list[Any], asks: list[Any]) -> None:
    tuples = [tuple(node(n) for n in NAMES)]
    for base, switched, reorder, drop in steps:
        nodes = list(tuples[-1 - min(base, len(tuples) - 1)])
        nodes = [
            dataclasses.replace(x, state=PowerState.OFF) if i in switched else x
            for i, x in enumerate(nodes)
        ]
        if reorder:
            nodes.reverse()
        if drop:
            nodes = nodes[:-1]
        tuples.append(tuple(nodes))
    # Asked in any order, again and again (the last pair is kept): always the afresh answer.
    for i, j in [(k, k + 1) for k in range(len(tuples) - 1)] + asks:
        old, new = tuples[i % len(tuples)], tuples[j % len(tuples)]
        assert changed_nodes(old, new) == _afresh(old, new)
        assert changed_nodes(old, new) == _afresh(old, new)


def test_replays_in_threads_each_get_their_own_pair_s_answer() -> None:
    # A Dask worker runs replays in threads of one process: the kept pair is shared, and a
    # thread must never get another pair's answer (nor a mix of two entries).
    import sys
    import threading

    base = tuple(node(n) for n in NAMES)
    pairs = []
    for k in range(4):
        new = list(base)
        new[k] = dataclasses.replace(base[k], state=PowerState.OFF)
        pairs.append((base, tuple(new)))
    wrong: list[int] = []

    def work(k: int) -> None:
        old, new = pairs[k]
        want = _afresh(old, new)
        for _ in range(50_000):
            if changed_nodes(old, new) != want:
                wrong.append(k)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
    finally:
        sys.setswitchinterval(interval)
    assert not wrong
