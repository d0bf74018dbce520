"""The online plan judged by a rollout under sampled runtimes (the hybrid's ``rollout``).

Online the hybrid plans on predicted runtimes (a class's mean of its last runtimes): the
search's objective takes the predictions for the truth and may find a plan far better than
PRB's in its model that loses with the jobs' real runtimes (issue 16: on
``hist_400_20140403_111002`` the plans beat PRB's by more than 5 % in the model in 85 % of
the searches, and the trace loses 8 % to PRB). What a cycle decides is only which jobs start
now: the next cycle plans again. So each search's choice is weighed as a *rollout*: this
cycle's starts, then PRB's rule (greedy list scheduling in PRB's order, what the fill does
too), against PRB's rule from now, both under ``count`` runtime scenarios in which each
job's runtime is its prediction times a ratio drawn, seeded, from the predictor's own record
of runtime / prediction (:attr:`~wattsched.scheduler.runtime_predictor.RuntimePredictor.errors`:
causal, the jobs ended so far), never more than its walltime; a running job's from those
that end after now. The plan's starts are kept unless their rollout's mean weighted queue
time, averaged over the scenarios, loses to PRB's by more than ``margin`` (the dispatcher's
``rollout_margin``, 0.5 % by default; 0: unless it loses or ties); else PRB's plan is the
plan. :func:`reservation_pays` judges a reservation the same way (:mod:`.holds`).

With ``horizon`` > 0 each scenario also has jobs yet to arrive (:func:`future_arrivals`: at
the rate of the last day's arrivals, each one of them drawn with replacement, at a uniform
time of the horizon), which both rollouts list in PRB's order among the waiting jobs and
start no earlier than their arrival; their weighted waits count too. A search sees only the
jobs queued now: on ``hist_400_20140402_194226`` it started 1-core 8-hour jobs of the lowest
weight hours before PRB would, filling the power cap that later arrivals of weight 4 and 24
then waited for (issue 16, session 29).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import replace

from wattsched.scheduler.hybrid.mapping import MappedSchedule
from wattsched.scheduler.hybrid.predicted import predicted_end
from wattsched.scheduler.hybrid.scenario_search import ScenarioDecoder
from wattsched.scheduler.mapper import StateCache
from wattsched.scheduler.model import Job, Snapshot
from wattsched.scheduler.runtime_predictor import RuntimePredictor, coarse_class

MIN_ERRORS = 20
"""Fewer recorded errors than this: no rollout (the search's choice stands)."""
DRAWS = 20
"""Draws for a running job's ratio before taking the predicted-end rule."""
SPAN_S = 86_400
"""The last arrivals that give the rate and the kinds of the jobs to arrive (a day: the
first hours of a queue, a burst, are not taken for the rate to come)."""


def rollout_errors(predictor: RuntimePredictor, prior: Sequence[float] = ()) -> list[float]:
    """The error ratios the rollout draws from: the predictor's record, and ``prior`` too
    while that record is shorter than :data:`MIN_ERRORS` (empty: none yet)."""
    errors = list(predictor.errors)
    if len(errors) < MIN_ERRORS and prior:
        errors += prior
    return errors if len(errors) >= MIN_ERRORS else []


def prediction_scenarios(
    real: Snapshot,
    predictor: RuntimePredictor,
    count: int,
    seed: int,
    prior: Sequence[float] = (),
    by_class: bool = False,
) -> list[dict[str, int]]:
    """``count`` runtime scenarios of ``real``'s jobs (queued: job id -> runtime; running:
    job id -> end time), each job's runtime its prediction times a drawn error ratio
    (:func:`rollout_errors`), in [1, walltime]; a running job's end after now (else
    :func:`.predicted.predicted_end`). ``by_class``: the jobs of a class the predictor
    cannot speak for yet (planned on their walltimes) share one drawn ratio per scenario
    (:func:`class_ratio`); the others draw their own."""
    errors = rollout_errors(predictor, prior)
    if not errors or count <= 0:
        return []
    rng = random.Random(seed)
    now = real.time
    out: list[dict[str, int]] = []
    for _ in range(count):
        sc: dict[str, int] = {}
        shared: dict[tuple[object, ...], float] | None = {} if by_class else None
        for j in real.queued:
            ratio = class_ratio(j, predictor, rng, errors, shared)
            sc[j.id] = max(1, min(j.walltime, round(predictor.predict(j) * ratio)))
        for rj in real.running:
            guess = predictor.predict(rj.job)
            end = None
            for k in range(DRAWS):
                ratio = class_ratio(rj.job, predictor, rng, errors, shared if k == 0 else None)
                cand = rj.start + max(1, round(guess * ratio))
                if cand > now:
                    end = cand
                    break
            if end is None:
                end = predicted_end(rj, guess, now)
            sc[rj.job.id] = max(now + 1, min(end, rj.end_estimate))
        out.append(sc)
    return out


def class_ratio(
    job: Job,
    predictor: RuntimePredictor,
    rng: random.Random,
    errors: Sequence[float],
    shared: dict[tuple[object, ...], float] | None,
) -> float:
    """A drawn error ratio for ``job``: its class's in ``shared`` (drawn at its first job)
    when the predictor plans the job on its walltime (a class none of whose jobs has been
    seen to end: its walltime is off by what the whole class runs, not job by job, issue 16:
    hist_200_20140401_141720's 8-hour jobs that run minutes); else (or ``shared`` None) its
    own."""
    if shared is None or predictor.level(job) != "walltime":
        return rng.choice(errors)
    key = coarse_class(job)
    if key not in shared:
        shared[key] = rng.choice(errors)
    return shared[key]


def future_arrivals(
    window: Sequence[Job],
    now: int,
    horizon: int,
    rng: random.Random,
    predictor: RuntimePredictor,
    errors: Sequence[float],
    runtimes: dict[str, int],
    span: int = SPAN_S,
) -> list[Job]:
    """A draw of the jobs to arrive in ``(now, now + horizon]``: the jobs of ``window``
    submitted in the last ``span`` seconds (at least ``horizon``) give the rate (their count
    x ``horizon`` / ``span`` jobs, the fraction drawn) and the kinds (each one drawn with
    replacement, id ``~k``, not held, at a uniform time of the horizon). Each one's runtime,
    its prediction times a ratio drawn from ``errors`` (at most its walltime), is put in
    ``runtimes``."""
    span = max(span, horizon)
    recent = [j for j in window if now - span < j.submit <= now]
    if not recent or horizon <= 0:
        return []
    mean = len(recent) * horizon / span
    count = int(mean) + (rng.random() < mean - int(mean))
    out: list[Job] = []
    for k in range(count):
        j = rng.choice(recent)
        v = replace(j, id=f"~{k}", submit=now + 1 + rng.randrange(horizon), held=False,
                    held_by=None, runtime=None, restarts=0)  # fmt: skip
        runtimes[v.id] = max(1, min(v.walltime, round(predictor.predict(v) * rng.choice(errors))))
        out.append(v)
    return out


def scenario_decoder(
    real: Snapshot,
    predictor: RuntimePredictor,
    count: int,
    seed: int,
    window: Sequence[Job] = (),
    horizon: int = 0,
    prior: Sequence[float] = (),
    by_class: bool = False,
) -> ScenarioDecoder | None:
    """The rollout's decoder: ``count`` scenarios (:func:`prediction_scenarios`, with
    ``by_class``) of ``real`` (the RMS's snapshot, not the planning view), each with
    :func:`future_arrivals` from ``window`` when ``horizon`` > 0 (None: too few errors
    recorded, or no compiled decode)."""
    cases = prediction_scenarios(real, predictor, count, seed, prior, by_class)
    if not cases:
        return None
    rng = random.Random(seed + 1)
    errors = rollout_errors(predictor, prior)
    arrivals = [future_arrivals(window, real.time, horizon, rng, predictor, errors, sc)
                if horizon > 0 else [] for sc in cases]  # fmt: skip
    dec = ScenarioDecoder(real, StateCache(), cases, arrivals)
    return dec if dec.compiled else None


def rollout_choice(
    real: Snapshot,
    best: MappedSchedule,
    prb: MappedSchedule,
    predictor: RuntimePredictor,
    count: int,
    seed: int,
    window: Sequence[Job] = (),
    horizon: int = 0,
    margin: float = 0.0,
    cold_prb: bool = False,
    cold_prior: Sequence[float] = (),
    by_class: bool = False,
) -> tuple[MappedSchedule, dict[str, float | int | str]]:
    """``best`` when its starts now, then PRB's rule, beat PRB's rule from now in the mean
    over ``count`` scenarios (:func:`prediction_scenarios`) of ``real`` (the RMS's snapshot,
    not the planning view), each with :func:`future_arrivals` from ``window`` when
    ``horizon`` > 0, or lose to it by less than ``margin`` (a share of the plan's mean); else
    ``prb``. Nothing to judge (``best`` is ``prb``, or the same starts now): ``best``, with an
    empty record; no judge yet (too few errors recorded, or no compiled decode): ``best``, or
    with ``cold_prb`` ``prb`` (recorded as ``rollout: cold``); ``cold_prior``: error ratios
    the scenarios draw from too while the predictor's record is short
    (:func:`rollout_errors`); ``by_class``: class-shared ratios (:func:`class_ratio`)."""
    if best is prb or not real.queued:
        return best, {}
    queued = {j.id: j for j in real.queued if not j.held}
    now = [queued[a.job_id] for a in best.assignments
           if a.start <= real.time and a.job_id in queued]  # fmt: skip
    first = {j.id for j in now}
    if first == {a.job_id for a in prb.assignments if a.start <= real.time}:
        return best, {}  # the same starts now: nothing to choose (no scenario drawn)
    dec = scenario_decoder(real, predictor, count, seed, window, horizon, cold_prior, by_class)
    if dec is None:
        return (prb, {"rollout": "cold"}) if cold_prb else (best, {})
    rest = [j for j in real.queued if j.id not in first]
    plan_value = dec.rollout(now, rest)
    prb_value = dec.rollout([], list(real.queued))
    kept = plan_value * (1 - margin) < prb_value - 1e-9
    extra: dict[str, float | int | str] = {
        "rollout": "kept" if kept else "prb",
        "rollout_gain": round(prb_value / plan_value, 4) if plan_value > 0 else 1.0,
    }
    return (best if kept else prb), extra


def reservation_pays(
    real: Snapshot,
    head: Job,
    predictor: RuntimePredictor,
    count: int,
    seed: int,
    window: Sequence[Job] = (),
    horizon: int = 0,
    margin: float = 0.0,
) -> tuple[bool, float]:
    """Whether a reservation for ``head`` now (it first, holding the machine until it
    starts, then PRB's rule) beats PRB's rule from now by ``margin`` in the mean over
    ``count`` scenarios (with the jobs to arrive within ``horizon``), and PRB's / the
    reservation's mean."""
    dec = scenario_decoder(real, predictor, count, seed, window, horizon)
    if dec is None:
        return False, 0.0
    held = dec.rollout_hold(head, [j for j in real.queued if j.id != head.id])
    prb = dec.rollout([], list(real.queued))
    return held * (1 + margin) < prb, (prb / held if held > 0 else 1.0)


def sunk_wait(snap: Snapshot, schedule: MappedSchedule) -> float:
    """The part of ``schedule``'s objective no plan can change: the mean weighted wait of its
    jobs until ``snap``'s time (``max EWT / EWT_i * (now - submit_i)``, the weights of
    :func:`~wattsched.scheduler.hybrid.problem.weighted_queue_time`)."""
    if not schedule.assignments:
        return 0.0
    queued = {j.id: j for j in snap.queued}
    jobs = [queued[a.job_id] for a in schedule.assignments if a.job_id in queued]
    top = snap.max_ewt()
    return sum(top / j.ewt * (snap.time - j.submit) for j in jobs) / len(schedule.assignments)


def online_choice(
    real: Snapshot,
    best: MappedSchedule,
    prb: MappedSchedule,
    *,
    margin: float,
    rollout: int,
    predictor: RuntimePredictor | None,
    seed: int,
    window: Sequence[Job] = (),
    horizon: int = 0,
    rollout_margin: float = 0.0,
    cold_prb: bool = False,
    cold_prior: Sequence[float] = (),
    by_class: bool = False,
) -> tuple[MappedSchedule, dict[str, float | int | str]]:
    """The online hybrid's choice between a search's ``best`` and PRB's plan ``prb``: PRB's
    unless ``best`` beats it by ``margin`` in the model, then unless its starts win a rollout
    of ``rollout`` scenarios (:func:`rollout_choice`, with the jobs to arrive within
    ``horizon`` seconds drawn from ``window``, lost by less than ``rollout_margin``; 0 or no
    predictor: not judged; ``cold_prb``: PRB's while the rollout has too few runtimes seen
    to judge; ``cold_prior``: error ratios it draws from too until then; ``by_class``:
    class-shared ratios, :func:`class_ratio`).

    The margin is a share of the weighted wait the plans decide, from now on: what the
    queued jobs have waited so far (:func:`sunk_wait`) is the same in both plans and left
    out, so a long-waiting queue does not dilute it (a share of the whole mean weighted queue
    time, as first built in session 26, asked far less of a plan on a fresh queue than on
    one that has waited for hours)."""
    if best is prb:
        return best, {}
    if margin:
        sunk = sunk_wait(real, prb)
        if (best.objective - sunk) * (1 + margin) > prb.objective - sunk:
            return prb, {"margin": "prb"}
    if rollout and predictor is not None:
        return rollout_choice(real, best, prb, predictor, rollout, seed, window, horizon,
                              rollout_margin, cold_prb, cold_prior, by_class)  # fmt: skip
    return best, {}
