"""The lower bounds of :mod:`wattsched.scheduler.hybrid.bound` are valid: never above the
objective of any real schedule (every priority order through the real mapper, tiny instances),
and reported in the search's stats."""

from __future__ import annotations

import itertools

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wattsched.scheduler.hybrid.bound import fluid_bound, lp_bound
from wattsched.scheduler.hybrid.mapping import map_schedule
from wattsched.scheduler.hybrid.synthetic import eurora_like_jobs, eurora_like_nodes
from wattsched.scheduler.mapper import StateCache
from wattsched.scheduler.model import Job, PowerCap, Resources, RunningJob, Snapshot


@st.composite
def tiny(draw: st.DrawFn) -> Snapshot:
    nodes = tuple(eurora_like_nodes(2))
    n = draw(st.integers(2, 5))
    jobs = []
    for i in range(n):
        jobs.append(
            Job(
                id=str(i + 1),
                submit=draw(st.integers(0, 50)),
                walltime=draw(st.integers(1, 400)),
                units=draw(st.integers(1, 2)),
                unit=Resources(
                    cores=draw(st.sampled_from([1, 4, 8, 16])),
                    mem_mb=1024,
                    gpus=draw(st.sampled_from([0, 0, 1])),
                ),
                unit_power_w=float(draw(st.integers(5, 120))),
                queue="q",
                ewt=draw(st.sampled_from([3600, 21600, 86400])),
            )
        )
    running: tuple[RunningJob, ...] = ()
    if draw(st.booleans()):
        r = Job(id="99", submit=0, walltime=300, units=1, unit=Resources(cores=8, mem_mb=1024),
                unit_power_w=40.0, queue="q", ewt=3600)  # fmt: skip
        end = draw(st.integers(20, 400))  # below 60: past its end estimate (overrunning)
        running = (RunningJob(r, 0, ("n00",), max(end, 0)),)
    cap = draw(st.sampled_from([260.0, 320.0, 400.0, float("inf")]))
    return Snapshot(60, nodes, running, tuple(jobs), PowerCap.constant(cap))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tiny())
def test_the_bounds_are_below_every_list_schedule(snap: Snapshot) -> None:
    best = float("inf")
    for perm in itertools.permutations(snap.queued):
        mapped = map_schedule(snap, StateCache(), list(perm), release=None, source="p")
        best = min(best, mapped.objective)
    fluid = fluid_bound(snap)
    lp = lp_bound(snap, slots=40, horizon=2000)
    assert fluid <= best + 1e-6
    assert lp is not None and lp <= best + 1e-6


def test_the_search_reports_a_valid_bound_and_its_gap() -> None:
    from wattsched.scheduler.dispatcher import create

    snap = Snapshot(0, tuple(eurora_like_nodes(8)), (), tuple(eurora_like_jobs(30, seed=1)),
                    PowerCap.constant(1100.0))  # fmt: skip
    plan = create("hybrid", mode="offline", budget_s=1.0, time_limit_s=0.5).plan(snap)
    stats = plan.stats
    assert stats.bound is not None and stats.objective is not None
    assert 0 < stats.bound <= stats.objective
    assert stats.extra["gap"] == round(stats.objective / stats.bound, 4)
