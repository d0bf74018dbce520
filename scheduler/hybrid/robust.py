"""A plan chosen robustly against early job ends (offline mode, runtimes unknown).

A search plans on walltimes, but jobs usually end earlier. In an offline replay the hybrid
follows its plan only until the first early end; from then on every cycle re-times the queue
in PRB's order (:mod:`.retime`). So the plan's whole effect is what it starts before that
first early end, and a plan better on walltimes can lose to PRB with real runtimes (issue 16:
PRB starts 7 jobs at time 0, the plan 1 big one; 0.95).

Here both policies are replayed under a few *runtime scenarios* (each job's runtime = its
walltime x a ratio drawn, seeded, from runtime/walltime ratios the dispatcher may know:
jobs that ended before, in this replay or in earlier data; never the queued jobs' own
runtimes): the plan followed until its first early end then PRB, against PRB throughout. A
PRB replay starts at each event, in PRB order, whatever fits now, so with the scenario's
runtimes as durations it is list scheduling in PRB order (:func:`list_schedule`). The plan
is kept only when it beats PRB by a margin in every scenario (:func:`robust_choice`).
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from wattsched.scheduler.dispatcher import prb_order
from wattsched.scheduler.hybrid.mapping import MappedSchedule
from wattsched.scheduler.hybrid.problem import weighted_queue_time
from wattsched.scheduler.listsched import list_schedule
from wattsched.scheduler.mapper import StateCache
from wattsched.scheduler.model import Assignment, RunningJob, Snapshot
from wattsched.scheduler.prb import prb_node_order

Scenario = Mapping[str, int]
"""Job id -> runtime in seconds (queued jobs) or end time (running jobs)."""


MARGIN = 0.02
"""The plan must beat PRB by this share in every scenario (PRB's objective >= the plan's
x (1 + MARGIN)): the scenarios are guesses, and a small predicted gain was seen to turn
into a small loss with the real runtimes."""


@dataclass(frozen=True, slots=True)
class RobustVerdict:
    """The plan's and PRB's objectives in each scenario, and whether the plan is kept."""

    plan: tuple[float, ...]
    prb: tuple[float, ...]
    margin: float = MARGIN
    cases: int | None = None
    """How many scenarios there were (None: as many as weighed)."""

    @property
    def keep_plan(self) -> bool:
        """True when the plan beats PRB by ``margin`` in every scenario (none: kept)."""
        return self.wins == (len(self.plan) if self.cases is None else self.cases)

    @property
    def wins(self) -> int:
        """Scenarios in which the plan beats PRB by ``margin``."""
        return sum(
            q >= p * (1.0 + self.margin) and q > p + 1e-9
            for p, q in zip(self.plan, self.prb, strict=True)
        )


KINDS = ("iid", "block", "level", "group", "extreme", "shuffled")
"""The kinds of runtime scenario (:func:`scenarios`)."""


def scenarios(
    snap: Snapshot, ratios: Sequence[float], count: int, seed: int, kind: str = "iid"
) -> list[dict[str, int]]:
    """``count`` runtime scenarios, ratios (each in (0, 1]) drawn, seeded, from ``ratios``.

    ``kind``: ``iid``, each job's ratio drawn alone; ``block``, the ratios of a run of
    consecutive entries of ``ratios`` (in the order given, e.g. by end time: jobs that ran
    together behave alike), shuffled over the jobs; ``level``, one drawn ratio for the whole
    scenario, each job's spread around it by a log-normal factor (sigma 0.5); ``group``, one
    drawn ratio for each group of alike jobs (same queue, walltime and shape: a user's job
    array tends to end alike), shared by its jobs; ``extreme``, as ``group`` but each group's
    ratio is the lowest or the highest of ``ratios`` (some groups end at once, others run to
    their walltime: the case where a plan made on walltimes loses most); ``shuffled``, iid
    ratios of the walltime of another queued job (a random permutation), capped by the job's
    own walltime: a walltime says little about the runtime (on Eurora the jobs with the
    longest walltimes often end first), which is what a plan that starts short-walltime jobs
    first bets on.
    A queued job's runtime is ``max(1, round(ratio x walltime))``; a running job ends at
    ``start + ratio x walltime``, or just after now if that is past. Empty ``ratios``: none.
    """
    if kind not in KINDS:
        raise ValueError(f"scenarios: kind={kind!r} must be one of {KINDS}")
    if not ratios or count <= 0:
        return []
    rng = random.Random(seed)
    pool = [min(1.0, max(r, 1e-6)) for r in ratios]
    n = len(snap.queued) + len(snap.running)
    out: list[dict[str, int]] = []
    for _ in range(count):
        if kind in ("iid", "shuffled"):
            draw = [rng.choice(pool) for _ in range(n)]
        elif kind == "block":
            at = rng.randrange(max(1, len(pool) - n + 1))
            block = pool[at : at + n]
            draw = [block[k % len(block)] for k in range(n)]
            rng.shuffle(draw)
        elif kind in ("group", "extreme"):
            shared: dict[tuple[object, ...], float] = {}
            ends = (min(pool), max(pool))
            jobs = [*snap.queued, *(rj.job for rj in snap.running)]
            draw = [
                shared.setdefault(
                    (j.queue, j.walltime, j.units, j.unit),
                    rng.choice(pool) if kind == "group" else rng.choice(ends),
                )
                for j in jobs
            ]
        else:
            level = rng.choice(pool)
            draw = [min(1.0, level * math.exp(rng.gauss(0.0, 0.5))) for _ in range(n)]
        it = iter(draw)
        base = [j.walltime for j in snap.queued]
        if kind == "shuffled":
            rng.shuffle(base)
        sc: dict[str, int] = {}
        for j, w in zip(snap.queued, base, strict=True):
            sc[j.id] = max(1, min(j.walltime, round(next(it) * w)))
        for rj in snap.running:
            end = rj.start + max(1, round(next(it) * rj.job.walltime))
            sc[rj.job.id] = min(max(end, snap.time + 1), max(rj.end_estimate, snap.time + 1))
        out.append(sc)
    return out


def follow_then_prb(snap: Snapshot, plan: Sequence[Assignment], scenario: Scenario) -> float:
    """The mean weighted queue time of following ``plan`` until the first early end, then
    PRB, when the jobs run as in ``scenario``. An empty ``plan``: PRB from now.

    Before the first early end every job has ended when the plan expected, so the plan's
    starts are feasible as planned; from then on PRB's order is list scheduled with the
    scenario's runtimes as durations (PRB's decisions at each event depend only on the
    cluster as it is, so this is what a PRB replay does). ``inf`` when some job never fits.
    """
    queued = {j.id: j for j in snap.queued}
    t_first = math.inf
    for rj in snap.running:
        if scenario[rj.job.id] < rj.end_estimate:
            t_first = min(t_first, scenario[rj.job.id])
    started: list[Assignment] = []
    for a in sorted(plan, key=lambda a: (a.start, a.job_id)):
        if a.start >= t_first or a.job_id not in queued:
            break
        started.append(a)
        run = scenario[a.job_id]
        if run < queued[a.job_id].walltime:
            t_first = min(t_first, a.start + run)
    if not queued:
        return 0.0
    if math.isinf(t_first):
        t_first = max((a.start for a in started), default=snap.time)
    t = int(t_first)
    starts = {a.job_id: a.start for a in started}
    ends = {rj.job.id: scenario[rj.job.id] for rj in snap.running}
    ends.update({a.job_id: a.start + scenario[a.job_id] for a in started})
    live = {jid for jid, end in ends.items() if end > t}
    running = [
        replace(rj, end_estimate=ends[rj.job.id]) for rj in snap.running if rj.job.id in live
    ]
    running += [
        RunningJob(queued[a.job_id], a.start, a.nodes, ends[a.job_id])
        for a in started
        if a.job_id in live
    ]
    rest = [j for j in prb_order(snap.queued) if j.id not in starts]
    if rest:
        at = Snapshot(t, snap.nodes, tuple(running), tuple(rest), snap.cap)
        cache = StateCache()
        state = cache.state(at)
        for j in rest:
            cache.vec(j)  # the walltime's vector (the cap is checked over the walltime)
        scaled = [replace(j, walltime=scenario[j.id]) for j in rest]
        live_ends = {rj.job.id: rj.end_estimate for rj in running}
        res = list_schedule(
            state, cache, scaled, t, live_ends, node_order=prb_node_order, full=True
        )
        if res.unplaced:
            return math.inf
        starts.update({a.job_id: a.start for a in res.assignments})
    return weighted_queue_time(snap.queued, starts, snap.max_ewt())


def judge(
    snap: Snapshot,
    plan: Sequence[Assignment],
    cases: Sequence[Scenario],
    margin: float = MARGIN,
    *,
    deadline: float = math.inf,
    timer: Callable[[], float] = time.perf_counter,
    stop_on_loss: bool = False,
) -> RobustVerdict:
    """The plan against PRB in each scenario of ``cases``, in order. With ``stop_on_loss``
    it stops at the first scenario the plan does not win; at ``deadline`` (of ``timer``) it
    stops too. Scenarios not weighed count as lost (:attr:`RobustVerdict.keep_plan` needs
    every one of ``cases``)."""
    plans: list[float] = []
    prbs: list[float] = []
    for sc in cases:
        if timer() >= deadline:
            break
        plans.append(follow_then_prb(snap, plan, sc))
        prbs.append(follow_then_prb(snap, (), sc))
        if stop_on_loss and RobustVerdict((plans[-1],), (prbs[-1],), margin).wins == 0:
            break
    return RobustVerdict(tuple(plans), tuple(prbs), margin, len(cases))


def robust_choice(
    snap: Snapshot,
    best: MappedSchedule,
    prb: MappedSchedule,
    ratios: Sequence[float],
    count: int,
    seed: int,
    margin: float = MARGIN,
    *,
    budget_s: float = math.inf,
    kinds: Sequence[str] = KINDS,
) -> tuple[MappedSchedule, dict[str, float | int | str]]:
    """``best`` when it beats PRB by ``margin`` in every runtime scenario drawn from
    ``ratios`` (``count`` of each of ``kinds``, weighed one of each kind in turn,
    stopping at the first loss), or when there is nothing to weigh (no ratios, or ``best`` is
    PRB's schedule); else ``prb``, also when ``budget_s`` wall seconds end before every
    scenario was weighed. Also what was found, for the plan's stats (``robust``:
    ``kept``/``prb``; scenarios weighed and won; the lowest ratio of PRB's objective over the
    plan's)."""
    if not ratios or count <= 0 or best is prb or best.assignments == prb.assignments:
        return best, {}
    deadline = time.perf_counter() + budget_s
    by_kind = [scenarios(snap, ratios, count, seed + k, kind) for k, kind in enumerate(kinds)]
    cases = [sc for turn in zip(*by_kind, strict=True) for sc in turn]
    verdict = judge(snap, best.assignments, cases, margin, deadline=deadline, stop_on_loss=True)
    pairs = zip(verdict.plan, verdict.prb, strict=True)
    worst = min(((q / p if p > 0 else 1.0) for p, q in pairs), default=1.0)
    extra: dict[str, float | int | str] = {
        "robust": "kept" if verdict.keep_plan else "prb",
        "robust_wins": verdict.wins,
        "robust_weighed": len(verdict.plan),
        "robust_scenarios": len(cases),
        "robust_min_ratio": round(worst, 4),
    }
    if not verdict.keep_plan:
        extra["best_source"] = prb.source
        extra["robust_plan_source"] = best.source
    return (best if verdict.keep_plan else prb), extra
