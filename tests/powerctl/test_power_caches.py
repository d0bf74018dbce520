"""What the power side keeps from one cycle to the next gives what it would compute afresh.

The replay hands out the very same tuples while nothing changed, and the power book, the idle
tracker and the policy's views keep figures for as long as their inputs are those objects. Each
property drives a random sequence of cycles (nodes kept or rebuilt, jobs started and ended,
commands sent and failed, the clock moving) and compares with a computation from scratch.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.powerctl.power_builders import job, node, plan, running, snapshot
from wattsched.powerctl.idle_tracker import IdleTracker
from wattsched.powerctl.machine import PowerBook
from wattsched.powerctl.policy import busy_nodes
from wattsched.powerctl.selection import free_capacity, order_for_off, power_on_candidates
from wattsched.powerctl.views import SnapshotViews, capacity
from wattsched.scheduler.model import Node, Placement, PowerState, Snapshot

NAMES = [f"n{i}" for i in range(6)]
STATES = [PowerState.ON, PowerState.OFF, PowerState.FAILED, PowerState.BOOTING]
POWERED = (PowerState.ON, PowerState.BOOTING)


def _overlay_afresh(book: PowerBook, snap: Snapshot) -> tuple[Node, ...]:
    """Every node of ``snap`` through the book's per-node rule, as the overlay once did."""
    return tuple(book._node(n, snap.time) for n in snap.nodes)


steps = st.lists(
    st.tuples(
        st.integers(0, 400),  # time step
        st.lists(st.sampled_from(STATES), min_size=len(NAMES), max_size=len(NAMES)),
        st.lists(st.booleans(), min_size=len(NAMES), max_size=len(NAMES)),  # available
        st.sampled_from(["none", "on", "off", "fail", "timeout"]),
        st.integers(0, len(NAMES) - 1),  # the node commanded
        st.booleans(),  # reorder the nodes
        st.sampled_from([0, 3, len(NAMES), len(NAMES)]),  # nodes reported as before (first)
    ),
    min_size=1,
    max_size=25,
)


@settings(max_examples=200, deadline=None)
@given(steps)
def test_the_overlay_of_the_book_nodes_equals_every_node_through_the_book(steps: Any) -> None:
    book, t = PowerBook(boot_timeout_s=500, shutdown_timeout_s=300), 0
    last: dict[str, Node] = {}
    snap: Snapshot | None = None
    for dt, states, avail, command, who, reorder, same in steps:
        t += dt
        nodes = [
            node(name, state=s, available=a)
            for name, s, a in zip(NAMES, states, avail, strict=True)
        ]
        # A node the RMS reports as before keeps its object (as the simulated cluster's do),
        # and the very same tuple comes back when no node changed.
        nodes = [last.get(n.name, n) if i < same else n for i, n in enumerate(nodes)]
        if reorder:
            nodes.reverse()
        if snap is not None and same == len(NAMES) and not reorder:
            snap = snapshot(t, snap.nodes)
        else:
            snap = snapshot(t, nodes)
        last = {n.name: n for n in snap.nodes}
        twin = copy.deepcopy(book)
        got = book.overlay(snap)
        assert got.nodes == _overlay_afresh(twin, snap)
        assert {k: dataclasses.astuple(v) for k, v in book.nodes.items()} == {
            k: dataclasses.astuple(v) for k, v in twin.nodes.items()
        }
        assert book.timed_out == twin.timed_out
        target = got.nodes[who]
        if command in ("on", "off"):
            book.commanded(target, command == "on", t)
        elif command in ("fail", "timeout"):
            book.failed(target, True, t, outcome_unknown=command == "timeout")


cycles = st.lists(
    st.tuples(
        st.integers(0, 900),  # time step
        st.sets(st.sampled_from(NAMES)),  # the nodes rebuilt (all: a new tuple of new nodes)
        st.lists(st.sampled_from(STATES), min_size=len(NAMES), max_size=len(NAMES)),
        st.sets(st.sampled_from(NAMES), max_size=3),  # running on
        st.booleans(),  # keep the running tuple
        st.sets(st.sampled_from(NAMES), max_size=2),  # starting now
        st.lists(st.none() | st.integers(-1200, 0), min_size=len(NAMES), max_size=len(NAMES)),
        st.booleans(),  # the rebuilt nodes keep their last power failure (only switched)
    ),
    min_size=1,
    max_size=30,
)


@settings(max_examples=200, deadline=None)
@given(cycles)
def test_the_idle_tracker_and_the_candidates_equal_a_computation_from_scratch(
    cycles: Any,
) -> None:
    tracker, views = IdleTracker(), SnapshotViews()
    since: dict[str, int] = {}
    t = 0
    nodes: tuple[Node, ...] | None = None
    runs: tuple[Any, ...] = ()
    for dt, rebuild, states, run_on, keep_run, starting, failures, switched in cycles:
        t += dt
        if nodes is None or rebuild:
            # Only the rebuilt nodes are new objects (a node switched); the others are kept.
            fresh = [
                node(
                    name,
                    state=s,
                    last_power_failure=None if f is None else t + f,
                    available=f is None or f > -1000,
                )
                for name, s, f in zip(NAMES, states, failures, strict=True)
            ]
            if nodes is not None and switched:
                fresh = [
                    dataclasses.replace(b, last_power_failure=a.last_power_failure)
                    for a, b in zip(nodes, fresh, strict=True)
                ]
            nodes = tuple(
                b if nodes is None or b.name in rebuild else a
                for a, b in zip(nodes or fresh, fresh, strict=True)
            )
        if not keep_run:
            # A job keeps its object while it runs (as a connector keeps it); each has a unit
            # on its node and one on the next.
            kept = {rj.job.id: rj for rj in runs}
            runs = tuple(
                kept.get(f"j{name}")
                or running(job(f"j{name}", units=2, cores=1 + i % 3), [name, NAMES[i - 1]])
                for i, name in enumerate(NAMES)
                if name in run_on
            )
        snap = snapshot(t, nodes, run=runs)
        p = plan(t, *((f"s{name}", t, [name]) for name in sorted(starting)))
        # From scratch: idle since the first snapshot of the spell.
        busy = busy_nodes(snap) | set(starting)
        since = {
            n.name: min(since.get(n.name, t), t)
            for n in snap.nodes
            if n.state is PowerState.ON and n.name not in busy
        }
        assert tracker.observe(snap, p) == since
        assert views.candidates(snap, 600) == power_on_candidates(snap, 600)
        view = views.nodes(snap)
        assert view.powered == [n for n in snap.nodes if n.state in POWERED]
        assert view.n_powered == len(view.powered)
        assert view.off_order == order_for_off(snap.nodes)
        assert view.on_slots == capacity(view.usable)
        assert views.free(snap) == free_capacity(snap, (PowerState.ON, PowerState.BOOTING))


queues = st.lists(
    st.tuples(
        st.sets(st.integers(0, 11)),  # the jobs that leave (by position, if there)
        st.lists(
            st.tuples(st.integers(1, 3), st.integers(1, 4), st.sampled_from(list(Placement))),
            max_size=4,
        ),  # arrivals: units, cores per unit, placement
        st.sets(st.integers(0, 11)),  # the jobs whose hold is toggled (a new object)
    ),
    min_size=1,
    max_size=25,
)


@settings(max_examples=200, deadline=None)
@given(queues)
def test_the_queue_view_brought_along_equals_one_made_afresh(queues: Any) -> None:
    views, queued, t, n = SnapshotViews(), (), 0, 0
    nodes = [node(name) for name in NAMES]
    for leave, arrive, toggle in queues:
        t += 60
        kept = [j for i, j in enumerate(queued) if i not in leave]
        kept = [
            dataclasses.replace(j, held=not j.held) if i in toggle else j
            for i, j in enumerate(kept)
        ]
        for units, cores, placement in arrive:
            n += 1
            j = dataclasses.replace(job(f"q{n}", t, units=units, cores=cores), placement=placement)
            kept.append(j)
        queued = tuple(kept)
        snap = snapshot(t, nodes, queued=queued)
        got, fresh = views.queue(snap), SnapshotViews().queue(snap)
        assert (got.queued, got.submit_sum, got.most, got.shapes, got.need) == (
            fresh.queued, fresh.submit_sum, fresh.most, fresh.shapes, fresh.need,
        )  # fmt: skip
