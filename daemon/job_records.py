"""The job lifecycle the store keeps, as a pure function of one snapshot.

:func:`job_changes` turns what the RMS reports (queued, running, ended jobs), the plan, and
the journal's successful starts into the row inserts and updates of the ``jobs`` table:

- a new job is ``queued`` (with who holds it, and its restart count);
- a queued job that runs is ``running`` (started by wattsched when the journal has our start);
- a running job that is queued again was requeued by the RMS: back to ``queued``, its old
  start and nodes cleared, its restart count raised;
- a job that ends takes the RMS's end state when the RMS still reports it (``completed``,
  ``cancelled``, ``failed``, ``timeout``, ``node_fail``...); a job that vanished is
  ``finished`` if it ran or if we started it (a job that starts and ends between two
  snapshots: its start and nodes come from the journal), else ``cancelled``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from wattsched.scheduler.model import Job, Plan, Snapshot

Row = dict[str, Any]


@dataclass(frozen=True, slots=True)
class StartRecord:
    """Our last successful start of a job, from the journal."""

    incarnation: int
    """The job's restart count when we started it."""
    time: int
    nodes: tuple[str, ...]


def _join(names: tuple[str, ...] | None) -> str | None:
    return ",".join(names) if names else None


def new_job_values(job: Job, t: int) -> Row:
    """Every column of a job row first seen at ``t``."""
    return {
        "queue": job.queue,
        "user": job.user,
        "units": job.units,
        "unit_cores": job.unit.cores,
        "unit_mem_mb": job.unit.mem_mb,
        "unit_gpus": job.unit.gpus,
        "unit_mics": job.unit.mics,
        "walltime": job.walltime,
        "submit": job.submit,
        "first_seen": t,
        "last_seen": t,
        "planned_start": None,
        "planned_nodes": None,
        "started": None,
        "started_by": None,
        "nodes": None,
        "finished": None,
        "held_by": job.held_by,
        "restarts": job.restarts,
    }


def job_changes(
    known: dict[str, str], snap: Snapshot, plan: Plan, starts: Mapping[str, StartRecord]
) -> tuple[list[Row], list[Row]]:
    """Inserts and updates of the ``jobs`` rows for this snapshot (see the module docstring).

    ``known`` maps the ids of the jobs the store has as ``queued`` or ``running`` to that
    state; it is updated in place to the new states (ended jobs leave it).
    """
    planned = plan.by_job()
    ended = {e.job_id: e for e in snap.ended}
    inserts: list[Row] = []
    updates: list[Row] = []
    seen: set[str] = set()
    for job in snap.queued:
        seen.add(job.id)
        a = planned.get(job.id)
        values: Row = {
            "id": job.id,
            "last_seen": snap.time,
            "planned_start": a.start if a else None,
            "planned_nodes": _join(a.nodes) if a else None,
            "held_by": job.held_by,
            "restarts": job.restarts,
        }
        state = known.get(job.id)
        if state is None:
            inserts.append(new_job_values(job, snap.time) | values | {"state": "queued"})
        elif state == "running":
            # Requeued by the RMS (a node failed, an operator requeued it): queued again.
            values |= {"state": "queued", "started": None, "started_by": None, "nodes": None}
            updates.append(values)
        else:
            updates.append(values)
        known[job.id] = "queued"
    for rj in snap.running:
        seen.add(rj.job.id)
        state = known.get(rj.job.id)
        if state == "running":
            continue
        values = {
            "id": rj.job.id,
            "state": "running",
            "last_seen": snap.time,
            "started": rj.start,
            "nodes": _join(rj.nodes),
            "started_by": "wattsched" if rj.job.id in starts else "rms",
            "held_by": None,
            "planned_start": None,
            "planned_nodes": None,
        }
        if state is None:
            inserts.append(new_job_values(rj.job, snap.time) | values)
        else:
            updates.append(values)
        known[rj.job.id] = "running"
    for jid in [j for j in known if j not in seen]:
        was = known.pop(jid)
        ours = starts.get(jid)
        end = ended.get(jid)
        if end is not None:
            state = end.state
        elif was == "running" or ours is not None:
            state = "finished"
        else:
            state = "cancelled"
        values = {
            "id": jid,
            "state": state,
            "finished": end.end if end is not None and end.end else snap.time,
            "planned_start": None,
            "planned_nodes": None,
            "held_by": None,
        }
        if was == "queued" and ours is not None:
            # Started by us and ended between two snapshots: the journal knows where and when.
            values |= {"started": ours.time, "nodes": _join(ours.nodes), "started_by": "wattsched"}
        updates.append(values)
    return inserts, updates
