"""Job orders: the rule-based schedulers' EST, WT and Profit, and MultiSearch's eleven
criteria, each increasing and decreasing (the profit paper, sections 4 and 7.1).

An order is a permutation of job indices; ties go by release, then by job position (the
submit order), so every order is deterministic.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from wattsched.scheduler.profitsched.problem import DayProblem, IntArray

Key = Callable[[DayProblem], list[np.ndarray]]
"""Sort keys, most significant first, ascending."""


def _power_per_profit(p: DayProblem) -> np.ndarray:
    profit = p.rate * p.duration * p.slot_s
    return np.where(profit > 0, p.power_w / np.maximum(profit, 1e-12), np.inf)


def _res_per_unit(p: DayProblem) -> np.ndarray:
    return p.need[:, list(p.resources)].sum(axis=1).astype(float)


CRITERIA: dict[str, Key] = {
    "est": lambda p: [p.release],
    "lst": lambda p: [-(p.duration.astype(float))],  # latest start = horizon - duration
    "duration": lambda p: [p.duration],
    "units": lambda p: [p.units],
    "unit_resources": lambda p: [_res_per_unit(p)],
    "total_resources": lambda p: [_res_per_unit(p) * p.units],
    "area": lambda p: [_res_per_unit(p) * p.units * p.duration],
    "power": lambda p: [p.power_w / np.maximum(p.units, 1)],
    "power_per_profit": lambda p: [_power_per_profit(p)],
    "power_per_profit_dur_inc": lambda p: [_power_per_profit(p), p.duration],
    "power_per_profit_dur_dec": lambda p: [_power_per_profit(p), -p.duration],
}
"""MultiSearch's eleven criteria, by name (ascending; each is also run descending)."""


def order_by(problem: DayProblem, keys: list[np.ndarray], descending: bool = False) -> IntArray:
    """Job indices sorted by ``keys`` (first most significant), ties by release then index."""
    n = problem.n_jobs
    cols = [np.asarray(k, dtype=float) * (-1.0 if descending else 1.0) for k in keys]
    # np.lexsort sorts by the last key first.
    return np.lexsort((np.arange(n), problem.release, *reversed(cols)))


def criterion_order(problem: DayProblem, name: str, descending: bool = False) -> IntArray:
    """The order of one MultiSearch criterion."""
    return order_by(problem, CRITERIA[name](problem), descending)


def rule_order(problem: DayProblem, rule: str) -> IntArray:
    """The rule-based orders: ``est`` (earliest release first), ``wt`` (shortest wallclock
    first), ``profit`` (highest profit / cost first)."""
    if rule == "est":
        return order_by(problem, [problem.release])
    if rule == "wt":
        return order_by(problem, [problem.duration])
    if rule == "profit":
        profit = problem.rate * problem.duration * problem.slot_s
        cost = np.maximum(problem.power_w * problem.duration * problem.slot_s, 1e-12)
        return order_by(problem, [profit / cost], descending=True)
    raise ValueError(f"rule {rule!r}: expected est, wt or profit")


def all_orders(problem: DayProblem) -> list[tuple[str, IntArray]]:
    """The 22 orders of MultiSearch: every criterion increasing and decreasing."""
    out = []
    for name in CRITERIA:
        for desc in (False, True):
            out.append((f"{name}_{'dec' if desc else 'inc'}", criterion_order(problem, name, desc)))
    return out
