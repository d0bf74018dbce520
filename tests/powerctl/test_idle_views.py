"""The idle-timeout policy decides with its views brought along as it would with them afresh.

:class:`~wattsched.powerctl.idle_timeout.IdleTimeoutPolicy` reads the cycle's figures (free
capacity, the queue's need and shapes, the rooms of the usable nodes, the power-on candidates,
the off order) from :class:`~wattsched.powerctl.views.SnapshotViews` kept from one cycle to the
next. Over random cycles (nodes switched, jobs started and ended, jobs queued, held and gone,
a cap or none) its decisions equal those of a twin whose views are made afresh every cycle, and
those figures equal the scratch formulas of :mod:`wattsched.powerctl.selection`.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.powerctl.power_builders import job, node, plan, running, snapshot
from wattsched.powerctl.idle_timeout import IdleTimeoutPolicy
from wattsched.powerctl.selection import (
    free_capacity,
    missing_units,
    power_on_candidates,
    queue_shapes,
    queued_need,
    shape_rooms,
)
from wattsched.powerctl.views import SnapshotViews
from wattsched.scheduler.model import Node, Placement, PowerState

NAMES = [f"n{i}" for i in range(6)]
STATES = [PowerState.ON, PowerState.ON, PowerState.OFF, PowerState.FAILED, PowerState.BOOTING]
POWERED = (PowerState.ON, PowerState.BOOTING)

cycles = st.lists(
    st.tuples(
        st.integers(0, 700),  # time step
        st.dictionaries(st.sampled_from(NAMES), st.sampled_from(STATES), max_size=3),  # switched
        st.sets(st.sampled_from(NAMES), max_size=3),  # running on (a job on it and the next)
        st.booleans(),  # keep the running tuple
        st.sets(st.integers(0, 7), max_size=3),  # queued jobs that leave (by position)
        st.lists(
            st.tuples(st.integers(1, 6), st.integers(1, 5), st.sampled_from(list(Placement))),
            max_size=3,
        ),  # arrivals: units, cores per unit, placement
        st.sets(st.integers(0, 7), max_size=2),  # queued jobs whose hold is toggled
        st.sets(st.sampled_from(NAMES), max_size=2),  # starting now
    ),
    min_size=1,
    max_size=30,
)


@settings(max_examples=200, deadline=None)
@given(
    cycles,
    st.lists(st.sampled_from([PowerState.ON, PowerState.OFF]), min_size=6, max_size=6),
    st.sampled_from([None, 700.0, 2000.0]),
    st.integers(0, 2),
)
def test_idle_timeout_decides_as_with_views_made_afresh(
    cycles: Any, first: list[PowerState], cap: float | None, min_on: int
) -> None:
    kept = IdleTimeoutPolicy(idle_s=600, min_on=min_on, backoff_s=900)
    afresh = IdleTimeoutPolicy(idle_s=600, min_on=min_on, backoff_s=900)
    nodes: tuple[Node, ...] = tuple(
        node(name, efficiency=1.0 + i / 10, cores=2 + 2 * (i % 2), state=s)
        for i, (name, s) in enumerate(zip(NAMES, first, strict=True))
    )
    runs: tuple[Any, ...] = ()
    queued: tuple[Any, ...] = ()
    t, n = 0, 0
    for dt, switched, run_on, keep_run, leave, arrive, toggle, starting in cycles:
        t += dt
        nodes = tuple(
            dataclasses.replace(a, state=switched[a.name]) if a.name in switched else a
            for a in nodes
        )
        if not keep_run:
            old = {rj.job.id: rj for rj in runs}
            runs = tuple(
                old.get(f"r{name}")
                or running(job(f"r{name}", units=2, cores=1 + i % 2), [name, NAMES[i - 1]])
                for i, name in enumerate(NAMES)
                if name in run_on
            )
        jobs = [
            dataclasses.replace(j, held=not j.held) if i in toggle else j
            for i, j in enumerate(queued)
            if i not in leave
        ]
        for units, cores, placement in arrive:
            n += 1
            jobs.append(
                dataclasses.replace(job(f"q{n}", t, units=units, cores=cores), placement=placement)
            )
        queued = tuple(jobs)
        snap = snapshot(t, nodes, run=runs, queued=queued, cap=cap)
        p = plan(t, *((f"s{name}", t, [name]) for name in sorted(starting)))
        afresh.views = SnapshotViews()
        got = kept.decide(snap, p)
        assert got == afresh.decide(snap, p)
        # The figures the policy reads, against the scratch formulas.
        views = kept.views
        usable = [x for x in snap.nodes if x.state in POWERED and x.available]
        shapes = queue_shapes(snap)
        rooms = views.shape_rooms(snap)
        assert views.queue(snap).shapes == shapes
        assert rooms == shape_rooms(shapes, usable)
        assert {u: k - rooms[u] for u, k in shapes.items() if k > rooms[u]} == missing_units(
            shapes, usable
        )
        assert tuple(views.queue(snap).need) == queued_need(snap).as_tuple()
        assert views.free(snap) == free_capacity(snap, POWERED)
        assert views.candidates(snap, 900) == power_on_candidates(snap, 900)
        assert views.nodes(snap).n_powered == sum(x.state in POWERED for x in snap.nodes)
