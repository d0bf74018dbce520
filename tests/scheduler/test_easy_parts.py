"""Small parts of EASY's fast paths against the formulas they replaced."""

from __future__ import annotations

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from wattsched.scheduler.dispatcher import submit_order
from wattsched.scheduler.easy import EASYDispatcher
from wattsched.scheduler.easy_reserve import pooled_fit, times_from
from wattsched.scheduler.fit_kernels import col_sums, room_both, units_in
from wattsched.scheduler.mapper import ClusterState
from wattsched.scheduler.model import (
    Job,
    Node,
    NodePowerModel,
    Placement,
    PowerCap,
    Resources,
)
from wattsched.scheduler.node_arrays import EPS_W, JobVec, NodeArrays


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


@settings(max_examples=300, deadline=None)
@example([(4, 7.5)], [], (1, 1, Placement.FREE), False, 5.0)  # the first core breaks the cap
@given(
    st.lists(st.tuples(st.integers(1, 4), st.sampled_from([0.0, 7.5])), min_size=1, max_size=6),
    st.lists(st.tuples(st.integers(1, 3), st.integers(1, 2)), max_size=4),
    st.tuples(st.integers(1, 6), st.integers(1, 2), st.sampled_from(list(Placement))),
    st.booleans(),
    st.floats(-5, 40),
)
def test_place_skips_the_power_check_only_under_no_cap(
    nodes_l: list[tuple[int, float]],
    booked: list[tuple[int, int]],
    shape: tuple[int, int, Placement],
    exclusive: bool,
    above: float,
) -> None:
    """``place`` under no cap (its power re-check skipped) gives the placement of a cap too
    high to matter; under a finite cap, that placement or None as the power formula says
    (the least power first, then the placement's delta)."""
    nodes = tuple(
        Node(f"n{i}", Resources(cores=c), NodePowerModel(first_core_w=fc))
        for i, (c, fc) in enumerate(nodes_l)
    )
    arrays = NodeArrays(nodes)
    order = arrays.listed_order
    states = {
        "none": ClusterState(arrays, PowerCap.unlimited()),
        "high": ClusterState(arrays, PowerCap.constant(1e300)),
    }
    shapes: dict[tuple[object, ...], JobVec] = {}
    booking = []
    for k, (units, cores) in enumerate(booked):  # some jobs booked first, the same on each
        jv = JobVec.of(Job(f"b{k}", 0, 60, units, Resources(cores=cores)), arrays, shapes)
        placed = states["none"].place(jv, order, 0)
        if placed is not None:
            booking.append((jv, placed))
            for state in states.values():
                state.commit(jv, *placed)
    # A cap near the draw: the least power and the placement's delta both decide at times.
    watts = max(states["none"].power_w + above, 1.0)
    states["cap"] = ClusterState(arrays, PowerCap.constant(watts))
    for jv, placed in booking:
        states["cap"].commit(jv, *placed)
    units, cores, rule = shape
    job = Job("j", 0, 60, units, Resources(cores=cores), placement=rule, exclusive=exclusive)
    jv = JobVec.of(job, arrays, shapes)
    free = states["none"].place(jv, order, 0)
    high = states["high"].place(jv, order, 0)
    assert (free is None) == (high is None)
    if free is not None and high is not None:
        assert all(np.array_equal(a, b) for a, b in zip(free, high, strict=True))
    capped = states["cap"]
    want = free
    if free is None or capped.power_w + jv.min_w > watts + EPS_W:
        want = None  # not even the least power fits
    elif capped.power_w + capped.delta_watts(jv, *free) > watts + EPS_W:
        want = None  # the placement's delta (first cores woken) breaks the cap
    got = capped.place(jv, order, 0)
    assert (got is None) == (want is None)
    if got is not None and want is not None:
        assert all(np.array_equal(a, b) for a, b in zip(got, want, strict=True))


@given(
    st.lists(st.tuples(st.integers(0, 20), st.integers(1, 3)), max_size=10),
    st.lists(st.integers(0, 6), min_size=4, max_size=4),
    st.lists(st.integers(0, 12), min_size=4, max_size=4),
)
def test_pooled_fit_hands_out_the_placements_it_looked_at(
    ends: list[tuple[int, int]], free: list[int], need: list[int]
) -> None:
    """``pooled_fit`` with ``into`` counts as without, and ``into`` gets the placements of the
    ends before the head fits pooled, in order (the reservation releases them first)."""
    jvs = {
        f"j{i}": JobVec.of(Job(f"j{i}", 0, 60, 1, Resources(cores=c, gpus=c % 2)))
        for i, (_, c) in enumerate(ends)
    }
    pending = sorted((t, f"j{i}") for i, (t, _) in enumerate(ends))
    empty = np.zeros(0, dtype=np.int64)
    placements = {jid: (jv, empty, empty) for jid, jv in jvs.items()}
    started = {jid: placements.pop(jid) for jid in list(placements)[::3]}
    into: list[tuple[JobVec, np.ndarray, np.ndarray]] = []
    k0 = pooled_fit(pending, started, placements, free, tuple(need), into)
    assert k0 == pooled_fit(pending, started, placements, free, tuple(need))
    looked = pending if k0 is None else pending[:k0]
    want = [started.get(jid) or placements[jid] for _, jid in looked]
    assert len(into) == len(want) and all(a is b for a, b in zip(into, want, strict=True))


def test_plans_share_stats_equal_to_the_default_and_read_only() -> None:
    """EASY's plans carry one shared ``SolverStats``: equal to the one each plan made before,
    and its ``extra`` cannot be changed through one plan."""
    import pytest

    from wattsched.scheduler.easy import _HEURISTIC
    from wattsched.scheduler.model import SolverStats

    assert _HEURISTIC == SolverStats(status="heuristic") == SolverStats()
    with pytest.raises(TypeError):
        _HEURISTIC.extra["x"] = 1  # type: ignore[index]
