"""The hybrid's search: PRB baseline, priority orderings, CP solves, mapping and feedback.

One call of :func:`hybrid_search` does, within a wall-clock budget (or a work budget, with a
:class:`.workclock.WorkClock` as its timer: reproducible):

1. PRB (list scheduling in PRB order) — the baseline and the first incumbent; and, when
   ``orderings`` is on, list schedules under other priority orderings (weighted shortest
   walltime first, weighted smallest demand first, weighted smallest energy first), each a
   real, mapped schedule.
2. The pooled CP model (:mod:`.cpmodel`) on a time grain, its horizon bounded by the
   incumbent's makespan (plus slack), hinted with the incumbent and searched in PRB priority
   order, its objective bounded by the incumbent's.
3. Each CP solution is mapped twice: by the paper's mapper (CP starts as release times, PRB
   order at each event, postponing what does not fit) and by list scheduling in the order of
   the CP starts (the CP solution as a priority list); with ``cp_serial`` a third time, by
   the serial scheme in that order (:mod:`.serial`); the best real schedule is kept.
4. With feedback, every postponement of the paper's mapper gives a conflict cut; the model is
   re-solved with the cuts and an objective bound below the best mapped schedule, up to
   ``iterations`` times or the budget.

The result is the best real schedule seen, so it is never worse than PRB. A solve without a
solution (time-out) is retried with a doubled limit in offline mode (the paper's policy: 5 s
doubling to 60 s); any solver failure leaves the incumbent in place.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Sequence

from wattsched.scheduler.dispatcher import prb_order
from wattsched.scheduler.hybrid.bound import fluid_bound, lp_bound
from wattsched.scheduler.hybrid.cpmodel import CpOutcome, Cut, solve_pooled
from wattsched.scheduler.hybrid.decode import ListDecoder
from wattsched.scheduler.hybrid.lns import lns, pooled_starts
from wattsched.scheduler.hybrid.localsearch import priority_search
from wattsched.scheduler.hybrid.mapping import MappedSchedule, map_schedule
from wattsched.scheduler.hybrid.problem import (
    PooledProblem,
    build_problem,
)
from wattsched.scheduler.hybrid.search_params import (
    ReplanReport,
    SearchOutcome,
    SearchParamError,
    SearchParams,
    TimeoutPolicy,
)
from wattsched.scheduler.hybrid.serial import SerialDecoder, serial_schedule
from wattsched.scheduler.hybrid.serial_swaps import serial_search
from wattsched.scheduler.hybrid.workclock import DECODE_STEP_S, WorkClock, cp_seconds_per_det
from wattsched.scheduler.mapper import StateCache
from wattsched.scheduler.model import Job, Snapshot, SolverStats

Timer = Callable[[], float]
log = logging.getLogger(__name__)

__all__ = [
    "ReplanReport",
    "SearchOutcome",
    "SearchParamError",
    "SearchParams",
    "TimeoutPolicy",
    "hybrid_search",
]


def wspt_orders(jobs: Sequence[Job], max_ewt: int) -> list[tuple[str, list[Job]]]:
    def w(j: Job) -> float:
        return max_ewt / j.ewt

    def energy(j: Job) -> float:
        unit_w = j.unit_power_w if j.unit_power_w is not None else float(j.unit.cores)
        return j.walltime * max(unit_w * j.units, 1.0)

    return [
        ("wspt", sorted(jobs, key=lambda j: (-w(j) / j.walltime, j.demand()))),
        ("wsdf", sorted(jobs, key=lambda j: (-w(j) / max(j.demand(), 1.0), j.walltime))),
        ("wsef", sorted(jobs, key=lambda j: (-w(j) / energy(j), j.walltime))),
    ]


def _makespan(sched: MappedSchedule, jobs: Sequence[Job], now: int) -> int:
    wall = {j.id: j.walltime for j in jobs}
    return max((a.start + wall[a.job_id] for a in sched.assignments), default=now)


def _grain(params: SearchParams, span: int) -> int:
    if params.grain_s is not None:
        return params.grain_s
    return max(1, math.ceil(span / params.target_slots))


def hybrid_search(
    snap: Snapshot,
    cache: StateCache,
    params: SearchParams,
    *,
    timer: Timer = time.perf_counter,
    seeds: Sequence[tuple[str, Sequence[Job]]] = (),
) -> SearchOutcome:
    """Plan every queued job of ``snap``; never raises on a solver outcome (see module doc).

    ``seeds``: named priority orders (e.g. a stale plan's, :mod:`.research`) list scheduled
    as candidates right after PRB, before the orderings: the result is never worse than any.
    """
    t_start = timer()
    deadline = math.inf if params.budget_s is None else t_start + params.budget_s
    order = prb_order(snap.queued)
    rank = {j.id: k for k, j in enumerate(order)}
    prb = map_schedule(snap, cache, order, release=None, source="prb")
    # Time kept after a solve for mapping its solution (twice the cost of the PRB mapping by
    # the mapper itself: a CP solution's release times take it, not the compiled decode).
    reserve = 2 * (timer() - t_start) + 0.01
    decoder = ListDecoder(snap, cache)
    sdecoder = SerialDecoder(decoder)
    if isinstance(timer, WorkClock):
        timer.meter(lambda: decoder.ops + sdecoder.ops, DECODE_STEP_S)
    best = prb
    history: list[tuple[str, float]] = [("prb", prb.objective)]
    max_ewt = snap.max_ewt()

    def consider(cand: MappedSchedule) -> None:
        nonlocal best
        history.append((cand.source, cand.objective))
        if cand.objective < best.objective - 1e-9:
            best = cand

    def note(source: str, objective: float) -> None:
        history.append((source, objective))

    for name, seeded in seeds:
        consider(decoder.schedule(seeded, name))
    if params.orderings and order:
        for name, alt in wspt_orders(order, max_ewt):
            if timer() >= deadline:
                break
            consider(decoder.schedule(alt, name))

    extra: dict[str, float | int | str] = {"prb_objective": prb.objective}
    if params.local_search > 0 and order and math.isfinite(deadline) and best.complete:
        ls_end = timer() + params.local_search * max(deadline - timer(), 0.0)
        tries, wins = priority_search(
            decoder, order, lambda: best, consider, note, deadline=ls_end, timer=timer,
            seed=params.seed, own_list=params.own_list,
        )  # fmt: skip
        extra.update(ls_tries=tries, ls_wins=wins)
    if params.serial > 0 and order and math.isfinite(deadline) and best.complete:
        serial_end = timer() + params.serial * max(deadline - timer(), 0.0)
        tries, wins = serial_search(
            snap, cache, order, best, consider, deadline=serial_end, timer=timer,
            seed=params.seed, decoder=sdecoder,
            lists=wspt_orders(order, max_ewt) if params.orderings else (),
        )  # fmt: skip
        extra.update(serial_tries=tries, serial_wins=wins)
    cuts: list[Cut] = []
    cut_keys: set[frozenset[str]] = set()
    status = "heuristic"
    bound: float | None = None
    solves = 0
    iterations = 0
    solver_s = 0.0
    doable = [j for j in order if j.id in {a.job_id for a in best.assignments}]
    if (
        not params.cp
        or not order
        or best.objective <= 0
        or not best.complete
        or timer() >= deadline
    ):
        extra["skipped"] = "nothing to improve" if best.complete else "incomplete baseline"
        if not params.cp:
            extra["skipped"] = "no cp"
        extra["best_source"] = best.source
        extra["decode_steps"] = decoder.ops
        return _finish(
            best,
            prb,
            history,
            cuts,
            status,
            bound,
            t_start,
            timer,
            solves,
            iterations,
            solver_s,
            extra,
        )

    span = _makespan(best, doable, snap.time) - snap.time
    grain = _grain(params, span)
    horizon_end = snap.time + math.ceil(span * (1 + params.horizon_slack))
    problem = build_problem(snap, doable, grain=grain, horizon_end=horizon_end)
    running_ends = {
        rj.job.id: max(1, -(-(rj.end_estimate - snap.time) // grain)) for rj in snap.running
    }
    extra.update(grain_s=grain, horizon=problem.horizon)
    hint = pooled_starts(problem, best)
    obj_max = problem.pooled_objective(hint)
    limit = params.time_limit_s or params.timeout_policy.initial_s
    use_lns = params.lns and params.budget_s is not None
    # With LNS the whole-model solves get a share of what is left, the moves the rest.
    cp_end = timer() + params.cp_share * (deadline - timer()) if use_lns else deadline
    last: CpOutcome | None = None
    max_iter = params.iterations if params.feedback else 1
    per_det = cp_seconds_per_det(len(doable) + len(snap.running))  # a WorkClock's charge
    while iterations < max_iter:
        remaining = cp_end - timer() - reserve
        if remaining <= 0.02:
            break
        work = timer if isinstance(timer, WorkClock) else None
        try:
            out = solve_pooled(
                problem,
                time_limit_s=min(limit, remaining) if work is None else max(work.wall_left(), 0.01),
                deterministic_time=None if work is None else min(limit, remaining) / per_det,
                workers=params.workers,
                cuts=cuts,
                running_ends=running_ends,
                objective_max=obj_max,
                hint=hint,
                seed=params.seed + solves,
                strategy=params.fixed_order,
            )
        except (RuntimeError, ValueError, IndexError, MemoryError) as exc:  # keep the incumbent
            log.warning("hybrid: CP-SAT failed (%s); keeping the best schedule so far", exc)
            status = "error"
            extra["error"] = str(exc)[:200]
            break
        solves += 1
        solver_s += out.seconds
        if work is not None:
            work.spend(out.deterministic_time * per_det)
            extra["cp_det"] = round(float(extra.get("cp_det", 0.0)) + out.deterministic_time, 4)
        status = out.status
        if out.starts is None:
            if (
                out.status == "unknown"
                and params.retry_on_timeout
                and limit < params.timeout_policy.max_s
                and timer() < deadline
            ):
                limit = min(limit * params.timeout_policy.factor, params.timeout_policy.max_s)
                continue
            break
        last = out
        iterations += 1
        if iterations == 1 and out.bound is not None:
            # Not a bound on the real problem (rounded-up durations, horizon cut): kept as info.
            extra["cp_bound"] = round(_real_units(problem, snap, out.bound), 3)
        by_release = sorted(doable, key=lambda j: (out.starts[problem.index[j.id]], rank[j.id]))
        mapped = map_schedule(
            snap,
            cache,
            by_release,
            release=problem.release_times(out.starts),
            source=f"cp{iterations}-mapper",
            wake_on_release=True,
        )
        consider(mapped)
        if timer() < deadline - reserve / 2:
            consider(decoder.schedule(by_release, f"cp{iterations}-list"))
        if params.cp_serial and timer() < deadline - reserve / 2:
            cand = serial_schedule(snap, cache, by_release, source=f"cp{iterations}-serial",
                                   deadline=deadline, timer=timer, decoder=sdecoder)  # fmt: skip
            if cand is not None:
                consider(cand)
        if not params.feedback:
            break
        new = [c for c in mapped.conflicts if frozenset(c) not in cut_keys]
        if not new:
            break
        for c in new:
            cut_keys.add(frozenset(c))
            cuts.append(c)
        hint = list(out.starts)
        # Force improvement: below the pooled objective of the best real schedule.
        obj_max = problem.pooled_objective(pooled_starts(problem, best)) - 1
        if obj_max < 0:
            break
    if use_lns and timer() < deadline - 0.1:
        polish = params.serial_polish if params.serial > 0 else 0.0
        lns_end = deadline - polish * max(deadline - timer(), 0.0)
        figures = lns(
            snap, cache, problem, doable, rank, deadline=lns_end, timer=timer,
            incumbent=lambda: best, consider=consider, window=params.lns_window,
            slice_s=params.lns_time_s, workers=params.workers, seed=params.seed,
            conflicts=params.lns_conflicts, serial=params.cp_serial, decoder=decoder,
            serial_decoder=sdecoder, patience=params.lns_patience,
        )  # fmt: skip
        extra.update(figures)
        solver_s += float(figures["lns_solver_s"])
        if params.lns_patience and timer() < deadline - 0.01:  # the rest back to the swaps
            tries, wins = priority_search(
                decoder, order, lambda: best, consider, note, deadline=deadline, timer=timer,
                seed=params.seed + 1, own_list=params.own_list, restarts=0.0,
            )  # fmt: skip
            extra.update(ls_tries_after=tries, ls_wins_after=wins)
        if polish and timer() < deadline - 0.01:  # serial swaps in the final incumbent's list
            tries, wins = serial_search(
                snap, cache, order, best, consider, deadline=deadline, timer=timer,
                seed=params.seed + 2, decoder=sdecoder, polish=True,
            )  # fmt: skip
            extra.update(polish_tries=tries, polish_wins=wins)
    if last is not None:
        extra["cp_objective"] = float(last.objective or 0.0)
    extra["solves"] = solves
    extra["best_source"] = best.source
    extra["decode_steps"] = decoder.ops
    bound = _valid_bound(snap, params, best, doable)
    if bound is not None:
        extra["gap"] = round(best.objective / bound, 4) if bound > 0 else 0.0
    return _finish(
        best, prb, history, cuts, status, bound, t_start, timer, solves, iterations, solver_s, extra
    )


def _valid_bound(
    snap: Snapshot, params: SearchParams, best: MappedSchedule, jobs: Sequence[Job]
) -> float | None:
    """A valid lower bound on the mean weighted queue time (:mod:`.bound`), or None."""
    if params.lower_bound == "none" or len(jobs) != len(snap.queued):
        return None
    lb = fluid_bound(snap)
    if params.lower_bound == "lp":
        span = _makespan(best, jobs, snap.time) - snap.time
        lp = lp_bound(snap, horizon=max(span, 1), time_limit_s=params.bound_time_s)
        lb = max(lb, lp if lp is not None else 0.0)
    return lb if math.isfinite(lb) else None


def _real_units(problem: PooledProblem, snap: Snapshot, pooled: float) -> float:
    """A pooled objective (weight x grains from now) in mean weighted queue time seconds."""
    n = len(problem.jobs)
    max_ewt = snap.max_ewt()
    offset = sum(max_ewt / j.ewt * (snap.time - j.submit) for j in problem.jobs)
    return (pooled * problem.grain / problem.weight_scale + offset) / max(n, 1)


def _finish(
    best: MappedSchedule,
    prb: MappedSchedule,
    history: list[tuple[str, float]],
    cuts: list[Cut],
    status: str,
    bound: float | None,
    t_start: float,
    timer: Timer,
    solves: int,
    iterations: int,
    solver_s: float,
    extra: dict[str, float | int | str],
) -> SearchOutcome:
    extra["solver_seconds"] = round(solver_s, 4)
    if isinstance(timer, WorkClock):
        extra.update(work_s=round(timer() - t_start, 4), work_reads=timer.reads,
                     work_metered=round(timer.metered(), 4))  # fmt: skip
        if timer.capped:  # stopped by the wall cap: not reproducible
            extra["work_capped"] = 1
    extra["mapped_schedules"] = len(history)
    stats = SolverStats(
        status=status,
        objective=best.objective if best.complete else None,
        bound=bound,
        seconds=timer.wall() if isinstance(timer, WorkClock) else timer() - t_start,
        iterations=iterations,
        cuts=len(cuts),
        extra=extra,
    )
    return SearchOutcome(best, prb, stats, history, cuts)
