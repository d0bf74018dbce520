"""Small parts of EASY's fast paths against the formulas they replaced."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from wattsched.scheduler.easy import _times_from
from wattsched.scheduler.mapper import ClusterState
from wattsched.scheduler.model import Node, PowerCap, Resources
from wattsched.scheduler.node_arrays import NodeArrays


@given(
    st.lists(st.integers(0, 30), max_size=12),
    st.lists(st.integers(0, 40), max_size=6),
    st.data(),
)
def test_times_from_are_the_sorted_set(
    ends: list[int], caps: list[int], data: st.DataObject
) -> None:
    """The lazy merge yields the very times of the set formula it replaced, in order."""
    pending = sorted((t, str(i)) for i, t in enumerate(ends))
    k0 = data.draw(st.integers(0, len(pending)))
    t0 = pending[k0 - 1][0] if k0 else 0
    want = sorted({t for t, _ in pending[k0:]} | {c for c in caps if c >= t0} | {t0})
    got = list(_times_from(t0, pending, k0, sorted(c for c in set(caps) if c > t0)))
    assert got == want


@given(
    st.lists(
        st.tuples(st.integers(0, 5), st.integers(1, 3)),
        min_size=1,
        max_size=6,
        unique_by=lambda p: p[0],
    )
)
def test_names_for_is_one_name_per_unit(placement: list[tuple[int, int]]) -> None:
    """``names_for`` (one-unit-per-node fast path or not) repeats each node name per unit."""
    nodes = tuple(Node(f"n{i}", Resources(cores=4)) for i in range(6))
    state = ClusterState(NodeArrays(nodes), PowerCap.unlimited())
    idx = np.array([i for i, _ in placement], dtype=np.int64)
    cnt = np.array([c for _, c in placement], dtype=np.int64)
    assert state.names_for(idx, cnt) == tuple(f"n{i}" for i, c in placement for _ in range(c))
