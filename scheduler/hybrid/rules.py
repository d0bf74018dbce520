"""Choosing a priority rule under runtime scenarios (the re-search's ``rules`` choice).

In the real-runtime protocol a priority order is carried out as a *rule*: at each event, in
order, every queued job that fits starts (and the order is searched again at the next early
end, :mod:`.research`). So an order is judged best by list scheduling it with the runtimes
of a scenario as durations, which is what the rule does if the jobs run so
(:func:`rule_value`), averaged over a few scenarios drawn from the runtime/walltime ratios
known (:func:`.robust.scenarios`, the same scenarios for every order). A plan judged on
walltimes alone, or by following it until its first early end and PRB after
(:mod:`.robust`), misjudges this: the first bets on durations that are not the real ones,
the second on PRB's rule after the first early end, while the re-search keeps its own.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace

from wattsched.scheduler.dispatcher import prb_key, prb_order
from wattsched.scheduler.hybrid.mapping import MappedSchedule, map_schedule
from wattsched.scheduler.hybrid.problem import weighted_queue_time
from wattsched.scheduler.hybrid.robust import scenarios
from wattsched.scheduler.hybrid.search import wspt_orders
from wattsched.scheduler.listsched import list_schedule
from wattsched.scheduler.mapper import StateCache
from wattsched.scheduler.model import Job, Snapshot
from wattsched.scheduler.prb import prb_node_order


def rule_value(snap: Snapshot, order: Sequence[Job], scenario: Mapping[str, int]) -> float:
    """The mean weighted queue time of list scheduling ``order`` from ``snap`` (a priority
    rule: at each event, in order, every job that fits) when the jobs run as in ``scenario``
    (:func:`.robust.scenarios`: runtimes of queued jobs, ends of running ones); ``inf`` when
    some job never fits."""
    running = tuple(replace(rj, end_estimate=scenario[rj.job.id]) for rj in snap.running)
    cache = StateCache()
    state = cache.state(replace(snap, running=running))
    for j in order:
        cache.vec(j)  # the walltime's vector (the cap is checked over the walltime)
    scaled = [replace(j, walltime=scenario[j.id]) for j in order]
    ends = {rj.job.id: rj.end_estimate for rj in running}
    res = list_schedule(state, cache, scaled, snap.time, ends, node_order=prb_node_order,
                        full=True)  # fmt: skip
    if res.unplaced:
        return math.inf
    starts = {a.job_id: a.start for a in res.assignments}
    return weighted_queue_time(snap.queued, starts, snap.max_ewt())


def best_rule(
    snap: Snapshot,
    cache: StateCache,
    best: MappedSchedule,
    prb: MappedSchedule,
    stale: Sequence[Job],
    ratios: Sequence[float],
    *,
    count: int,
    kinds: Sequence[str],
    seed: int,
    margin: float = 0.0,
    budget_s: float = math.inf,
) -> tuple[MappedSchedule, dict[str, float | int | str]]:
    """Of PRB's order, the search's best plan's start order, the stale plan's order
    (``stale``) and the priority orderings, the one with the lowest mean :func:`rule_value`
    over ``count`` scenarios of each of ``kinds``; PRB's unless another beats it by
    ``margin``. Orders not weighed when ``budget_s`` ends are left out (PRB's always is).
    Returns its schedule on walltimes (list scheduled from ``snap``) and what was found."""
    deadline = time.perf_counter() + budget_s
    queued = prb_order(snap.queued)
    starts = {a.job_id: a.start for a in best.assignments}
    orders: dict[str, list[Job]] = {"prb": queued}
    if best.source not in ("prb", "retime", "wspt", "wsdf", "wsef"):  # else one of those
        orders[best.source] = sorted(queued, key=lambda j: (starts.get(j.id, math.inf), prb_key(j)))
    orders["retime"] = list(stale)
    orders.update(wspt_orders(queued, snap.max_ewt()))
    cases = [
        sc for k, kind in enumerate(kinds) for sc in scenarios(snap, ratios, count, seed + k, kind)
    ]
    if not cases:
        return best, {}
    means: dict[str, float] = {}
    for name, order in orders.items():
        if means and time.perf_counter() >= deadline:
            break
        means[name] = statistics.fmean(rule_value(snap, order, sc) for sc in cases)
    pick = min(means, key=lambda n: means[n])
    if not means[pick] * (1 + margin) < means["prb"]:
        pick = "prb"
    if pick == "prb":
        chosen = prb
    elif pick == best.source:
        chosen = best
    else:
        chosen = map_schedule(snap, cache, orders[pick], release=None, source=pick)
    extra: dict[str, float | int | str] = {
        "robust": "prb" if pick == "prb" else "kept",
        "rule": pick,
        "rules_weighed": len(means),
    }
    return chosen, extra
