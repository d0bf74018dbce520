"""The online fill that keeps the plan (``fill_now="plan"``, opt-in).

Online, after the plan's starts, the hybrid fills: every other queued job that fits now
starts too, in PRB's order (:meth:`.starts.StartChecks._fill`). That greedy fill takes room
and power the plan's later starts were counting on, and they slip: on
``hist_200_20140402_220500`` cap 0 with runtime = walltime, where the offline search beats
PRB by 15 %, the online hybrid loses 3.6 % to it, with 57 planned starts refused over the cap
(``bench/results/hybrid_eurora.md``, "Session 44").

Here a job fills only if it delays none of the stored plan's later starts, as conservative
backfilling does for every queued job: it ends (by its predicted runtime: the predictor's, else
its walltime) before the next later start, or it keeps off the nodes of every later start it
overlaps and leaves them their power (the cap over its run against the power now, its own and
theirs, every running job counted as still running).

Online the plan's later starts are tentative (every early end re-plans), so this fill gives up
room the greedy one would use: on the 24 real-runtime rows it lifts the rows where the greedy
fill broke the plan, moves the synthetic ones by at most 0.5 % and costs one row 8 % (same
section); on the online traces, where jobs keep arriving, it costs more than it saves (one
trace 1.181 -> 0.781 against PRB: one-node jobs held back for later starts the next plans
moved; "Session 45"). It is not the default.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from wattsched.scheduler.hybrid.search_params import SearchParamError
from wattsched.scheduler.mapper import ClusterState, StateCache, placement_of
from wattsched.scheduler.model import Assignment, Job, Snapshot
from wattsched.scheduler.node_arrays import EPS_W, IntArray
from wattsched.scheduler.prb import prb_node_order
from wattsched.scheduler.reservation import Reservations

FILL_MODES = (True, False, "plan")
"""What ``fill_now`` may be (None: on online, the greedy fill)."""


def fill_mode(fill_now: bool | str | None, online: bool) -> bool | str:
    """The dispatcher's ``fill_now``: None is the greedy fill online and none offline; a
    value not in :data:`FILL_MODES` raises :class:`.SearchParamError` naming it."""
    if fill_now is None:
        return online
    if fill_now not in FILL_MODES:
        raise SearchParamError(
            f"HybridDispatcher: fill_now={fill_now!r} must be True, False or 'plan'"
        )
    return fill_now


@dataclass(frozen=True, slots=True)
class LaterStart:
    """A later start of the stored plan: when, on which nodes, the power it adds."""

    start: int
    nodes: IntArray
    watts: float


def later_starts(
    snap: Snapshot,
    cache: StateCache,
    state: ClusterState,
    schedule: Mapping[str, Assignment],
) -> list[LaterStart]:
    """The plan's starts after now of jobs still queued, by start time; each one's power is
    what it adds to ``state`` (the cluster with this cycle's starts)."""
    queued = {j.id: j for j in snap.queued}
    out = []
    for a in schedule.values():
        job = queued.get(a.job_id)
        if job is None or a.start <= snap.time:
            continue
        idx, cnt = placement_of(state.arrays, a.nodes)
        out.append(LaterStart(a.start, idx, state.delta_watts(cache.vec(job), idx, cnt)))
    return sorted(out, key=lambda x: x.start)


def plan_fill(
    snap: Snapshot,
    cache: StateCache,
    state: ClusterState,
    jobs: Sequence[Job],
    later: Sequence[LaterStart],
    predict: Callable[[Job], int],
    res: Reservations | None,
) -> list[Assignment]:
    """``jobs`` (in their order) that fit now and delay no start of ``later`` (see the
    module doc) nor the reservation ``res``, each booked in ``state`` (and ``res``)."""
    now = snap.time
    out: list[Assignment] = []
    for job in jobs:
        jv = cache.vec(job)
        got = state.place(jv, prb_node_order(state), now)
        if got is None:
            continue
        idx, cnt = got
        end = now + predict(job)
        hit = [x for x in later if x.start < end]
        if hit:
            if np.isin(idx, np.concatenate([x.nodes for x in hit])).any():
                continue
            watts = state.power_w + state.delta_watts(jv, idx, cnt) + sum(x.watts for x in hit)
            if watts > state.cap.min_over(now, end) + EPS_W:
                continue
        if res is not None and not res.admits(jv, idx, cnt, now, job.walltime):
            continue
        state.commit(jv, idx, cnt)
        if res is not None:
            res.book(jv, idx, cnt, now, job.walltime)
        out.append(Assignment(job.id, now, state.names_for(idx, cnt)))
    return out
