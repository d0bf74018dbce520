"""The hybrid power-capped dispatcher: CP-SAT on pooled resources, PRB mapper, feedback.

The method of the power-capping paper (``shared/papers/power-capping-hybrid-cp.txt``, sections
3-5). Problem data (:mod:`.problem`) is kept apart from the solver (:mod:`.cpmodel`), the
mapper (:mod:`.mapping`), the search loop (:mod:`.search`) and the dispatcher
(:mod:`.dispatcher`). Registers ``hybrid`` and ``hybrid-nofb`` with the dispatcher registry.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Sequence
from typing import Any

from wattsched.scheduler.dispatcher import register
from wattsched.scheduler.hybrid.dispatcher import HybridDispatcher
from wattsched.scheduler.hybrid.search import SearchParams, TimeoutPolicy, hybrid_search
from wattsched.scheduler.model import SolverStats

__all__ = [
    "HybridDispatcher",
    "SearchParams",
    "TimeoutPolicy",
    "hybrid_search",
    "solver_summary",
]

NOT_SEARCHED = frozenset({"idle", "reused", "retimed", "prb_fallback"})
"""Statuses of cycles that ran no search (nothing queued, following the last plan, or
re-timing it after early ends, or replacing it by PRB's when PRB's is better)."""


SEARCH_COUNTS = ("ls_tries", "ls_wins", "lns_moves", "lns_improvements", "solves",
                 "mapped_schedules")  # fmt: skip
"""The counts of a search's stats that :func:`solver_summary` reports for the first one."""


def _hybrid(**params: Any) -> HybridDispatcher:
    params.setdefault("feedback", True)
    return HybridDispatcher(**params)


def _hybrid_nofb(**params: Any) -> HybridDispatcher:
    params["feedback"] = False
    return HybridDispatcher(**params)


register("hybrid", _hybrid)
register("hybrid-nofb", _hybrid_nofb)


def _pct(values: Sequence[float], q: float) -> float:
    s = sorted(values)
    if not s:
        return 0.0
    k = min(len(s) - 1, max(0, round(q / 100 * (len(s) - 1))))
    return s[k]


def solver_summary(stats: Sequence[SolverStats]) -> dict[str, Any]:
    """Aggregate the per-cycle solver statistics of a replay for the metrics JSON (``solver``).

    Cycles that ran no search (status ``idle`` or ``reused``) are counted but left out of
    the figures. ``improved_over_prb`` counts searches whose best schedule was not PRB's.
    ``bound`` is the valid lower bound of the last search (:mod:`.bound`), ``first_gap`` the
    first search's best objective over its bound. ``robust``: how many searches' plans were
    kept or replaced by PRB's by the robust choice (:mod:`.robust`, or the re-search's,
    :mod:`.research`); ``researched``: re-searches at early ends. ``first_counts``: what
    the first search decoded (:data:`SEARCH_COUNTS`: local-search tries and wins, LNS moves,
    whole-model CP solves, mapped schedules); ``research_counts``: the re-searches' decodes;
    ``work_capped``: searches of a work budget (``deterministic``) that the wall cap stopped
    (a replay with any is not reproducible: the machine was too loaded).
    """
    searched = [s for s in stats if s.status not in NOT_SEARCHED]
    secs = [s.seconds for s in searched]
    last = searched[-1] if searched else None
    first = searched[0] if searched else None
    improved = sum(1 for s in searched if s.extra.get("best_source", "prb") != "prb")
    return {
        "cycles": len(stats),
        "searches": len(searched),
        "reused": sum(1 for s in stats if s.status == "reused"),
        "retimed": sum(1 for s in stats if s.status == "retimed"),
        "researched": sum(1 for s in stats if s.status == "researched"),
        "prb_fallback": sum(1 for s in stats if s.status == "prb_fallback"),
        "status": dict(Counter(s.status for s in searched)),
        "seconds_total": round(sum(secs), 4),
        "seconds_mean": round(statistics.fmean(secs), 4) if secs else 0.0,
        "seconds_p50": round(_pct(secs, 50), 4),
        "seconds_p99": round(_pct(secs, 99), 4),
        "seconds_max": round(max(secs, default=0.0), 4),
        "iterations": sum(s.iterations for s in searched),
        "cuts": sum(s.cuts for s in searched),
        "improved_over_prb": improved,
        "objective": last.objective if last else None,
        "bound": last.bound if last else None,
        "first_objective": first.objective if first else None,
        "first_bound": first.bound if first else None,
        "first_gap": first.extra.get("gap") if first else None,
        "first_source": first.extra.get("best_source") if first else None,
        "first_counts": {k: first.extra[k] for k in SEARCH_COUNTS if k in first.extra}
        if first
        else {},
        "robust": dict(Counter(str(s.extra["robust"]) for s in searched if "robust" in s.extra)),
        "research_counts": _research_counts(searched),
        "work_capped": sum(1 for s in searched if s.extra.get("work_capped")),
    }


def _research_counts(searched: Sequence[SolverStats]) -> dict[str, float]:
    """The re-searches' local-search tries (priority lists decoded) and seconds: median and
    range over the replay's re-searches (none: empty)."""
    re = [s for s in searched if s.status == "researched"]
    if not re:
        return {}
    tries = [float(s.extra.get("ls_tries", 0)) for s in re]
    secs = [s.seconds for s in re]
    return {
        "ls_tries_p50": statistics.median(tries),
        "ls_tries_min": min(tries),
        "ls_tries_max": max(tries),
        "seconds_p50": round(statistics.median(secs), 4),
    }
