"""Re-search at early ends (offline mode, real runtimes; issue 16).

A plan is made on walltimes; when a job ends before its walltime the plan is stale. Instead of
following PRB's rule from then on (:mod:`.retime`, :mod:`.robust`), the dispatcher searches
again from the cluster as it is (the remaining queue, the running jobs' walltime ends), with
a short budget (:class:`Researcher`): the stale plan re-timed (its start order list
scheduled again) and PRB's order are the first candidates, so the search's plan is never
worse on walltimes than either; the other priority orderings and the priority-list local
search (:mod:`.localsearch`) improve on them (:func:`.search.hybrid_search`, no CP: the
budget is a fraction of a second).

What starts now under list scheduling depends only on the order and the cluster as it is,
not on the durations; so a re-search when nothing fits now would decide nothing:
``when="fits"`` searches only when some queued job fits now, else the stale plan is re-timed
(milliseconds). Once ``total_s`` is spent, PRB's order runs the rest of the replay.

A plan better on walltimes can lose with the real runtimes (jobs end at 4 % of their
walltime on some Eurora traces). ``robust`` picks what is carried out: ``none``, the
search's plan; ``all``, the search's plan only if it beats PRB's in every runtime scenario
(:func:`.robust.robust_choice`), else PRB's; ``rules``, the priority order whose list
schedule has the lowest mean over runtime scenarios (:mod:`.rules`); ``search``, the local
search itself judging each order by that mean (:mod:`.scenario_search`; the walltime search
when there is no scenario yet). The scenarios draw from
the runtime/walltime ratios of the jobs ended in this replay once there are ``learned`` of
them, else also from the prior.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from wattsched.scheduler.dispatcher import prb_order
from wattsched.scheduler.hybrid.mapping import MappedSchedule, map_schedule
from wattsched.scheduler.hybrid.retime import plan_order, prb_starts_now
from wattsched.scheduler.hybrid.robust import robust_choice
from wattsched.scheduler.hybrid.rules import best_rule
from wattsched.scheduler.hybrid.scenario_search import scenario_search
from wattsched.scheduler.hybrid.search import SearchParams, hybrid_search
from wattsched.scheduler.mapper import StateCache
from wattsched.scheduler.model import Assignment, Snapshot, SolverStats

WHEN = ("always", "fits")
ROBUST = ("none", "all", "rules", "search")


@dataclass(frozen=True, slots=True)
class ResearchPolicy:
    """How the offline hybrid re-plans after early ends (see the module doc).

    ``budget_s``: wall seconds of one search; ``total_s``: of all re-plans of a replay;
    ``when``: ``always`` at every early end or only when some queued job ``fits`` now;
    ``robust``: ``none``, ``all``, ``rules`` or ``search``; ``scenarios``: runtime scenarios
    of each of ``kinds`` (names of :data:`.robust.KINDS`, a tuple or joined by ``+``),
    weighed within ``robust_s`` seconds; ``margin``: the share by which a plan or rule must
    beat PRB's;
    ``learned``: ratios seen in the replay from which the prior is left out.
    """

    budget_s: float = 0.15
    total_s: float = 20.0
    when: str = "fits"
    robust: str = "rules"
    robust_s: float = 1.0
    scenarios: int = 3
    kinds: tuple[str, ...] | str = ("iid",)
    margin: float = 0.0
    learned: int = 10

    def __post_init__(self) -> None:
        if not self.budget_s > 0 or not self.total_s > 0 or not self.robust_s > 0:
            raise ValueError(
                f"ResearchPolicy: budgets must be > 0 ({self.budget_s}, {self.total_s}, "
                f"{self.robust_s})"
            )
        if self.when not in WHEN:
            raise ValueError(f"ResearchPolicy: when={self.when!r} must be one of {WHEN}")
        if self.robust not in ROBUST:
            raise ValueError(f"ResearchPolicy: robust={self.robust!r} must be one of {ROBUST}")
        kinds = self.kinds.split("+") if isinstance(self.kinds, str) else self.kinds
        object.__setattr__(self, "kinds", tuple(kinds))
        object.__setattr__(self, "scenarios", int(self.scenarios))
        object.__setattr__(self, "learned", int(self.learned))


def fits_now(snap: Snapshot, cache: StateCache) -> bool:
    """True when some queued job fits now on the cluster as it is (a decision to make)."""
    return bool(prb_starts_now(snap, cache))


class Researcher:
    """Re-plans an offline hybrid's stale plan at early ends (see the module doc)."""

    def __init__(self, policy: ResearchPolicy, params: SearchParams) -> None:
        self.policy = policy
        self.params = replace(
            params, budget_s=policy.budget_s, time_limit_s=None, lns=False, cp=False,
            local_search=0.95, lower_bound="none", retry_on_timeout=False, serial=0.0,
        )  # fmt: skip
        self.spent_s = 0.0
        self.searches = 0
        self.skipped = 0

    def replan(
        self,
        snap: Snapshot,
        cache: StateCache,
        schedule: Mapping[str, Assignment],
        ratios: Sequence[float],
        prior: Sequence[float] = (),
    ) -> tuple[MappedSchedule, SolverStats]:
        """The new plan after early ends and its stats (status ``researched``, or
        ``retimed`` when no search ran). ``schedule``: the stale plan; ``ratios``:
        runtime/walltime of the jobs ended so far; ``prior``: ratios known before."""
        t0 = time.perf_counter()
        order = plan_order(snap, schedule)
        spent = self.policy.total_s - self.spent_s <= 0.02
        if spent or (self.policy.when == "fits" and not fits_now(snap, cache)):
            # Budget spent: PRB's order from now on (a stale plan's start order is not PRB's
            # priority order, and lost to it); nothing fits: the stale plan re-timed.
            self.skipped += 1
            kept = map_schedule(snap, cache, prb_order(snap.queued) if spent else order,
                                release=None, source="prb" if spent else "retime")  # fmt: skip
            stats = SolverStats(status="retimed", objective=kept.objective,
                                extra={"best_source": kept.source})  # fmt: skip
            return kept, stats
        left = self.policy.total_s - self.spent_s
        params = replace(self.params, budget_s=min(self.policy.budget_s, left),
                         seed=self.params.seed + self.searches)  # fmt: skip
        # The ratios seen in this replay once there are enough of them (a prior of thousands
        # of earlier jobs, or the uniform one, would drown them), else the prior too.
        pool = tuple(ratios) if len(ratios) >= self.policy.learned else (*prior, *ratios)
        if self.policy.robust == "search":
            judged = scenario_search(
                snap, cache, order, pool, count=self.policy.scenarios, kinds=self.policy.kinds,
                seed=params.seed, budget_s=params.budget_s or self.policy.budget_s,
                margin=self.policy.margin,
            )  # fmt: skip
            if judged is not None:
                return self._done(t0, judged[0], judged[1], SolverStats(status="researched"))
        found = hybrid_search(snap, cache, params, seeds=[("retime", order)])
        best = found.best
        robust: dict[str, float | int | str] = {}
        if self.policy.robust == "rules" and pool:
            budget = min(self.policy.robust_s, max(left - (time.perf_counter() - t0), 0.01))
            best, robust = best_rule(
                snap, cache, best, found.prb, order, pool, count=self.policy.scenarios,
                kinds=self.policy.kinds, seed=params.seed, margin=self.policy.margin,
                budget_s=budget,
            )  # fmt: skip
        elif self.policy.robust == "all" and pool:
            best, robust = robust_choice(
                snap, best, found.prb, pool, self.policy.scenarios, params.seed,
                self.policy.margin, budget_s=self.policy.robust_s, kinds=self.policy.kinds,
            )  # fmt: skip
        return self._done(t0, best, robust, found.stats)

    def _done(
        self,
        t0: float,
        best: MappedSchedule,
        robust: Mapping[str, float | int | str],
        stats: SolverStats,
    ) -> tuple[MappedSchedule, SolverStats]:
        """A re-search's plan and its stats (status ``researched``), its time counted."""
        seconds = time.perf_counter() - t0
        self.spent_s += seconds
        self.searches += 1
        extra = {**stats.extra, **robust, "best_source": best.source, "research": self.searches}
        return best, replace(stats, status="researched", objective=best.objective,
                             seconds=seconds, extra=extra)  # fmt: skip
