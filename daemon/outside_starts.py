"""Jobs that started outside wattsched's plan although they waited behind its gate.

With ``deploy/slurm/job_submit.lua`` only an operator (or wattsched) can release a gated job.
A gated job seen queued (``held_by = "wattsched"``) at one cycle and running at the next,
without a start of ours in the journal, was therefore started by someone else: an operator's
``scontrol release``, or a gate that does not hold (a ``job_submit.lua`` without its
``slurm_job_modify``). The cycle journals it (an action of kind ``outside_start``), warns,
and counts it; its power is in the estimate already (it runs in the snapshot).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from wattsched.daemon.job_records import StartRecord
from wattsched.daemon.store import Store
from wattsched.scheduler.model import Snapshot

log = logging.getLogger(__name__)


def gated_now(snap: Snapshot) -> set[str]:
    """The queued jobs that wait behind wattsched's gate."""
    return {j.id for j in snap.queued if j.held_by == "wattsched"}


def record_outside_starts(
    store: Store,
    snap: Snapshot,
    gated_before: set[str],
    starts: Mapping[str, StartRecord],
    cycle_id: int | None,
) -> list[str]:
    """Journal and log the gated jobs of the last cycle that now run without our start."""
    found = []
    for rj in snap.running:
        jid = rj.job.id
        if jid in gated_before and jid not in starts:
            aid = store.begin_action(
                "outside_start", time_=snap.time, job_id=jid, nodes=rj.nodes, cycle_id=cycle_id
            )
            store.finish_action(aid, "done", result="started outside wattsched's plan")
            log.warning(
                "job %s runs on %s but wattsched did not start it (it waited behind the gate): "
                "an operator released it, or the gate does not hold", jid, ",".join(rj.nodes),
            )  # fmt: skip
            found.append(jid)
    return found
