"""The hybrid's planning view with predicted runtimes (issue 16, real-runtime protocol).

The hybrid plans on walltimes; jobs run far shorter (2-9 % of the walltime on some Eurora
traces). With a :class:`~wattsched.scheduler.runtime_predictor.RuntimePredictor` the dispatcher
plans on a *view* of the snapshot (:func:`predicted_view`) in which each job's walltime is its
predicted runtime: the search's objective, its runtime scenarios and the re-search then weigh
the durations the jobs are expected to run. The view is for planning only: every start is
still checked on the real snapshot (its jobs' walltimes, the cap over them, what runs), PRB's
rule runs on the real snapshot, and a running job past its prediction is still running.

A running job's predicted end is ``start + prediction``; once it is past that and still runs,
it is guessed to run as long again as it has run so far (``now + elapsed``), never after its
walltime end (what the RMS says), so it keeps its room in the plan until it ends.
"""

from __future__ import annotations

from dataclasses import replace

from wattsched.scheduler.model import Job, RunningJob, Snapshot
from wattsched.scheduler.runtime_predictor import RuntimePredictor


def predicted_end(rj: RunningJob, predicted: int, now: int) -> int:
    """A running job's end in the view: its predicted end, or if it is past that, ``now``
    plus its elapsed time (at least ``now + 1``); never after its end estimate."""
    end = rj.start + predicted
    if end <= now:
        end = max(now + 1, 2 * now - rj.start)
    return min(end, rj.end_estimate)


def predicted_view(snap: Snapshot, predictor: RuntimePredictor) -> tuple[Snapshot, dict[str, int]]:
    """The snapshot with each job's walltime replaced by its predicted runtime (queued jobs)
    or its predicted run (running jobs: ``end - start``, the end of :func:`predicted_end`),
    and those durations by job id. Jobs with no shorter prediction are kept as they are."""
    durations: dict[str, int] = {}
    queued: list[Job] = []
    for j in snap.queued:
        d = predictor.predict(j)
        durations[j.id] = d
        queued.append(j if d >= j.walltime else replace(j, walltime=d))
    running: list[RunningJob] = []
    for rj in snap.running:
        end = predicted_end(rj, predictor.predict(rj.job), snap.time)
        d = max(1, min(rj.job.walltime, end - rj.start))
        durations[rj.job.id] = d
        if end == rj.end_estimate and d == rj.job.walltime:
            running.append(rj)
        else:
            running.append(replace(rj, job=replace(rj.job, walltime=d), end_estimate=end))
    view = replace(snap, running=tuple(running), queued=tuple(queued), queued_index=None,
                   queue_edits=None)  # fmt: skip
    return view, durations
