"""The profit paper's daily replay: schedule each day's jobs at midnight, score the profit.

Wires the pure parts together for the CLI (``wattsched simulate-daily``) and the benchmark:
a scheduler by name (:data:`SCHEDULERS`), the cooling model and prices, the daily rolling
protocol, and the metrics (profit, revenue, energy cost, cooling energy, mean PUE, waits,
per-day scheduler seconds).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from wattsched.scheduler.cooling import CoolingModel
from wattsched.scheduler.metrics import JobOutcome, schedule_metrics
from wattsched.scheduler.model import Job, Node
from wattsched.scheduler.profit import Executions, Prices, ProfitReport, evaluate_profit
from wattsched.scheduler.profitsched.heuristic import rule_based
from wattsched.scheduler.profitsched.orderings import rule_order
from wattsched.scheduler.profitsched.problem import DayProblem, DaySchedule
from wattsched.scheduler.profitsched.relax import RelaxOptions, relaxation_search
from wattsched.scheduler.profitsched.rolling import DAY_S, Progress, RollingResult, rolling_days
from wattsched.scheduler.profitsched.search import (
    Scoring,
    SearchResult,
    delay_search,
    multi_search,
)

DayHook = Callable[[DayProblem, SearchResult, SearchResult], None]
"""Called with each day's problem, MultiSearch's result and the final search's result."""

SCHEDULERS = (
    "rules-est", "rules-wt", "rules-profit", "multisearch", "delaysearch", "relaxsearch",
)  # fmt: skip
"""The daily schedulers by name: the rule-based ones (strict with ``strict=True``), the
MultiSearch of the job-based heuristic, and DelaySearch and RelaxationSearch from
MultiSearch's best."""


@dataclass(frozen=True, slots=True)
class DailyOptions:
    """How to run the daily replay."""

    scheduler: str
    strict: bool = False
    runtime: str = "real"
    slot_s: int = 60
    workers: int | None = None
    delay_time_s: float = 10.0
    delay_slots: int = 30
    power_budget_w: float | None = None
    horizon_days: int | None = None
    """Days of the profit's horizon from the first day (the paper: the trace's 23 days);
    work after it earns nothing. None: the days the trace's submissions span."""
    relax_time_s: float = 10.0
    """RelaxationSearch's CP-SAT time limit per day."""
    relax: RelaxOptions | None = None
    """RelaxationSearch's other settings (default: :class:`RelaxOptions`)."""
    max_days: int | None = None
    """Stop after this many days (None: until every job has started)."""


def make_scheduler(
    opts: DailyOptions, cooling: CoolingModel, prices: Prices, on_day: DayHook | None = None
) -> Callable[[DayProblem, int], DaySchedule]:
    """The ``scheduler(problem, day_end)`` callable of ``opts.scheduler``."""
    name = opts.scheduler
    if name not in SCHEDULERS:
        raise ValueError(f"scheduler {name!r}: expected one of {', '.join(SCHEDULERS)}")
    if name.startswith("rules-"):
        rule = name.removeprefix("rules-")
        return lambda p, end: rule_based(
            p, rule_order(p, rule), strict=opts.strict,
            horizon=max(1, -(-(end - p.origin) // p.slot_s)),
        )  # fmt: skip

    def search(p: DayProblem, end: int) -> DaySchedule:
        scoring = Scoring(cooling, prices, end)
        best = first = multi_search(p, scoring, workers=opts.workers)
        if name == "delaysearch":
            best = delay_search(
                p, scoring, best, delay_slots=opts.delay_slots, time_limit_s=opts.delay_time_s
            )
        elif name == "relaxsearch":
            relax = opts.relax or RelaxOptions(workers=opts.workers or 2)
            best = relaxation_search(
                p, scoring, best, replace(relax, time_limit_s=opts.relax_time_s)
            )
        if on_day is not None:
            on_day(p, first, best)
        return best.schedule

    return search


def job_rates(jobs: Sequence[Job], prices: Prices) -> dict[str, float]:
    """Each job's revenue per second of run (all its units), by the accounting of ``prices``."""
    tot = np.array([j.total.as_tuple() for j in jobs], dtype=float).reshape(-1, 4)
    rates = prices.rate_per_s(tot[:, 0], tot[:, 1], tot[:, 2], tot[:, 3])
    return {j.id: float(r) for j, r in zip(jobs, rates, strict=True)}


def job_powers(jobs: Sequence[Job], nodes: Sequence[Node]) -> dict[str, float]:
    """Each job's power while it runs: its units' estimate, else the first node's model."""
    model = nodes[0].power
    return {
        j.id: (j.unit_power_w if j.unit_power_w is not None else model.unit_watts(j.unit)) * j.units
        for j in jobs
    }


def run_daily(
    nodes: Sequence[Node],
    jobs: Sequence[Job],
    opts: DailyOptions,
    cooling: CoolingModel,
    prices: Prices,
    *,
    progress: Progress | None = None,
) -> tuple[RollingResult, ProfitReport, dict[str, Any]]:
    """Replay day by day; the committed schedule, its profit report, and the metrics.

    The metrics' ``per_day`` lists, for a search, each day's MultiSearch and final profit
    (of that day's problem) and seconds."""
    power = job_powers(jobs, nodes)
    per_day: list[dict[str, Any]] = []

    def on_day(p: DayProblem, first: SearchResult, best: SearchResult) -> None:
        # DelaySearch and RelaxationSearch start from MultiSearch's best and keep it unless
        # they beat it: never below it on the same day.
        assert best.profit >= first.profit - 1e-9, (best.profit, first.profit)
        per_day.append({
            "day": p.origin, "jobs": p.n_jobs, "multisearch_profit": first.profit,
            "profit": best.profit, "multisearch_s": first.seconds, "seconds": best.seconds,
            "by": best.name,
        })  # fmt: skip

    rolling = rolling_days(
        nodes,
        jobs,
        make_scheduler(opts, cooling, prices, on_day),
        power_w=power,
        rate=job_rates(jobs, prices),
        runtime=opts.runtime,
        slot_s=opts.slot_s,
        power_budget_w=opts.power_budget_w,
        progress=progress,
        max_days=opts.max_days,
    )
    placed = rolling.placed
    runs = Executions.of(
        [(p.start, p.end, power[p.job.id], *p.job.total.as_tuple()) for p in placed]
    )
    first_day = (min(j.submit for j in jobs) // DAY_S) * DAY_S if jobs else 0
    days = opts.horizon_days
    if days is None:
        days = max(1, -(-(max((j.submit for j in jobs), default=0) + 1 - first_day) // DAY_S))
    horizon = first_day + days * DAY_S
    # The paper's protocol: the profit of the horizon; what runs past it earns nothing.
    report = evaluate_profit(runs, cooling, prices, start=first_day, end=horizon)
    whole = evaluate_profit(runs, cooling, prices)
    # Each day's profit of the committed schedule (the paper's figures sum them over days).
    daily = [
        evaluate_profit(runs, cooling, prices, start=first_day + d * DAY_S,
                        end=first_day + (d + 1) * DAY_S).profit
        for d in range(max(days, len(rolling.days)))
    ] if len(runs) else []  # fmt: skip
    metrics: dict[str, Any] = dict(report.as_metrics())
    metrics["it_kwh"] = report.it_kwh
    metrics["horizon_days"] = days
    metrics["horizon_start"], metrics["horizon_end"] = first_day, horizon
    metrics["first_submit"] = min((j.submit for j in jobs), default=first_day)
    metrics["profit_whole_run"] = whole.profit
    metrics.update(
        schedule_metrics(
            [JobOutcome(p.job.id, p.job.submit, p.start, p.end, p.job.ewt) for p in placed]
        )
    )
    secs = [d[2] for d in rolling.days]
    metrics.update(
        {
            "scheduler": opts.scheduler,
            "strict": opts.strict,
            "jobs": len(placed),
            "days": len(rolling.days),
            "day_seconds_mean": float(np.mean(secs)) if secs else 0.0,
            "day_seconds_max": float(np.max(secs)) if secs else 0.0,
            "scheduler_seconds": float(np.sum(secs)),
            "max_days": opts.max_days,
            "complete": len(placed) == len(jobs),
            "day_seconds": secs,
            "per_day": per_day,
            "daily_profit": daily,
        }
    )
    return rolling, report, metrics
