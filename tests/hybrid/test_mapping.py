"""The hybrid's mapper agrees with PRB where it should."""

from __future__ import annotations

import pytest

from wattsched.scheduler.dispatcher import prb_order
from wattsched.scheduler.hybrid.mapping import map_schedule
from wattsched.scheduler.hybrid.synthetic import eurora_like_jobs, eurora_like_nodes
from wattsched.scheduler.mapper import StateCache
from wattsched.scheduler.model import PowerCap, Snapshot
from wattsched.scheduler.prb import PRBDispatcher


@pytest.mark.parametrize("cap_w", [1000.0, 1200.0, 1600.0, float("inf")])
def test_screened_list_schedule_is_prb_exactly(cap_w: float) -> None:
    # The mapper's plain list scheduling is PRB's own schedule (the search's baseline).
    snap = Snapshot(
        0,
        tuple(eurora_like_nodes(8)),
        (),
        tuple(eurora_like_jobs(60, seed=11)),
        PowerCap.constant(cap_w),
    )
    prb = PRBDispatcher(full_plan=True).plan(snap)
    mapped = map_schedule(snap, StateCache(), prb_order(snap.queued), release=None, source="prb")
    assert {a.job_id: a.start for a in mapped.assignments} == {
        a.job_id: a.start for a in prb.assignments
    }


def test_release_times_are_not_events_unless_nothing_runs() -> None:
    snap = Snapshot(
        0,
        tuple(eurora_like_nodes(8)),
        (),
        tuple(eurora_like_jobs(12, seed=5)),
        PowerCap.constant(1100.0),
    )
    jobs = prb_order(snap.queued)
    release = {j.id: 7 * k for k, j in enumerate(jobs)}  # odd times, mostly not job ends
    mapped = map_schedule(snap, StateCache(), jobs, release=release, source="t")
    assert mapped.complete
    ends = {0} | {
        a.start + next(j.walltime for j in jobs if j.id == a.job_id) for a in mapped.assignments
    }
    for a in mapped.assignments:
        assert a.start >= release[a.job_id] or a.start in ends
        assert a.start in ends  # every start is a time at which a replay's cycle runs
