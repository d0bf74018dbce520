"""The re-search's priority-list search judged under runtime scenarios (``robust="search"``).

The ``rules`` choice (:mod:`.rules`) weighs half a dozen fixed orders under runtime
scenarios; the search's own candidates are judged on walltimes, which the jobs do not run
(issue 16: on the historical Eurora instances runtimes are 2-9 % of walltimes). Here the
priority-list local search itself (:func:`.localsearch.priority_search`: restarts, swaps)
judges each order by its mean weighted queue time list scheduled with the runtimes of each
scenario as durations (what the order does as a rule if the jobs run so), averaged over
the scenarios: one compiled decode (:class:`.decode.ListDecoder`) per scenario and order.
The order kept is PRB's unless another beats it by ``margin``; it is carried out as its
list schedule on walltimes (the dispatcher's plan, re-searched at the next early end).
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence

import numpy as np

from wattsched.scheduler.dispatcher import prb_order
from wattsched.scheduler.hybrid.decode import ListDecoder
from wattsched.scheduler.hybrid.localsearch import priority_search
from wattsched.scheduler.hybrid.mapping import MappedSchedule
from wattsched.scheduler.hybrid.robust import scenarios
from wattsched.scheduler.hybrid.search import wspt_orders
from wattsched.scheduler.listsched import live_end
from wattsched.scheduler.mapper import StateCache
from wattsched.scheduler.model import Job, Snapshot


class ScenarioDecoder:
    """Priority lists judged by their mean objective over runtime scenarios; the schedule
    handed back is the list schedule on walltimes, with that mean as its objective.
    ``arrivals``: each scenario's jobs yet to arrive (their runtimes in the scenario too),
    listed by :meth:`rollout`."""

    def __init__(
        self,
        snap: Snapshot,
        cache: StateCache,
        cases: Sequence[Mapping[str, int]],
        arrivals: Sequence[Sequence[Job]] | None = None,
    ) -> None:
        self.walltimes = ListDecoder(snap, cache)
        self.max_ewt = self.walltimes.max_ewt
        self.decoders: list[ListDecoder] = []
        self.arrivals = list(arrivals) if arrivals is not None else [()] * len(cases)
        for sc, arrive in zip(cases, self.arrivals, strict=True):
            dec = ListDecoder(snap, cache, arrive)
            if dec.compiled:  # durations of the scenario (walltimes are the vectors' own)
                r = dec.n_running
                dec.walltime = dec.walltime.copy()
                for k, j in enumerate(dec.jobs):
                    dec.walltime[r + k] = sc[j.id]
                dec.ends0 = np.array(
                    [live_end(sc[rj.job.id], snap.time) for rj in snap.running], dtype=np.int64
                )
            self.decoders.append(dec)
        self.compiled = bool(self.decoders) and all(d.compiled for d in self.decoders)

    def objective(self, jobs: Sequence[Job]) -> float:
        """The mean over the scenarios of ``jobs`` list scheduled (``inf``: some unplaced)."""
        values = [d.objective(jobs) for d in self.decoders]
        return sum(values) / len(values) if values else math.inf

    def rollout(self, first: Sequence[Job], rest: Sequence[Job]) -> float:
        """The mean over the scenarios of ``first``, then PRB's order of ``rest`` and the
        scenario's arrivals, list scheduled (the arrivals' waits counted too)."""
        values = [d.objective([*first, *prb_order([*rest, *arrive])])
                  for d, arrive in zip(self.decoders, self.arrivals, strict=True)]  # fmt: skip
        return sum(values) / len(values) if values else math.inf

    def rollout_hold(self, head: Job, rest: Sequence[Job]) -> float:
        """:meth:`rollout` with ``head`` first and holding a reservation until it starts
        (the compiled decode's ``hold``)."""
        values = []
        for d, arrive in zip(self.decoders, self.arrivals, strict=True):
            d.hold = d.index[head.id] + d.n_running
            try:
                values.append(d.objective([head, *prb_order([*rest, *arrive])]))
            finally:
                d.hold = -1
        return sum(values) / len(values) if values else math.inf

    def schedule(self, jobs: Sequence[Job], source: str) -> MappedSchedule:
        """``jobs`` list scheduled on walltimes, its objective the scenarios' mean."""
        sched = self.walltimes.schedule(jobs, source)
        return MappedSchedule(sched.assignments, self.objective(jobs), sched.conflicts,
                              sched.postponed, source, sched.order)  # fmt: skip


def scenario_search(
    snap: Snapshot,
    cache: StateCache,
    stale: Sequence[Job],
    ratios: Sequence[float],
    *,
    count: int,
    kinds: Sequence[str],
    seed: int,
    budget_s: float,
    margin: float = 0.0,
) -> tuple[MappedSchedule, dict[str, float | int | str]] | None:
    """The best order found within ``budget_s`` under ``count`` scenarios of each of
    ``kinds`` drawn from ``ratios`` (PRB's, the ``stale`` plan's and the priority orderings
    first, then the local search), as its walltime schedule, and what was found; PRB's
    unless another beats it by ``margin``. None when there is no scenario or the compiled
    decode does not apply (the caller falls back to the walltime search)."""
    deadline = time.perf_counter() + budget_s
    cases = [
        sc for k, kind in enumerate(kinds) for sc in scenarios(snap, ratios, count, seed + k, kind)
    ]
    if not cases or not snap.queued:
        return None
    dec = ScenarioDecoder(snap, cache, cases)
    if not dec.compiled:
        return None
    order = prb_order(snap.queued)
    prb = dec.schedule(order, "prb")
    best = prb

    def consider(cand: MappedSchedule) -> None:
        nonlocal best
        if cand.objective < best.objective - 1e-9:
            best = cand

    consider(dec.schedule(stale, "retime"))
    for name, alt in wspt_orders(order, snap.max_ewt()):
        consider(dec.schedule(alt, name))
    tries, wins = priority_search(
        dec, order, lambda: best, consider, lambda _s, _o: None,
        deadline=deadline, timer=time.perf_counter, seed=seed,
    )  # fmt: skip
    chosen = best if best.objective * (1 + margin) < prb.objective else prb
    extra: dict[str, float | int | str] = {
        "robust": "prb" if chosen is prb else "kept",
        "rule": chosen.source,
        "ls_tries": tries,
        "ls_wins": wins,
        "scenario_gain": round(prb.objective / best.objective, 4) if best.objective > 0 else 1.0,
    }
    return chosen, extra
