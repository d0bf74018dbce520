"""High availability: one daemon leads (acts), another stands by and takes over.

Two ``wattsched serve --standby`` on one PostgreSQL: the first takes the store's lock
(:mod:`.instance_lock`, a session advisory lock the server drops when the holder's connection
dies, kill -9 included) and leads; the other serves the API read-only (mutations get 503,
``/ready`` says standby) and tries the lock every cycle period. When it gets it, it takes over
(:func:`take_over`): it reloads from the journal, the one source of truth, what the leader had
in memory (our last start of each job, the requeues seen), rebuilds an in-memory connector
from the journal (the simulated cluster), settles the actions the dead leader left pending
against the RMS (:func:`reconcile_pending`: a start whose job runs is done, others failed),
and starts its cycle. A job is never started twice across a failover: the journal says which
starts happened and the RMS says which jobs run.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from sqlalchemy import Engine

from wattsched.daemon.instance_lock import InstanceLock, InstanceLockHeld, acquire_instance_lock
from wattsched.daemon.job_records import StartRecord
from wattsched.daemon.journal import RECONCILED
from wattsched.daemon.runtime_history import seed_predictor

if TYPE_CHECKING:
    from wattsched.daemon.loop import Service

log = logging.getLogger(__name__)


def reconcile_pending(service: Service) -> int:
    """Settle the actions left ``pending`` by a crash against the RMS; how many there were.

    A start whose job now runs is ``done``; one whose job is still pending (or gone) is
    ``failed``, so that a later cycle may start it once. Other kinds cannot be checked and are
    ``failed`` with an explanation. Until it has succeeded once, every cycle calls it before
    acting.
    """
    store = service.store
    pending = store.pending_actions()
    if not pending:
        return 0
    snap = service.connector.snapshot()
    running = {rj.job.id for rj in snap.running}
    queued = {j.id for j in snap.queued}
    for a in pending:
        if a.kind == "start" and a.job_id in running:
            store.finish_action(a.id, "done", result="reconciled: running after restart")
            nodes = tuple((a.nodes or "").split(","))
            service._starts[a.job_id] = StartRecord(a.incarnation, a.time, nodes)
            service.counters.action("start", "reconciled_done")
        elif a.kind == "start" and a.job_id in queued:
            store.finish_action(
                a.id, "failed", error=f"{RECONCILED} interrupted, job still pending"
            )
            service.counters.action("start", "reconciled_failed")
        else:
            store.finish_action(a.id, "failed", error=f"{RECONCILED} interrupted, outcome unknown")
            service.counters.action(a.kind, "reconciled_failed")
    log.warning("reconciled %d pending action(s) after a restart", len(pending))
    return len(pending)


def take_over(service: Service) -> None:
    """Make a standby service the leader (see the module docstring); its cycle is not
    started here."""
    store = service.store
    store.reset_caches()
    service._starts = store.start_records()
    service._requeues = store.requeues_seen()
    service._gave_up, service._gated = set(), set()
    if service.rebuild_connector is not None:
        service.connector = service.rebuild_connector()
    service.apply_saved_settings()
    seed_predictor(service.dispatcher, store, fresh=True)
    service._reconciled = False
    service.role = "leader"
    try:
        service.reconcile()
    except Exception as exc:  # the first cycle reconciles again before acting
        log.error("could not reconcile pending actions at the take-over: %s", exc)
    log.warning("took over as leader")


class Standby:
    """Tries the store's lock every ``period_s``; on success calls ``on_lead(lock)`` once."""

    def __init__(
        self, engine: Engine, on_lead: Callable[[InstanceLock], None], period_s: float
    ) -> None:
        self.engine = engine
        self.on_lead = on_lead
        self.period_s = max(0.05, period_s)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="wattsched-standby", daemon=True)

    def start(self) -> None:
        """Begin trying."""
        self._thread.start()

    def stop(self) -> None:
        """Stop trying (a lock already taken stays taken)."""
        self._stop.set()
        self._thread.join(10)

    def _run(self) -> None:
        while not self._stop.is_set():
            t0 = time.monotonic()
            try:
                lock = acquire_instance_lock(self.engine)
            except InstanceLockHeld:
                self._stop.wait(max(0.0, self.period_s - (time.monotonic() - t0)))
                continue
            except Exception as exc:  # the database is away: try again next period
                log.warning("standby: cannot try the leader lock: %s", exc)
                self._stop.wait(self.period_s)
                continue
            self.on_lead(lock)
            return
