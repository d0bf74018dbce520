"""What the hybrid starts now: the plan's starts checked on the real cluster, the fill, and
(online) a starving wide job's reservation (:mod:`wattsched.scheduler.reservation`). A mixin
of :class:`.dispatcher.HybridDispatcher`."""

from __future__ import annotations

import logging
from collections.abc import Callable

from wattsched.scheduler.dispatcher import prb_order
from wattsched.scheduler.hybrid.holds import JudgedHolds
from wattsched.scheduler.hybrid.planfill import fill_mode, later_starts, plan_fill
from wattsched.scheduler.hybrid.search import SearchParamError
from wattsched.scheduler.hybrid.urgent import urgent_starts
from wattsched.scheduler.listsched import list_schedule
from wattsched.scheduler.mapper import StateCache, placement_of
from wattsched.scheduler.model import Assignment, Job, Snapshot
from wattsched.scheduler.prb import prb_node_order
from wattsched.scheduler.reservation import (
    Arrivals,
    Reservations,
    greedy_starts,
    heads_first,
    whole_node_accelerators,
    whole_node_cores,
)
from wattsched.scheduler.runtime_predictor import RuntimePredictor

log = logging.getLogger("wattsched.scheduler.hybrid.dispatcher")


class StartChecks:
    """The hybrid's starts now (see the module doc)."""

    cache: StateCache
    fill_now: bool | str
    """The fill after the plan's starts: True greedy, ``"plan"`` keeping the plan
    (:mod:`.planfill`), False none."""
    urgent: bool
    urgent_wait: float
    reserve: bool
    reserve_cores: int | None
    reserve_accel: bool = False
    """A job that needs all of a node's GPUs or MICs is wide too
    (:func:`~wattsched.scheduler.reservation.whole_node_accelerators`)."""
    reservations: int
    predictor: RuntimePredictor | None
    arrivals: Arrivals
    """The recent arrivals (``reserve``): the reference of the starving test."""
    recent: Arrivals | None
    """The last arrivals the rollout's jobs to arrive are drawn from (None: no foresight)."""
    seed: int
    replans: int
    holds: JudgedHolds | None = None
    """The reservations the rollout judges (``hold_margin``; None: the value test alone)."""
    _schedule: dict[str, Assignment]
    _res: Reservations | None = None
    """This cycle's reservations (``reserve``), from :meth:`_checked` to :meth:`_fill`."""

    def _setup_starts(self, online: bool, reserve: bool | None, reserve_cores: int | None,
                      reservations: int, hold_margin: float | None, rollout: int,
                      foresight: int, fill_now: bool | str | None) -> None:  # fmt: skip
        """The reservation's and the fill's settings (the dispatcher's parameters of the
        same names)."""
        self.fill_now = fill_mode(fill_now, online)
        if reservations < 1:
            raise SearchParamError(f"HybridDispatcher: reservations={reservations!r} must be >= 1")
        self.reserve = online and reserve is not False  # None: online, on
        self.reserve_cores = reserve_cores
        self.reservations = reservations
        self.arrivals = Arrivals()
        judged = self.reserve and rollout > 0 and self.predictor is not None
        self.holds = None
        if judged and hold_margin is not None:
            self.holds = JudgedHolds(hold_margin, rollout, foresight)

    def _predict(self, job: Job) -> int:
        return job.walltime if self.predictor is None else self.predictor.predict(job)

    def _pays_for(self, snap: Snapshot) -> Callable[[Job], bool] | None:
        """This cycle's test of a judged reservation (None: none, :mod:`.holds`)."""
        if self.holds is None or self.predictor is None:
            return None
        window = self.recent.jobs if self.recent is not None else ()
        return self.holds.pays_for(snap, self.predictor, self.seed + self.replans, window)

    def _checked(self, snap: Snapshot, selected: tuple[Assignment, ...]) -> tuple[Assignment, ...]:
        """The starts of ``selected`` that really fit now, in order; the others wait.

        A safety net on the node-level check: a start planned from walltime estimates (or a
        reused plan) is carried out only if its nodes have room and the cap holds now. With
        ``reserve`` the starving wide jobs that fit start first, and no start may delay the
        reservation of the first that does not.
        """
        state = self.cache.state(snap)
        jobs = {j.id: j for j in snap.queued if not j.held}
        out: list[Assignment] = []
        res = None
        if self.reserve:
            wide = self.reserve_cores
            if wide is None:
                wide = whole_node_cores(snap.nodes)
            also_wide = whole_node_accelerators(snap.nodes) if self.reserve_accel else None
            out, res = heads_first(snap, self.cache, state, self._predict, self.arrivals.jobs,
                                   wide, self.reservations, self._pays_for(snap),
                                   also_wide)  # fmt: skip
        self._res = res
        if self.urgent:
            out += urgent_starts(snap, self.cache, state, res, self.urgent_wait)
        first = {a.job_id for a in out}
        for a in selected:
            if a.job_id in first:
                continue
            if a.start > snap.time:
                out.append(a)
                continue
            job = jobs.get(a.job_id)
            if job is None:
                continue
            jv = self.cache.vec(job)
            idx, cnt = placement_of(state.arrays, a.nodes)
            why = state.check(jv, idx, cnt, snap.time)
            if not why and res is not None and not res.admits(jv, idx, cnt, snap.time,
                                                                job.walltime):  # fmt: skip
                why = "it would delay a starving job's reservation"
            if why:
                log.info("hybrid: job %s waits: %s", a.job_id, why)
                self._schedule = {}  # the plan no longer matches the cluster: re-plan next time
                continue
            state.commit(jv, idx, cnt)
            if res is not None:
                res.book(jv, idx, cnt, snap.time, job.walltime)
            out.append(a)
        return tuple(out)

    def _fill(self, snap: Snapshot, selected: tuple[Assignment, ...]) -> tuple[Assignment, ...]:
        """Add, in PRB order, every queued job that fits now beside the plan's starts (and
        does not delay this cycle's reservation; with ``fill_now="plan"`` nor any later start
        of the stored plan, :mod:`.planfill`)."""
        state = self.cache.state(snap)
        jobs = {j.id: j for j in snap.queued}
        now = [a for a in selected if a.start <= snap.time]
        for a in now:
            idx, cnt = placement_of(state.arrays, a.nodes)
            state.commit(self.cache.vec(jobs[a.job_id]), idx, cnt)
        starting = {a.job_id for a in now}
        rest = [j for j in prb_order(snap.queued) if j.id not in starting]
        if self.fill_now == "plan" and self._schedule:
            later = later_starts(snap, self.cache, state, self._schedule)
            return (*selected, *plan_fill(snap, self.cache, state, rest, later, self._predict,
                                          self._res))  # fmt: skip
        if self._res is not None:
            return (*selected, *greedy_starts(snap, self.cache, state, rest, self._res))
        ends = {rj.job.id: rj.end_estimate for rj in snap.running}
        extra = list_schedule(
            state, self.cache, rest, snap.time, ends, node_order=prb_node_order, full=False
        )
        return (*selected, *extra.assignments)
