"""``HybridDispatcher``: the hybrid CP + PRB-mapper dispatcher behind the control cycle.

Registered as ``hybrid`` (with conflict-set feedback) and ``hybrid-nofb`` (one CP pass).
Two modes. ``online`` (the daemon's, the default): each cycle plans within ``cycle_budget_s``
wall seconds, the whole search included; a solve that times out is not retried. ``offline``
(instance experiments, ``wattsched simulate --offline``): each solve starts at
``time_limit_s`` (default: the timeout policy's 5 s), retried with a doubled limit up to 60 s
when it found nothing; ``budget_s`` optionally bounds one search, ``total_budget_s`` (default
20 s) the whole replay: each re-plan gets what is left, then jobs start by the PRB rule. An
offline plan is reused while it holds, so a replay with runtime = walltime (the paper's
protocol) plans once; after early ends it is searched again briefly (``research``,
:mod:`.research`) or re-timed by list scheduling (:mod:`.retime`). Each plan publishes its
next planned start (``Plan.wake_at``) so that the cycle runs then.

In both modes the last full schedule is kept: while the cluster evolves as planned, the next
cycles follow it instead of searching again, unless PRB's order from the cluster as it is
beats it (then PRB's is the plan: :func:`.retime.prb_if_better`). Any change triggers a new
search. The dispatcher never raises on a solver outcome: the PRB plan is the fallback.
"""

from __future__ import annotations

import logging
import math
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from functools import partial
from typing import Any

from wattsched.scheduler.dispatcher import Dispatcher
from wattsched.scheduler.hybrid.holds import DEFAULT_MARGIN
from wattsched.scheduler.hybrid.predicted import predicted_view
from wattsched.scheduler.hybrid.research import Researcher, ResearchPolicy
from wattsched.scheduler.hybrid.retime import ended_early, prb_if_better, prb_rule_plan, retime
from wattsched.scheduler.hybrid.reuse import PlanMemory
from wattsched.scheduler.hybrid.robust import KINDS, robust_choice
from wattsched.scheduler.hybrid.rollout import online_choice
from wattsched.scheduler.hybrid.search import (
    ReplanReport,
    SearchParamError,
    SearchParams,
    TimeoutPolicy,
    Timer,
    hybrid_search,
)
from wattsched.scheduler.hybrid.search_params import check_ranges, mode_shares
from wattsched.scheduler.hybrid.serial import warm as warm_decoders
from wattsched.scheduler.hybrid.starts import StartChecks
from wattsched.scheduler.hybrid.twins import first_come_among_twins
from wattsched.scheduler.hybrid.workclock import WorkClock
from wattsched.scheduler.mapper import StateCache
from wattsched.scheduler.model import Assignment, Plan, Snapshot, SolverStats
from wattsched.scheduler.reservation import Arrivals
from wattsched.scheduler.runtime_predictor import RuntimePredictor

log = logging.getLogger(__name__)

MODES = ("online", "offline")
OFFLINE_TOTAL_BUDGET_S = 20.0
"""Default wall seconds of search for a whole offline replay (the paper's method takes
15-20 s an instance); later re-plans get what is left, then jobs start by the PRB rule."""
MIN_REPLAN_S = 0.05
FORESIGHT_JOBS = 1000
"""The last arrivals kept for ``foresight`` (those of its horizon are drawn from)."""
ROBUST_S = 4.0
"""Wall seconds at most for weighing a plan under runtime scenarios (:mod:`.robust`)."""


class HybridDispatcher(StartChecks, PlanMemory, Dispatcher):
    """The power-capping paper's hybrid dispatcher (DEC), with or without feedback.

    Parameters: ``feedback``; ``mode`` (``online`` or ``offline``); ``iterations`` (CP solves
    with feedback); ``time_limit_s`` (one solve; online at most the cycle budget); ``budget_s``
    (whole search, offline); ``workers`` (CP-SAT threads, default 8: a portfolio, more workers
    than cores is fine); ``grain_s`` (time grain of the CP model, None: automatic);
    ``offline_timeout_policy``; ``cycle_budget_s`` (online, default 1 s); ``full_plan`` (return
    the whole schedule, not only what starts now); ``orderings`` (also try other priority
    orderings as candidate schedules); ``fill_now`` (default: online only; after the plan's
    starts, also start now, in PRB order, every other job that fits now: the plan assumes
    walltimes, jobs end earlier, and idling resources for a plan that will be redone at the next
    event cost more than it saves; ``"plan"``: only what delays no later start of the plan,
    :mod:`.planfill`); ``lns`` (offline, default: with feedback only; spend the rest of
    ``budget_s`` on large-neighbourhood moves); ``seed``; ``lower_bound`` (the valid bound in
    the stats: ``fluid``, the default online, ``lp``, the default offline, or ``none``; see
    :mod:`.bound`); ``local_search`` (the budget's share for the local search before the CP,
    :mod:`.localsearch`, None: 0.15 offline, 0.5 online; ``own_list``, None: offline only;
    ``serial``, the share after it for the serial decoder, :mod:`.serial`, None: 0.05 offline,
    with the CP's solutions decoded serially, a polish after the LNS); ``runtime_ratios`` (offline:
    runtime/walltime ratios known before, e.g. of earlier jobs; with them and those of the jobs
    ended so far a search's plan must beat PRB in ``scenarios`` runtime scenarios of each of
    ``scenario_kinds``, :mod:`.robust`, else PRB's rule starts the jobs, as after the first
    early end; None: judged on walltimes); ``research`` (offline: a
    :class:`.research.ResearchPolicy` or its fields, the re-search at early ends; None: none,
    PRB's rule or re-timing as above); ``predictor`` (a
    :class:`~wattsched.scheduler.runtime_predictor.RuntimePredictor`, or True for one that
    learns only from the jobs seen to end; the search, its scenarios and the re-search plan on
    predicted runtimes, :mod:`.predicted`, while they beat the walltimes (its gate), and a job
    past its prediction makes the plan stale as an early end does (online: the jobs running are
    not those the plan expects); every start is still checked on the real snapshot; False:
    walltimes; None, the default: a gated one online, walltimes offline); ``urgent_first``
    (online: the jobs of the most urgent queue that fit now start first, PRB's rule for that
    queue, :mod:`.urgent`; ``urgent_wait`` k > 0: only those that have waited k times their
    queue's expected wait); ``margin`` (online: a searched plan is taken only when it beats
    PRB's plan by this share of the weighted wait PRB's plan leaves from now on, else PRB's
    plan, :func:`.rollout.online_choice`; 0: the best); ``rollout`` (online, with a predictor:
    scenarios of a rollout judging a search's starts against PRB's rule, :mod:`.rollout`; 8 by
    default, 0: none); ``foresight`` (seconds: the rollout's scenarios also hold jobs to arrive
    within it, drawn from the last arrivals; 4 h by default, 0: none); ``rollout_margin`` (the
    search's starts are kept unless they lose the rollout by this share, 0.5 % by default; 0:
    unless they lose or tie); ``reserve`` (online: a reservation for a starving wide job,
    :mod:`.starts`, :mod:`wattsched.scheduler.reservation`; None, the default: on online;
    ``reserve_cores``: a job whose units need that many cores in all is wide too; None, the
    default: the cores of the largest node, a job that needs a whole node; 0: wide means two
    units or more; ``reserve_accel``, opt-in: a job that needs all of a node's GPUs or MICs
    too); ``reservations``: how many starving jobs hold a reservation at once (in PRB's order,
    each computed with the earlier ones booked: a start delays none; 1, the default: the first
    only); ``hold_margin`` (online, with a predictor and a rollout: a wide waited job that fails
    the reservation's value test holds one when a rollout says it beats PRB's rule by this
    share, 2 % by default, :mod:`.holds`; None: never); ``deterministic`` (online: the search's
    budget counts work, not wall seconds, :mod:`.workclock`: the same snapshots give the same
    plans on any machine and load, so decisions and replays are reproducible; a wall cap of 3 x
    the budget still stops a search; None, the default: on online; False: a wall-clock budget);
    opt-in, off by default: ``cold_prb`` / ``cold_prior`` (PRB's plan / ratios > 0 the rollout
    draws from too while its record is too short, :func:`.rollout.rollout_errors`),
    ``rollout_by_class`` (:func:`.rollout.class_ratio`), ``twin_power=False``
    (:func:`.twins.first_come_among_twins`).
    """

    name = "hybrid"

    def __init__(
        self,
        feedback: bool = True,
        *,
        mode: str = "online",
        iterations: int = 5,
        time_limit_s: float | None = None,
        budget_s: float | None = None,
        workers: int = 8,
        grain_s: int | None = None,
        offline_timeout_policy: TimeoutPolicy | None = None,
        cycle_budget_s: float = 1.0,
        full_plan: bool = False,
        orderings: bool = True,
        fill_now: bool | str | None = None,
        lns: bool | None = None,
        seed: int = 0,
        total_budget_s: float | None = None,
        lower_bound: str | None = None,
        local_search: float | None = None,
        runtime_ratios: Sequence[float] | None = None,
        scenarios: int = 2,
        scenario_kinds: Sequence[str] = KINDS,
        research: ResearchPolicy | Mapping[str, Any] | None = None,
        predictor: RuntimePredictor | bool | None = None,
        urgent_first: bool = False,
        urgent_wait: float = 0.0,
        margin: float = 0.0,
        rollout: int = 8,
        foresight: int = 14_400,
        rollout_margin: float = 0.005,
        reserve: bool | None = None,
        reserve_cores: int | None = None,
        reservations: int = 1,
        hold_margin: float | None = DEFAULT_MARGIN,
        deterministic: bool | None = None,
        cold_prb: bool = False,
        cold_prior: Sequence[float] = (),
        rollout_by_class: bool = False,
        twin_power: bool = True,
        reserve_accel: bool = False,
        own_list: bool | None = None,
        serial: float | None = None,
    ) -> None:
        super().__init__()
        warm_decoders()  # the compiled decodes loaded now, not in the first search's budget
        if mode not in MODES:
            raise SearchParamError(f"HybridDispatcher: mode={mode!r} must be one of {MODES}")
        total = OFFLINE_TOTAL_BUDGET_S if total_budget_s is None else total_budget_s
        check_ranges("HybridDispatcher",
                     {"cycle_budget_s": cycle_budget_s, "total_budget_s": total,
                      "cold_prior": min(cold_prior, default=1.0)},
                     {"reserve_cores": reserve_cores or 0, "margin": margin,
                      "urgent_wait": urgent_wait, "foresight": foresight,
                      "rollout_margin": rollout_margin,
                      "hold_margin": hold_margin or 0})  # fmt: skip
        if deterministic and mode != "online":
            raise SearchParamError("HybridDispatcher: deterministic=True is for mode='online'")
        self.deterministic = mode == "online" if deterministic is None else deterministic
        self.name = "hybrid" if feedback else "hybrid-nofb"
        self.mode, self.seed = mode, seed
        self.total_budget_s = total if mode == "offline" else math.inf
        self.spent_s, self.replans = 0.0, 0
        self.fallbacks = 0
        """Reused plans replaced by PRB's (:meth:`_prb_if_better`)."""
        self.on_replan: Callable[[ReplanReport], None] | None = None
        """Called after each re-plan (the CLI prints a progress line); None: silent."""
        self.full_plan = full_plan
        self.prior = None if runtime_ratios is None else tuple(runtime_ratios)
        self.scenarios, self.kinds = scenarios, tuple(scenario_kinds)
        self._prb_jobs: frozenset[str] | None = None
        """With ``runtime_ratios``: the queued jobs the PRB rule now starts (None: plans)."""
        self.twin_power, self.reserve_accel = twin_power, reserve_accel
        params = partial(SearchParams, feedback=feedback, iterations=iterations, workers=workers,
                         grain_s=grain_s, timeout_policy=offline_timeout_policy or TimeoutPolicy(),
                         orderings=orderings, seed=seed,
                         **mode_shares(mode, local_search, serial))  # fmt: skip
        if mode == "offline":
            self.params = params(
                time_limit_s=time_limit_s, budget_s=budget_s, retry_on_timeout=True,
                lns=feedback if lns is None else lns, lower_bound=lower_bound or "lp",
                own_list=own_list is not False)  # fmt: skip
        else:
            # 10 % of the cycle kept for the fill and bookkeeping; the rest to CP (no LNS).
            self.params = params(
                time_limit_s=min(time_limit_s or cycle_budget_s, cycle_budget_s),
                budget_s=0.9 * cycle_budget_s, retry_on_timeout=False, lns=False,
                lower_bound=lower_bound or "fluid", own_list=bool(own_list))  # fmt: skip
        self._schedule: dict[str, Assignment] = {}
        self._expect: tuple[tuple[object, ...], ...] | None = None
        self._nodes: object = None
        self._cap: object = None
        self._walltime: dict[str, int] = {}
        self._running_ends: dict[str, int] = {}
        self._running: dict[str, tuple[int, tuple[str, ...]]] = {}
        self._watch: dict[str, tuple[int, int]] = {}
        self._ratios: list[float] = []
        policy = ResearchPolicy(**research) if isinstance(research, Mapping) else research
        self.research = Researcher(policy, self.params) if policy and mode == "offline" else None
        if predictor is None:  # online, the gated predictor won on most traces (docs/hybrid.md)
            predictor = mode == "online"
        self.predictor = RuntimePredictor() if predictor is True else predictor or None
        self._predicted: dict[str, int] = {}
        self._vcache: StateCache | None = None
        self.urgent, self.urgent_wait = urgent_first and mode == "online", urgent_wait
        online = {"margin": margin if mode == "online" else 0.0, "rollout": rollout,
                  "rollout_margin": rollout_margin, "cold_prb": cold_prb,
                  "cold_prior": tuple(cold_prior), "by_class": rollout_by_class}  # fmt: skip
        self._choose = partial(online_choice, predictor=self.predictor, horizon=foresight, **online)
        watch = foresight and rollout and mode == "online"  # offline: never consulted
        self.recent = Arrivals(FORESIGHT_JOBS) if watch else None
        self._setup_starts(mode == "online", reserve, reserve_cores, reservations, hold_margin,
                           rollout, foresight, fill_now)  # fmt: skip

    # -- the dispatcher interface -------------------------------------------------------------

    def plan(self, snap: Snapshot) -> Plan:
        self._res = None
        if self.reserve:
            self.arrivals.observe(snap)
        if self.recent is not None:
            self.recent.observe(snap)
        plan = self._plan(snap)
        res = self._res
        if res is not None:  # published as later starts, as EASY's
            planned = plan.by_job()
            later = [a for a in res.assignments() if a.job_id not in planned]
            if later:
                extra = {**plan.stats.extra, "reserved": later[0].job_id, "shadow": later[0].start}
                plan = replace(plan, assignments=(*plan.assignments, *later),
                               stats=replace(plan.stats, extra=extra))  # fmt: skip
        if self.predictor is not None:  # watched from their start: a short job is learned too
            self.predictor.plan_started(snap, plan)
        return plan

    def _plan(self, snap: Snapshot) -> Plan:
        real, snap = snap, self._view(snap)
        if self.mode == "offline":
            self._learn_runtimes(snap)
        if not snap.queued:
            self._schedule = {}
            return Plan(snap.time, (), SolverStats(status="idle"))
        if self._prb_jobs is not None and {j.id for j in snap.queued} <= self._prb_jobs:
            return prb_rule_plan(real, self.cache, "prb_rule")
        if self._still_on_plan(snap):
            queued = {j.id for j in snap.queued}
            kept = tuple(
                replace(a, start=snap.time) if a.start < snap.time else a
                for jid, a in self._schedule.items()
                if jid in queued
            )
            if self.mode == "offline" and (
                ended_early(snap, self._schedule, self._walltime, self._running_ends)
                or (self.predictor is not None and self._overran(snap))
            ):
                return self._after_early_end(snap, real)
            fallback = self._prb_if_better(snap, real)
            if fallback is not None:
                return fallback
            reused = self._checked(real, self._select(snap, kept))
            return Plan(snap.time, reused, SolverStats(status="reused"), self._wake(snap))
        left = self.total_budget_s - self.spent_s
        if left <= MIN_REPLAN_S:
            return prb_rule_plan(real, self.cache, "budget_spent")
        params = self.params
        if math.isfinite(left):
            # A re-plan gets at most 60 % of what is left: later ones still get some.
            share = left if left <= 1.0 else 0.6 * left
            params = replace(params, budget_s=min(params.budget_s or math.inf, share))
        t0 = time.perf_counter()
        timer: Timer = time.perf_counter
        if self.deterministic and params.budget_s is not None:
            timer = WorkClock.for_queue(len(snap.queued), params.budget_s)
        outcome = hybrid_search(snap, self._pc, params, timer=timer)
        best, robust = outcome.best, {}
        if self.mode == "online":
            best, robust = self._choose(real, best, outcome.prb, seed=self.seed + self.replans,
                                        window=self.recent.jobs if self.recent else ())  # fmt: skip
        if self.prior is not None and self.mode == "offline":
            best, robust = robust_choice(snap, outcome.best, outcome.prb,
                                         (*self.prior, *self._ratios), self.scenarios,
                                         self.seed + self.replans, budget_s=ROBUST_S,
                                         kinds=self.kinds)  # fmt: skip
            if robust.get("robust") == "prb" and self.research is None:
                self._prb_jobs = frozenset(j.id for j in snap.queued)
        self.spent_s += time.perf_counter() - t0
        self.replans += 1
        assignments = first_come_among_twins(best.assignments, real.queued, self.twin_power)
        stats = replace(outcome.stats, extra={**outcome.stats.extra, **robust, "mode": self.mode})
        if self.on_replan is not None:
            self.on_replan(ReplanReport(snap.time, len(snap.queued), stats, self.spent_s,
                                        self.total_budget_s - self.spent_s))  # fmt: skip
        if not best.complete:
            log.warning("hybrid: some jobs fit nowhere at t=%d; they wait", snap.time)
        if self.mode == "offline" or best.complete:
            self._remember(snap, assignments)
        selected = self._checked(real, self._select(snap, assignments))
        if self.fill_now:
            filled = self._fill(real, selected)
            if len(filled) > len(selected):
                # The fill started jobs the plan did not start now: store the plan after it.
                stats = replace(stats, extra={**stats.extra, "filled": len(filled) - len(selected)})
                now = tuple(a for a in filled if a.start <= snap.time)
                later = self._refit(snap, now)
                selected = (*now, *later) if self.full_plan else now
            else:
                selected = filled
        return Plan(snap.time, selected, stats, self._wake(snap))

    def _prb_if_better(self, snap: Snapshot, real: Snapshot) -> Plan | None:
        """The fallback on a reused plan (:func:`.retime.prb_if_better`): PRB's plan, stored,
        when it beats the stored plan from the cluster as it is; else None."""
        found = prb_if_better(snap, self._pc, self._schedule)
        if found is None:
            return None
        prb, planned = found
        self.fallbacks += 1
        self._remember(snap, prb.assignments)
        selected = self._checked(real, self._select(snap, prb.assignments))
        extra: dict[str, float | int | str] = {"plan_objective": planned}
        stats = SolverStats(status="prb_fallback", objective=prb.objective, extra=extra)
        return Plan(snap.time, selected, stats, self._wake(snap))

    def _learn_runtimes(self, snap: Snapshot) -> None:
        """Runtime over walltime of the jobs that ended since the last cycle (offline)."""
        now = {rj.job.id: rj for rj in snap.running}
        for jid, (start, wall) in self._watch.items():
            if jid not in now:
                self._ratios.append(min(1.0, (snap.time - start) / max(wall, 1)))
        self._watch = {jid: (rj.start, rj.job.walltime) for jid, rj in now.items()}

    def _after_early_end(self, snap: Snapshot, real: Snapshot) -> Plan:
        """Jobs ended early: a re-search (:mod:`.research`); else with runtime ratios PRB's
        rule from now on (:func:`.robust.follow_then_prb`), else re-timed (:mod:`.retime`)."""
        if self.research is not None:
            best, stats = self.research.replan(snap, self._pc, self._schedule, self._ratios,
                                               self.prior or ())  # fmt: skip
        elif self.prior is not None:
            self._prb_jobs = frozenset(j.id for j in snap.queued)
            return prb_rule_plan(real, self.cache, "prb_rule")
        else:
            ratio = statistics.median(self._ratios) if self._ratios else 1.0
            best = retime(snap, self._pc, self._schedule, ratio)
            stats = SolverStats(status="retimed", objective=best.objective,
                                extra={"best_source": best.source})  # fmt: skip
        self._remember(snap, best.assignments)
        selected = self._checked(real, self._select(snap, best.assignments))
        return Plan(snap.time, selected, stats, self._wake(snap))

    def _view(self, snap: Snapshot) -> Snapshot:
        """The snapshot to plan on: with a predictor, learn from the jobs that ended and,
        while its predictions have been closer to the runtimes than the walltimes
        (:meth:`~wattsched.scheduler.runtime_predictor.RuntimePredictor.better_than_walltimes`),
        return the predicted view (:mod:`.predicted`; a fresh cache of job vectors once a
        prediction changed); else the snapshot itself."""
        if self.predictor is None:
            return snap
        self.predictor.observe(snap)
        if not self.predictor.better_than_walltimes():
            self._vcache, self._predicted = None, {}
            return snap
        view, durations = predicted_view(snap, self.predictor)
        if self._vcache is None or any(
            self._predicted.get(jid, d) != d for jid, d in durations.items()
        ):
            self._vcache = StateCache()
        self._predicted.update(durations)
        return view
