"""Small parts of EASY's fast paths against the formulas they replaced."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from wattsched.scheduler.dispatcher import submit_order
from wattsched.scheduler.easy import EASYDispatcher
from wattsched.scheduler.easy_reserve import times_from
from wattsched.scheduler.fit_kernels import col_sums, room_both, units_in
from wattsched.scheduler.mapper import ClusterState
from wattsched.scheduler.model import Job, Node, PowerCap, Resources
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
    got = list(times_from(t0, pending, k0, sorted(c for c in set(caps) if c > t0)))
    assert got == want


_PLACEMENTS = st.lists(
    st.tuples(st.integers(0, 39), st.integers(1, 3)),
    min_size=1,
    max_size=30,
    unique_by=lambda p: p[0],
)


@given(st.lists(st.tuples(_PLACEMENTS, st.booleans()), min_size=1, max_size=4))
def test_names_for_is_one_name_per_unit(
    placements: list[tuple[list[tuple[int, int]], bool]],
) -> None:
    """``names_for`` (small one-unit-per-node placements in Python) and EASY's kept head names
    repeat each node name per unit, placement after placement."""
    nodes = tuple(Node(f"n{i}", Resources(cores=4)) for i in range(40))
    state = ClusterState(NodeArrays(nodes), PowerCap.unlimited())
    easy = EASYDispatcher()
    for placement, ones in placements:
        pairs = [(i, 1 if ones else c) for i, c in placement]
        idx = np.array([i for i, _ in pairs], dtype=np.int64)
        cnt = np.array([c for _, c in pairs], dtype=np.int64)
        want = tuple(f"n{i}" for i, c in pairs for _ in range(c))
        assert state.names_for(idx, cnt) == want
        assert easy._head_names(state, idx, cnt) == want
        assert easy._head_names(state, idx.copy(), cnt.copy()) == want


_BOOKS = st.integers(1, 8).flatmap(
    lambda n: st.tuples(
        st.lists(st.lists(st.integers(-3, 9), min_size=4, max_size=4), min_size=n, max_size=n),
        st.lists(st.lists(st.integers(-3, 9), min_size=4, max_size=4), min_size=n, max_size=n),
        st.lists(st.booleans(), min_size=n, max_size=n),
    )
)


@settings(deadline=None)  # the first call loads the kernel
@given(_BOOKS)
def test_room_both_is_the_numpy_formula(books: tuple[list[list[int]], ...]) -> None:
    """The compiled pooled room both now and in the spare equals the numpy formula."""
    free, spare = np.array(books[0], dtype=np.int64), np.array(books[1], dtype=np.int64)
    usable = np.array(books[2], dtype=np.bool_)
    room = np.maximum(np.minimum(free, spare), 0)
    assert room_both(free, spare, usable) == tuple(int(a) for a in room[usable].sum(axis=0))
    assert col_sums(spare) == tuple(spare.sum(axis=0).tolist())


@settings(deadline=None)
@given(_BOOKS, st.lists(st.integers(0, 4), min_size=4, max_size=4).filter(any))
def test_units_in_is_the_numpy_formula(
    books: tuple[list[list[int]], ...], req_l: list[int]
) -> None:
    """The compiled units per node that fit equal the numpy formula (negative room: 0)."""
    free = np.array(books[0], dtype=np.int64)
    req = np.array(req_l, dtype=np.int64)
    nz = np.flatnonzero(req)
    want = np.maximum((free[:, nz] // req[nz]).min(axis=1), 0)
    assert np.array_equal(units_in(free, req, nz), want)


@given(st.lists(st.tuples(st.integers(0, 5), st.booleans()), max_size=8), st.integers(0, 8))
def test_queue_of_is_the_submit_order_of_each_queue(jobs: list[tuple[int, bool]], cut: int) -> None:
    """EASY's kept queue order is the submit order of the snapshot's queue, for the very same
    tuple again and for another tuple (another queue) after it."""
    queued = tuple(
        Job(str(i), submit, 60, 1, Resources(cores=1), held=held)
        for i, (submit, held) in enumerate(jobs)
    )
    easy = EASYDispatcher()
    for q in (queued, queued, queued[:cut], queued):
        order, ids = easy._queue_of(q)
        assert order == submit_order(q)
        assert ids == [j.id for j in order]
