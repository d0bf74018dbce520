"""Coolest and Spatio-Temporal: valid schedules that never pass the threshold."""

from __future__ import annotations

import numpy as np
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from wattsched.scheduler.thermal.heuristics import coolest, spatio_temporal, unrunnable_jobs
from wattsched.scheduler.thermal.instance import ThermalInstance, check_schedule, makespan


@st.composite
def instances(draw: st.DrawFn) -> ThermalInstance:
    nj = draw(st.integers(1, 8))
    n = draw(st.integers(1, 4))
    work = draw(st.lists(st.integers(1, 6), min_size=nj, max_size=nj))
    power = draw(st.lists(st.integers(10, 150), min_size=nj, max_size=nj))
    return ThermalInstance(
        np.array(work),
        np.array(power, dtype=float),
        n,
        r=draw(st.floats(0.2, 0.9)),
        f=draw(st.floats(0.2, 0.8)),
        p_idle=draw(st.integers(0, 60)),
        t_sup=draw(st.floats(10, 30)),
        t_thresh=draw(st.floats(90, 130)),
    )


@settings(max_examples=150, deadline=None)
@given(inst=instances())
def test_heuristics_never_pass_the_threshold(inst: ThermalInstance) -> None:
    assume(not unrunnable_jobs(inst))
    for sched in (coolest(inst), spatio_temporal(inst)):
        assert check_schedule(inst, sched, 1, hpc=True) == []
        assert makespan(sched) >= inst.makespan_lower_bound()


def test_coolest_places_on_the_coolest_node() -> None:
    # node 0 got the hot job first; when job 1 (second) comes, the coolest free node is node 1,
    # and the third job goes to whichever node frees first
    inst = ThermalInstance(np.array([2, 1, 1]), np.array([120.0, 50.0, 50.0]), 2)
    s = coolest(inst)
    assert s[0, 0].sum() == 2 and s[1, 1].sum() == 1
    assert check_schedule(inst, s, 1, hpc=True) == []
