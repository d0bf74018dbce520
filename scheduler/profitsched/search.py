"""Searches over the job-based heuristic, scored by the cooling-aware profit evaluator.

- :func:`multi_search`: the heuristic under MultiSearch's 22 orders, in parallel processes;
  the most profitable schedule wins (the profit paper's section 7.1).
- :func:`delay_search`: from the best schedule, delay one job at a time by ``delay`` slots
  (jobs already pushed past the horizon are fixed where the best schedule has them), re-run
  the heuristic, keep what improves (the paper's Algorithm 3), until a time limit.

Both only ever return a schedule at least as profitable as the one they start from.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from wattsched.scheduler.cooling import CoolingModel
from wattsched.scheduler.profit import Executions, Prices, ProfitReport, evaluate_profit
from wattsched.scheduler.profitsched.heuristic import job_based
from wattsched.scheduler.profitsched.orderings import all_orders
from wattsched.scheduler.profitsched.problem import DayProblem, DaySchedule, IntArray

Clock = Callable[[], float]


@dataclass(frozen=True, slots=True)
class Scoring:
    """How a day's schedule is scored: the cooling model, prices, and the horizon end (s)."""

    cooling: CoolingModel
    prices: Prices
    end: int

    def horizon(self, problem: DayProblem) -> int:
        """The slot of ``end`` on the problem's grid: the searches start no job at or after
        it (what starts later earns nothing today and is rescheduled tomorrow)."""
        return max(1, -(-(self.end - problem.origin) // problem.slot_s))


def executions(problem: DayProblem, sched: DaySchedule) -> Executions:
    """The placed jobs of ``sched`` as the profit evaluator's input."""
    placed = sched.start >= 0
    start = sched.start_s(problem)[placed].astype(float)
    units = problem.units[placed]
    need = problem.need[placed]
    return Executions(
        start,
        start + problem.seconds[placed],
        problem.power_w[placed],
        (need[:, 0] * units).astype(float),
        (need[:, 1] * units).astype(float),
        (need[:, 2] * units).astype(float),
        (need[:, 3] * units).astype(float),
    )


def score(problem: DayProblem, sched: DaySchedule, scoring: Scoring) -> ProfitReport:
    """The profit of ``sched`` over ``[origin, scoring.end)``."""
    return evaluate_profit(
        executions(problem, sched),
        scoring.cooling,
        scoring.prices,
        start=problem.origin,
        end=scoring.end,
    )


@dataclass(slots=True)
class SearchResult:
    """The best schedule found, its order's name and profit, and every run's figures."""

    schedule: DaySchedule
    name: str
    profit: float
    order: IntArray
    runs: list[tuple[str, float]] = field(default_factory=list)
    seconds: float = 0.0


_WORKER: tuple[DayProblem, Scoring] | None = None


def _init(problem: DayProblem, scoring: Scoring) -> None:
    global _WORKER
    _WORKER = (problem, scoring)


def _run(item: tuple[str, IntArray]) -> tuple[str, float, IntArray, list[IntArray]]:
    assert _WORKER is not None
    problem, scoring = _WORKER
    name, order = item
    sched = job_based(problem, order, horizon=scoring.horizon(problem))
    return name, score(problem, sched, scoring).profit, sched.start, sched.nodes


def multi_search(
    problem: DayProblem,
    scoring: Scoring,
    *,
    workers: int | None = None,
    orders: Sequence[tuple[str, IntArray]] | None = None,
    clock: Clock = time.perf_counter,
) -> SearchResult:
    """The best of the job-based heuristic over ``orders`` (default: the 22 of MultiSearch).

    ``workers``: processes (default: the CPUs, at most the number of orders; 1 runs in this
    process). Ties go to the earlier order in the list.
    """
    t0 = clock()
    items = list(orders if orders is not None else all_orders(problem))
    n = workers if workers is not None else min(len(items), os.cpu_count() or 1)
    if n <= 1 or problem.n_jobs < 50:
        _init(problem, scoring)
        results = [_run(it) for it in items]
    else:
        with ProcessPoolExecutor(n, initializer=_init, initargs=(problem, scoring)) as pool:
            results = list(pool.map(_run, items, chunksize=max(1, len(items) // (4 * n))))
    best = max(range(len(results)), key=lambda i: (results[i][1], -i))
    name, profit, start, nodes = results[best]
    return SearchResult(
        DaySchedule(start, nodes),
        name,
        profit,
        dict(items)[name],
        [(r[0], r[1]) for r in results],
        clock() - t0,
    )


def delay_search(
    problem: DayProblem,
    scoring: Scoring,
    initial: SearchResult,
    *,
    delay_slots: int = 60,
    horizon_slot: int | None = None,
    time_limit_s: float = 10.0,
    clock: Clock = time.perf_counter,
) -> SearchResult:
    """The paper's DelaySearch from ``initial`` (see the module docstring).

    Jobs are picked in the best order; a job is delayed ``delay_slots`` further each time,
    until it would start past ``horizon_slot`` (default: the day's end), then fixed at its
    best start and the next job is picked.
    """
    t0 = clock()
    horizon = horizon_slot if horizon_slot is not None else scoring.horizon(problem)
    best = SearchResult(
        initial.schedule, initial.name, initial.profit, initial.order, list(initial.runs)
    )
    fixed: dict[int, tuple[int, np.ndarray]] = {}
    order = [int(j) for j in initial.order]
    k = 0
    min_start: dict[int, int] = {}
    while k < len(order) and clock() - t0 < time_limit_s:
        j = order[k]
        if best.schedule.start[j] < 0:  # not placed today: nothing to delay
            k += 1
            continue
        nxt = max(min_start.get(j, 0), int(best.schedule.start[j])) + delay_slots
        if nxt >= horizon:
            fixed[j] = (int(best.schedule.start[j]), best.schedule.nodes[j])
            min_start.pop(j, None)
            k += 1
            continue
        min_start[j] = nxt
        sched = job_based(problem, order, min_start=min_start, fixed=fixed, horizon=horizon)
        profit = score(problem, sched, scoring).profit
        best.runs.append((f"delay {problem.jobs[j].id} to {nxt}", profit))
        if profit > best.profit + 1e-9:
            best.schedule, best.profit, best.name = sched, profit, f"{initial.name}+delay"
            # Fixed jobs keep the new best's placement from now on.
            fixed = {f: (int(sched.start[f]), sched.nodes[f]) for f in fixed}
    best.seconds = initial.seconds + (clock() - t0)
    return best
