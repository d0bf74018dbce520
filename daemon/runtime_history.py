"""The runtime predictor's memory across restarts: the jobs the store saw run and end.

A hybrid dispatcher with a runtime predictor (online its default, ``[dispatcher_params]
predictor = false`` to plan on walltimes; :mod:`wattsched.scheduler.runtime_predictor`)
learns each job's runtime when it sees the job end. That memory lives in the daemon's
process; the store keeps every job's start and end
(:class:`~wattsched.daemon.store_models.JobRow`), so a restarted daemon (or a standby taking
over, :func:`wattsched.daemon.leader.take_over`) learns again from the last
:data:`HISTORY_LIMIT` jobs that ended, in the order they ended, before its first cycle: a
restart forgets nothing the predictor knew.
"""

from __future__ import annotations

from sqlalchemy import select

from wattsched.daemon.store import Store
from wattsched.daemon.store_models import JobRow
from wattsched.scheduler.dispatcher import Dispatcher
from wattsched.scheduler.model import Job, Resources
from wattsched.scheduler.runtime_predictor import RuntimePredictor

HISTORY_LIMIT = 5000
"""How many of the latest ended jobs a restarted predictor learns from."""

_NOT_LEARNED = ("queued", "running", "cancelled")


def ended_jobs(store: Store, limit: int = HISTORY_LIMIT) -> list[tuple[Job, int]]:
    """``(job, runtime s)`` of the last ``limit`` jobs that ran and ended, oldest end first
    (a job cancelled before it started never ran: it is not one; one cancelled while it ran
    was cut short: its runtime says nothing of its class, as in
    :meth:`~wattsched.scheduler.runtime_predictor.RuntimePredictor.observe`)."""
    with store.sessions() as s:
        rows = list(
            s.scalars(
                select(JobRow)
                .where(
                    JobRow.state.not_in(_NOT_LEARNED),
                    JobRow.started.is_not(None),
                    JobRow.finished.is_not(None),
                )
                .order_by(JobRow.finished.desc(), JobRow.id.desc())
                .limit(limit)
            )
        )
    out = []
    for r in reversed(rows):
        assert r.started is not None and r.finished is not None  # the query's filter
        unit = Resources(cores=r.unit_cores, mem_mb=r.unit_mem_mb, gpus=r.unit_gpus,
                         mics=r.unit_mics)  # fmt: skip
        job = Job(id=r.id, submit=r.submit, walltime=r.walltime, units=r.units, unit=unit,
                  queue=r.queue, user=r.user)  # fmt: skip
        out.append((job, max(1, r.finished - r.started)))
    return out


def seed_predictor(
    dispatcher: Dispatcher, store: Store, *, fresh: bool = False, limit: int = HISTORY_LIMIT
) -> int:
    """Teach the dispatcher's runtime predictor, if it has one, the jobs the store saw end
    (:func:`ended_jobs`); returns how many it learned (0 without a predictor). ``fresh``: a
    new predictor of the same settings first (a standby taking over: what it learned at its
    start is in the store too, with every job that ended since)."""
    predictor = getattr(dispatcher, "predictor", None)
    if not isinstance(predictor, RuntimePredictor):
        return 0
    if fresh:
        predictor = RuntimePredictor(depth=predictor.depth, window=predictor.window,
                                     gate=predictor.gate, min_runs=predictor.min_runs)  # fmt: skip
        setattr(dispatcher, "predictor", predictor)  # noqa: B010 (not every Dispatcher has one)
    ended = ended_jobs(store, limit)
    predictor.learn_all(ended)
    return len(ended)
