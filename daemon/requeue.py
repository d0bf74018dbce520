"""Jobs the RMS requeued after we started them (a node failed, an operator requeued them).

A requeue is the RMS's own restart of the job, not a second start by wattsched: the job has
a new incarnation (Slurm's restart count). The cycle journals it once (an action of kind
``requeue``, with the nodes it ran on), then, as the ``requeue`` setting says:

- ``replan`` (default): the job is planned again like a new job and may be started once in
  its new incarnation, on new nodes. Slurm puts a requeued job back *unheld*: unless this
  cycle starts it, it is held again (a journaled ``hold`` that keeps it wattsched's) so that
  Slurm does not start it by itself;
- ``hold``: it is held as an operator would (a journaled ``hold``), not planned, until an
  operator gives it back (Slurm: ``scontrol uhold JOB``) or releases it.

In ``advise`` mode nothing is sent to the RMS: the requeue is journaled and the hold it would
take is logged.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Literal

from wattsched.connectors.base import Connector, ConnectorError
from wattsched.daemon.job_records import StartRecord
from wattsched.daemon.store import Store
from wattsched.scheduler.model import Job, Plan, Snapshot

log = logging.getLogger(__name__)

RequeuePolicy = Literal["replan", "hold"]


def requeued(
    snap: Snapshot, starts: Mapping[str, StartRecord], seen: set[tuple[str, int]]
) -> list[Job]:
    """Queued jobs we started in an earlier incarnation whose requeue is not journaled yet."""
    return [
        j
        for j in snap.queued
        if j.id in starts
        and j.restarts > starts[j.id].incarnation
        and (j.id, j.restarts) not in seen
    ]


def handle_requeues(
    connector: Connector,
    store: Store,
    snap: Snapshot,
    plan: Plan,
    starts: Mapping[str, StartRecord],
    seen: set[tuple[str, int]],
    *,
    mode: str,
    policy: RequeuePolicy,
    cycle_id: int | None,
) -> tuple[set[str], int]:
    """Journal the new requeues and carry out the policy (see the module docstring).

    Returns the ids of the jobs this cycle must not start (held under ``hold``) and how many
    hold commands failed. ``seen`` is updated in place.
    """
    keep_back: set[str] = set()
    failures = 0
    starting = {a.job_id for a in plan.starts_now()}
    for job in requeued(snap, starts, seen):
        old = starts[job.id]
        aid = store.begin_action(
            "requeue", time_=snap.time, job_id=job.id, nodes=old.nodes, cycle_id=cycle_id,
            incarnation=job.restarts,
        )  # fmt: skip
        store.finish_action(
            aid, "done", result=f"requeued by the RMS (restart {job.restarts}); policy {policy}"
        )
        seen.add((job.id, job.restarts))
        log.warning(
            "job %s was requeued by the RMS (restart %d, ran on %s): %s",
            job.id, job.restarts, ",".join(old.nodes), policy,
        )  # fmt: skip
        if policy == "hold":
            keep_back.add(job.id)
            operator, why = True, "requeued: kept back for an operator"
        elif job.held_by is None and job.id not in starting:
            operator, why = False, "requeued: held again for wattsched"
        else:
            continue
        if mode != "enforce":
            log.info("advise mode: would hold job %s (%s)", job.id, why)
            continue
        hid = store.begin_action(
            "hold", time_=snap.time, job_id=job.id, cycle_id=cycle_id, incarnation=job.restarts
        )
        try:
            connector.hold(job.id, operator=operator)
        except ConnectorError as exc:
            store.finish_action(hid, "failed", error=f"{type(exc).__name__}: {exc}")
            log.warning("could not hold requeued job %s: %s", job.id, exc)
            failures += 1
            continue
        store.finish_action(hid, "done", result=why)
    return keep_back, failures
