"""The HGFS replay's shortcuts give what the plain formulas they replaced give.

Each property compares a shortcut of the power side (issue 11) with the formula it replaced,
kept here as the oracle: the idle nodes looked up by their off-order positions, the busy nodes
as one shared frozenset, the fuzzy rule's arrays kept for the same tuples, and the power-on
choice returning at once when nothing is to be covered.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.powerctl.power_builders import job, node, plan, running, snapshot
from wattsched.powerctl import hgfs
from wattsched.powerctl.hgfs import HGFSParams
from wattsched.powerctl.policy import busy_nodes, busy_set
from wattsched.powerctl.selection import Shape, choose_on, node_room
from wattsched.powerctl.views import SnapshotViews
from wattsched.scheduler.model import Node, Resources, Snapshot

NAMES = [f"n{i}" for i in range(7)]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from(NAMES), min_size=1, max_size=9),  # node names, some twice
    st.lists(st.floats(0.5, 2.0), min_size=9, max_size=9),  # efficiencies
    st.sets(st.sampled_from([*NAMES, "ghost"])),  # the names asked, one not a node
)
def test_the_idle_nodes_in_off_order_equal_the_off_order_filtered(
    names: list[str], eff: list[float], asked: set[str]
) -> None:
    nodes = [node(n, efficiency=e) for n, e in zip(names, eff, strict=False)]
    view = SnapshotViews().nodes(snapshot(0, nodes))
    assert view.in_off_order(asked) == [n for n in view.off_order if n.name in asked]


def _snap(jobs_on: Sequence[Sequence[str]]) -> Snapshot:
    runs = [running(job(f"j{i}", units=len(on)), on) for i, on in enumerate(jobs_on)]
    return snapshot(0, [node(n) for n in NAMES], run=runs)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.lists(st.lists(st.sampled_from(NAMES), min_size=1, max_size=3), max_size=4),
        min_size=1,
        max_size=6,
    ),
    st.lists(st.integers(0, 5), min_size=1, max_size=12),
)
def test_the_busy_set_equals_busy_nodes_whatever_tuple_was_asked_last(
    runs: list[Any], order: list[int]
) -> None:
    snaps = [_snap(r) for r in runs]
    for k in order:
        snap = snaps[k % len(snaps)]
        got = busy_set(snap)
        assert got == frozenset(busy_nodes(snap))
        assert busy_set(snap) is got  # kept while the running tuple is the same


def test_the_fuzzy_arrays_follow_the_tuples_given_signed_zeros_included() -> None:
    a = HGFSParams(centers=(0.0, 900.0), weights=(0.0, 1.0))
    b = HGFSParams(centers=(-0.0, 900.0), weights=(-0.0, 1.0))
    for p in (a, b, a, b):
        c, w = p._arrays()
        assert c.tolist() == list(p.centers) and w.tolist() == list(p.weights)
        assert np.signbit(c[0]) == (str(p.centers[0]) == "-0.0")
        assert np.signbit(w[0]) == (str(p.weights[0]) == "-0.0")
    assert a._arrays()[0] is a._arrays()[0]  # the same tuples: the same arrays
    assert hgfs._float_arrays(a.centers, a.weights)[1] is a._arrays()[1]
    for idle in ([], [0.0], [100.0, 2000.0, 950.0]):
        assert a.fuzzy_off_count(idle) == b.fuzzy_off_count(idle)
        assert a.fuzzy_off_count(idle) == int(sum(a.truth(x) for x in idle) + 1e-9)


def _choose_on_loop(
    candidates: Sequence[Node],
    shortfall: Resources,
    must_fit: Mapping[Shape, int] | None,
    max_nodes: int | None,
) -> list[Node]:
    """:func:`choose_on` with no cap, as it was before its early returns."""
    need = list(shortfall.as_tuple())
    unfit = {u: k for u, k in (must_fit or {}).items() if k > 0}
    chosen: list[Node] = []
    for n in candidates:
        if max_nodes is not None and len(chosen) >= max_nodes:
            break
        if all(x <= 0 for x in need) and not unfit:
            break
        cap = n.capacity.as_tuple()
        helps = any(x > 0 and c > 0 for x, c in zip(need, cap, strict=True)) or any(
            node_room(u, n) > 0 for u in unfit
        )
        if not helps:
            continue
        chosen.append(n)
        need = [x - c for x, c in zip(need, cap, strict=True)]
        unfit = {u: k - node_room(u, n) for u, k in unfit.items()}
        unfit = {u: k for u, k in unfit.items() if k > 0}
    return chosen


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.integers(1, 8), max_size=6),  # the candidates' cores
    st.tuples(st.integers(-8, 12), st.integers(-2000, 3000)),  # cores and memory short
    st.dictionaries(
        st.tuples(st.integers(1, 9), st.sampled_from([None, 1])), st.integers(-2, 4), max_size=3
    ),  # unit cores and units per node -> units missing
    st.sampled_from([None, 0, 1, 2]),
)
def test_choose_on_equals_its_loop_without_the_early_returns(
    cores: list[int], short: tuple[int, int], fit: dict[Any, int], most: int | None
) -> None:
    cands = [node(f"c{i}", cores=c) for i, c in enumerate(cores)]
    snap, p = snapshot(0, cands), plan(0)
    must_fit = {Shape(Resources(cores=c), per): k for (c, per), k in fit.items()}
    for shortfall in (Resources(max(0, short[0]), max(0, short[1])), Resources()):
        for mf in (must_fit, {}, None):
            want = _choose_on_loop(cands, shortfall, mf, most)
            assert choose_on(snap, p, cands, shortfall, must_fit=mf, max_nodes=most) == want
