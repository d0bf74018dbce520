"""A per-job runtime predictor learned from finished jobs (issue 16, real-runtime protocol).

In the spirit of Tsafrir, Etsion and Feitelson (2007, "Backfilling using system-generated
predictions rather than user runtime estimates"): a job's runtime is predicted from the
runtimes of the last jobs *of the same user* that finished. A job's *class* is its user where
the RMS names one (Slurm, PBS, SGE do), its queue, its number of units, its unit (cores,
memory, GPUs, MICs) and its walltime (a user's job array or a repeated script shares all of
them); the Eurora traces hide users, and the rest stands in for them.

Prediction (:meth:`RuntimePredictor.predict`), with its fallbacks in turn:

1. ``class``: the mean of the last ``depth`` (2) runtimes of finished jobs of the job's
   class (user, queue, units, unit, walltime), once ``min_runs`` (2) of them have ended;
2. ``coarse``: else the same over the coarser class (queue, walltime);
3. ``walltime``: else the job's walltime (the user's estimate).

A level speaks only once ``min_runs`` (2) of its jobs have ended: one run is no history. A
job that fails at once (21 s of a 4-hour walltime, hist_400_20140402_112330) would otherwise
make the next jobs of its class, started in the same burst and running their 4 hours, look
21 s long to the plan (on PRB's path of the 22 ``hist_400`` traces the median area of
under-prediction, units x seconds, falls from 0.35 to 0.23 of the walltimes' error;
``bench/results/hybrid_eurora.md``, session 23).

Never above the walltime (the RMS kills a job there) and never below 1 s.

Causality: the predictor learns only what it is told has *ended*: a history the administrator
gives (:meth:`learn`, e.g. the jobs that ended before the replay), and online the jobs seen
to end (:meth:`observe`: a job seen running, or said :meth:`started` by the dispatcher, that
leaves the snapshot and is not queued again ran until the end the RMS reports, else until
now; without :meth:`started` a job that starts and ends between two cycles would never be
learned, and a class of short jobs would keep its long predictions). A job that has not
ended, queued or running, never informs a prediction, and nothing of a job's own runtime is
read (``Job.runtime`` is never used).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field

from wattsched.scheduler.model import Job, Plan, Snapshot

MIN_EVIDENCE = 10
"""How many ended jobs :meth:`RuntimePredictor.better_than_walltimes` needs to judge."""

MAX_ERRORS = 10_000
"""How many of its latest errors a predictor keeps."""

LEVELS = ("class", "coarse", "walltime")
"""Where a prediction comes from, finest first."""


def job_class(job: Job) -> tuple[object, ...]:
    """The fine class of a job: its user where the RMS names one, queue, units, unit and
    walltime (without a user, as in the Eurora traces, the rest stands in for one)."""
    return (job.user, job.queue, job.units, job.unit.as_tuple(), job.walltime)


def coarse_class(job: Job) -> tuple[object, ...]:
    """The coarse class of a job: queue and walltime."""
    return (job.queue, job.walltime)


@dataclass
class RuntimePredictor:
    """Predicts a job's runtime from the finished jobs of its class (see the module doc).

    ``depth``: how many recent runtimes of a class are kept (their mean is the prediction);
    ``window``: over how many of the last jobs learned :meth:`better_than_walltimes` compares
    the predictions with the walltimes; ``gate``: False to trust the predictions always;
    ``min_runs``: how many ended jobs a class needs before it predicts (at most ``depth``);
    ``spread``: None (the default) for the mean of the recent runtimes; a factor > 1 to call
    a class *erratic* when its recent runtimes differ by more than that factor, and predict
    the longest of them (a class whose jobs either fail at once or run to the walltime has a
    mean that neither kind runs: planning on it under-predicts every long run).
    """

    depth: int = 2
    window: int = 100
    gate: bool = True
    min_runs: int = 2
    spread: float | None = None
    _fine: dict[tuple[object, ...], deque[int]] = field(default_factory=dict, repr=False)
    _coarse: dict[tuple[object, ...], deque[int]] = field(default_factory=dict, repr=False)
    _watch: dict[str, tuple[Job, int, int]] = field(default_factory=dict, repr=False)
    _recent: deque[tuple[float, float]] = field(default_factory=deque, repr=False)
    learned: int = 0
    """How many ended jobs informed the predictor (history and online)."""
    errors: deque[float] = field(default_factory=lambda: deque(maxlen=MAX_ERRORS), repr=False)
    """Runtime over the prediction made just before each job was learned (a causal record of
    the predictor's own error, for runtime scenarios around its predictions); the last
    :data:`MAX_ERRORS` (a daemon learns for months)."""

    def __post_init__(self) -> None:
        if self.depth < 1:
            raise ValueError(f"RuntimePredictor: depth={self.depth!r} must be >= 1")
        if self.window < 1:
            raise ValueError(f"RuntimePredictor: window={self.window!r} must be >= 1")
        if not 1 <= self.min_runs <= self.depth:
            raise ValueError(f"RuntimePredictor: min_runs={self.min_runs!r} must be in "
                             f"[1, depth={self.depth}]")  # fmt: skip
        if self.spread is not None and not self.spread > 1:
            raise ValueError(f"RuntimePredictor: spread={self.spread!r} must be > 1 (or None)")
        self._recent = deque(self._recent, maxlen=self.window)

    def learn(self, job: Job, runtime: int, predicted: int | None = None) -> None:
        """A job that has ended after running ``runtime`` seconds (clamped to [1, walltime]);
        ``predicted``: what was predicted of it when it started (None: now, just before)."""
        run = max(1, min(int(runtime), job.walltime))
        guess = self.predict(job) if predicted is None else max(1, predicted)
        self.errors.append(run / guess)
        self._recent.append((abs(math.log(run / guess)), abs(math.log(run / job.walltime))))
        for table, key in ((self._fine, job_class(job)), (self._coarse, coarse_class(job))):
            table.setdefault(key, deque(maxlen=self.depth)).append(run)
        self.learned += 1

    def better_than_walltimes(self) -> bool:
        """True when, over the last ``window`` jobs learned (at least :data:`MIN_EVIDENCE`),
        the predictions were closer to the runtimes than the walltimes were (mean absolute
        log error). Where users' walltimes are good or runtimes erratic, predictions from a
        class's last runtimes can be worse than the walltimes: then plan on the walltimes.
        Always True without the ``gate``."""
        if not self.gate:
            return True
        if len(self._recent) < MIN_EVIDENCE:
            return False
        return sum(p for p, _ in self._recent) < sum(w for _, w in self._recent)

    def learn_all(self, ended: Iterable[tuple[Job, int]]) -> None:
        """Learn ``(job, runtime)`` pairs of ended jobs, in the order they ended."""
        for job, runtime in ended:
            self.learn(job, runtime)

    def level(self, job: Job) -> str:
        """Where :meth:`predict` takes the job's prediction from (one of :data:`LEVELS`)."""
        return self._recent_of(job)[0]

    def predict(self, job: Job) -> int:
        """The job's predicted runtime in seconds: in [1, walltime] (see the module doc)."""
        recent = self._recent_of(job)[1]
        if not recent:
            return job.walltime
        if self.spread is not None and max(recent) > self.spread * min(recent):
            return min(job.walltime, max(recent))  # an erratic class: its longest run
        return max(1, min(job.walltime, round(sum(recent) / len(recent))))

    def _recent_of(self, job: Job) -> tuple[str, deque[int] | None]:
        """The finest level with ``min_runs`` runtimes for the job, and those runtimes."""
        fine = self._fine.get(job_class(job))
        if fine is not None and len(fine) >= self.min_runs:
            return "class", fine
        coarse = self._coarse.get(coarse_class(job))
        if coarse is not None and len(coarse) >= self.min_runs:
            return "coarse", coarse
        return "walltime", None

    def observe(self, snap: Snapshot) -> list[str]:
        """Learn online from a snapshot: every job seen running in the last one observed, or
        said :meth:`started` since, that is neither running nor queued now (a requeue is no
        end) ran from its start until its end: the end the RMS reports
        (:attr:`~wattsched.scheduler.model.Snapshot.ended`), else now; one it reports
        cancelled is not learned. Returns the ids of the jobs that ended."""
        running = {rj.job.id for rj in snap.running}
        queued = {j.id for j in snap.queued}
        ends = {e.job_id: e.end for e in snap.ended if e.end is not None}
        cancelled = {e.job_id for e in snap.ended if e.state == "cancelled"}
        ended = [jid for jid in self._watch if jid not in running and jid not in queued]
        for jid in ended:
            if jid in cancelled:  # cut short (or never run): says nothing of its class
                continue
            job, start, predicted = self._watch[jid]
            self.learn(job, min(ends.get(jid, snap.time), snap.time) - start, predicted)
        watch = {}
        for rj in snap.running:
            seen = self._watch.get(rj.job.id)
            if seen is None or seen[1] != rj.start:  # first seen running (or restarted)
                seen = (rj.job, rj.start, self.predict(rj.job))
            watch[rj.job.id] = seen
        self._watch = watch
        return ended

    def started(self, starts: Iterable[tuple[Job, int]]) -> None:
        """Jobs the dispatcher has just started, each with its start: watched from now, so
        that a job that ends before any snapshot shows it running (a burst of jobs of a few
        seconds, started and ended between two cycles) is still learned at its end."""
        for job, start in starts:
            if job.id not in self._watch:
                self._watch[job.id] = (job, start, self.predict(job))

    def plan_started(self, snap: Snapshot, plan: Plan) -> None:
        """The queued jobs ``plan`` starts at ``snap``'s time, watched from now (:meth:`started`):
        what a dispatcher calls after each plan."""
        queued = {j.id: j for j in snap.queued}
        self.started((queued[a.job_id], snap.time) for a in plan.assignments
                     if a.start <= snap.time and a.job_id in queued)  # fmt: skip
