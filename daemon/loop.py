"""The service loop: observe, plan, record, and (in enforce mode) act with a journal.

:class:`Service` runs :func:`wattsched.daemon.controller.run_cycle` with ``act=False`` and then
carries out the starts itself, journaling each one in the store *before* (``pending``) and
*after* (``done``/``failed``) the RMS call. At start-up the pending actions left by a crash are
reconciled against the RMS snapshot (job running: done; still pending: failed, so that a later
cycle may start it): a job is never started twice. :class:`CycleTimer` runs the cycle
every ``cycle_seconds`` on the monotonic clock (one at a time, missed runs coalesced);
:meth:`Service.run_now` runs it on demand. A failing RMS call is logged, recorded, and retried
at the next cycles up to ``max_start_attempts``; the loop and the API keep running.

The cap, the power estimate, the summary and the counters are in
:mod:`wattsched.daemon.cycle_state`; the wiring from the settings in
:mod:`wattsched.daemon.wiring`.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections import Counter
from collections.abc import Callable, Set

from sqlalchemy.exc import SQLAlchemyError

from wattsched.connectors.base import Connector, ConnectorError
from wattsched.daemon.acting import start_planned
from wattsched.daemon.api.schemas import PowerDecisionOut
from wattsched.daemon.controller import run_cycle
from wattsched.daemon.cooling_report import CoolingReporter, summary_fields
from wattsched.daemon.cycle_state import (
    Counters,
    CycleSummary,
    estimate_power,
    planned_mean_wait,
    saved_power,
)
from wattsched.daemon.cycle_timer import CycleTimer
from wattsched.daemon.job_records import StartRecord
from wattsched.daemon.outside_starts import gated_now, record_outside_starts
from wattsched.daemon.power_cycle import PowerControl, power_step
from wattsched.daemon.readiness import readiness_problem
from wattsched.daemon.requeue import RequeuePolicy, handle_requeues
from wattsched.daemon.store import CycleRecord, Store
from wattsched.powerctl.policy import PowerPolicy
from wattsched.scheduler import fit_kernels
from wattsched.scheduler.dispatcher import Dispatcher
from wattsched.scheduler.model import Plan, PowerCap, PowerState, Snapshot

log = logging.getLogger(__name__)

Clock = Callable[[], float]


class StoreFileError(RuntimeError):
    """The store's SQLite file was deleted or replaced under the running daemon."""


class Service:
    """The daemon: the cycle, its journal, its schedule, and the state the API reads."""

    def __init__(
        self,
        connector: Connector,
        dispatcher: Dispatcher,
        store: Store,
        *,
        mode: str = "advise",
        cap: PowerCap | None = None,
        cycle_seconds: float = 30.0,
        max_start_attempts: int = 3,
        requeue: RequeuePolicy = "replan",
        power_policy: PowerPolicy | None = None,
        power: PowerControl | None = None,
        cooling: CoolingReporter | None = None,
        before_cycle: Callable[[], None] | None = None,
        clock: Clock = time.time,
        timer: Clock = time.perf_counter,
    ) -> None:
        self.connector = connector
        self.cap: PowerCap = cap or PowerCap.unlimited()
        """The power cap the dispatcher plans under (an input of every cycle)."""
        self.configured: dict[str, object] = {"mode": mode, "cap": self.cap}
        """The values of the file and environment (what a reset of the API's returns to)."""
        self.sources: dict[str, str] = {}
        """Where each setting comes from: file, environment, default or api."""
        self.configured_sources: dict[str, str] = {}
        """Where each setting came from before any API change (what a reset returns to)."""
        self.dispatcher = dispatcher
        self.store = store
        self.mode = mode
        self.cycle_seconds = cycle_seconds
        self.max_start_attempts = max_start_attempts
        self.requeue: RequeuePolicy = requeue
        self.cooling = cooling
        self.power = power or PowerControl.through_connector(connector, power_policy)
        """The node power policy, driver and state book (the policy may be none)."""
        self.before_cycle = before_cycle
        self.clock = clock
        self.timer = timer
        self.counters = Counters()
        self.last: CycleSummary | None = None
        self.cycle_lock = threading.Lock()
        """Held while a cycle runs: a manual command takes it, not to act beside a cycle."""
        # Our last successful start of each job (never two starts of one incarnation).
        self._starts: dict[str, StartRecord] = store.start_records()
        self._requeues: set[tuple[str, int]] = store.requeues_seen()
        self._gave_up: set[str] = set()
        self._gated: set[str] = set()
        self.last_power_decision: PowerDecisionOut | None = None
        """The power policy's decision at the last cycle (``/status``; advise: not sent)."""
        self.last_plan: Plan | None = None
        """The plan of the last successful cycle (the safety rules of a manual command)."""
        """Jobs seen waiting behind the gate at the last cycle (outside starts)."""
        self._reconciled = False
        self.role = "leader"
        """``leader`` acts; ``standby`` (high availability) serves the API read-only and
        waits for the store's lock (:mod:`wattsched.daemon.leader`)."""
        self.rebuild_connector: Callable[[], Connector] | None = None
        """Set for a connector that lives in memory (simulated): rebuilt at a take-over."""
        self._timer: CycleTimer | None = None
        self.monotonic: Clock = time.monotonic
        self.last_ok_mono: float | None = None
        """Monotonic time of the last successful cycle (readiness)."""
        self.failures_in_row = 0
        """Cycles failed since the last success (readiness)."""

    # -- configuration changes (API) ------------------------------------------------------

    def set_power_cap(self, watts: float | None, by: str | None = None) -> None:
        """A constant cap from now on (None: no cap); ``by``: kept in the store and journaled
        (it comes back after a restart), else only for this process."""
        self.cap = PowerCap.constant(watts) if watts is not None else PowerCap.unlimited()
        if by is not None:
            self.store.save_setting("power_cap_w", watts, by, time_=self._cluster_time())
            self.sources["power_cap_w"] = "api"
        log.info("power cap set to %s W%s", watts, f" by {by}" if by else "")

    def set_mode(self, mode: str, by: str | None = None) -> None:
        """Switch between ``advise`` and ``enforce`` (``by``: as :meth:`set_power_cap`)."""
        if mode not in ("advise", "enforce"):
            raise ValueError(f"mode {mode!r} must be advise or enforce")
        self.mode = mode
        if by is not None:
            self.store.save_setting("mode", mode, by, time_=self._cluster_time())
            self.sources["mode"] = "api"
        log.info("mode set to %s%s", mode, f" by {by}" if by else "")

    def apply_saved_settings(self) -> list[str]:
        """Take back the settings changed over the API before a restart; their keys."""
        saved = self.store.settings()
        if "mode" in saved:
            self.mode = str(saved["mode"][0])
            self.sources["mode"] = "api"
        if "power_cap_w" in saved:
            watts = saved["power_cap_w"][0]
            self.cap = (
                PowerCap.constant(float(str(watts))) if watts is not None else PowerCap.unlimited()
            )
            self.sources["power_cap_w"] = "api"
        for key, (value, _, by) in saved.items():
            log.info("%s = %s (set over the API by %s)", key, value, by)
        return list(saved)

    def reset_settings(self, by: str) -> list[str]:
        """Forget the API's settings: back to the file's and the environment's values."""
        keys = self.store.reset_settings(by, time_=self._cluster_time())
        self.mode = str(self.configured["mode"])
        cap = self.configured["cap"]
        assert isinstance(cap, PowerCap)
        self.cap = cap
        for key in keys:
            self.sources[key] = self.configured_sources.get(key, "default")
        return keys

    def _cluster_time(self) -> int:
        return self.last.time if self.last is not None and self.last.time is not None else 0

    # -- start-up ----------------------------------------------------------------------------

    def reconcile(self) -> int:
        """Settle the actions a crash left ``pending`` (:func:`.leader.reconcile_pending`)."""
        from wattsched.daemon.leader import reconcile_pending

        n = reconcile_pending(self)
        self._reconciled = True
        return n

    # -- the cycle -------------------------------------------------------------------------------

    def run_now(self) -> CycleSummary:
        """Run one cycle now (waits for a running one to finish first)."""
        with self.cycle_lock:
            return self._cycle()

    def _scheduled(self) -> float | None:
        """One timed cycle; returns the seconds until the plan's next planned start (the
        timer runs the next cycle then if that is before the period), or None."""
        if not self.cycle_lock.acquire(blocking=False):
            return None  # a cycle asked over the API is running; this one is coalesced into it
        try:
            self._cycle()
        except Exception:
            log.exception("cycle failed")
            self.counters.error("cycle")
        finally:
            self.cycle_lock.release()
        plan = self.last_plan
        if plan is None or plan.wake_at is None:
            return None
        return max(1.0, plan.wake_at - self.clock())  # at least 1 s: never a busy loop

    def _cycle(self) -> CycleSummary:
        wall0 = self.clock()
        t0 = self.timer()
        mode = self.mode
        problem = self.store.file_problem()
        if problem:
            # Nothing is journaled into a file no one will read again: nothing is done.
            log.error("%s: no cycle runs until wattsched is restarted on a sound store", problem)
            return self._failed(wall0, t0, mode, "store", StoreFileError(problem))
        try:
            if not self._reconciled:
                # Before acting again, settle what a crash left pending (a failed RMS call
                # here fails the cycle; the next one tries again).
                self.reconcile()
            if self.before_cycle is not None:
                self.before_cycle()
            result = run_cycle(
                self.connector, self.dispatcher, act=False, timer=self.timer, cap=self.cap,
                observe=self.power.observe,
            )  # fmt: skip
        except ConnectorError as exc:
            return self._failed(wall0, t0, mode, "rms", exc)
        except Exception as exc:
            log.exception("planning failed")
            return self._failed(wall0, t0, mode, "plan", exc)
        snap, plan = result.snapshot, result.plan
        self.last_plan = plan
        power_w, nodes_on = estimate_power(snap)
        self.counters.integrate(snap.time, power_w, saved_power(snap))
        wait = planned_mean_wait(snap, plan)
        try:
            cycle_id = self.store.record_cycle(
                CycleRecord(
                    snapshot=snap,
                    plan=plan,
                    started_at=wall0,
                    duration_s=0.0,
                    plan_seconds=result.plan_seconds,
                    mode=mode,
                    it_power_w=power_w,
                    nodes_on=nodes_on,
                    planned_mean_wait_s=wait,
                ),
                self._starts,
            )
            keep_back, hold_failures = handle_requeues(
                self.connector, self.store, snap, plan, self._starts, self._requeues,
                mode=mode, policy=self.requeue, cycle_id=cycle_id,
            )  # fmt: skip
            for _ in range(hold_failures):
                self.counters.action("hold", "failed")
            for _ in record_outside_starts(self.store, snap, self._gated, self._starts, cycle_id):
                self.counters.error("outside_start")
            self._gated = gated_now(snap)
            started = self._enforce(snap, plan, cycle_id, keep_back) if mode == "enforce" else 0
            if self.power.policy is not None:
                self._power(snap, plan, cycle_id, act=mode == "enforce")
            duration = self.timer() - t0
            self.store.set_cycle_duration(cycle_id, duration)
        except SQLAlchemyError as exc:
            # The database failed: nothing more is started (no journal, no action); what was
            # journaled pending is reconciled by the next cycle, the caches are reloaded.
            self.store.reset_caches()
            self._reconciled = False
            return self._failed(wall0, t0, mode, "store", exc)
        self.counters.cycle(duration)
        cap_w = snap.cap.at(snap.time)
        nodes_by_state = Counter(n.state.value for n in snap.nodes)
        summary = CycleSummary(
            cycle_id=cycle_id,
            ok=True,
            started_at=wall0,
            duration_s=duration,
            time=snap.time,
            power_w=power_w,
            cap_w=cap_w if math.isfinite(cap_w) else None,
            nodes_by_state={s.value: nodes_by_state.get(s.value, 0) for s in PowerState},
            jobs_by_state={"queued": len(snap.queued), "running": len(snap.running)},
            planned=len(plan.assignments),
            planned_mean_wait_s=wait,
            solver_status=plan.stats.status,
            started=started,
            **summary_fields(self.cooling, snap, power_w),
        )
        self.last = summary
        self.last_ok_mono = self.monotonic()
        self.failures_in_row = 0
        return summary

    def _failed(
        self, wall0: float, t0: float, mode: str, kind: str, exc: Exception
    ) -> CycleSummary:
        duration = self.timer() - t0
        msg = f"{type(exc).__name__}: {exc}"
        log.warning("cycle failed (%s): %s", kind, msg)
        self.failures_in_row += 1
        self.counters.error(kind)
        self.counters.cycle(duration)
        try:
            cycle_id: int | None = self.store.record_failed_cycle(wall0, duration, mode, msg)
        except Exception:
            log.exception("could not record the failed cycle")
            self.counters.error("store")
            cycle_id = None
        prev = self.last
        summary = CycleSummary(
            cycle_id=cycle_id,
            ok=False,
            started_at=wall0,
            duration_s=duration,
            time=prev.time if prev else None,
            error=msg,
            power_w=prev.power_w if prev else None,
            cap_w=prev.cap_w if prev else None,
            nodes_by_state=prev.nodes_by_state if prev else {},
            jobs_by_state=prev.jobs_by_state if prev else {},
            planned=prev.planned if prev else 0,
            planned_mean_wait_s=prev.planned_mean_wait_s if prev else None,
            solver_status=prev.solver_status if prev else None,
        )
        self.last = summary
        return summary

    def _power(self, snap: Snapshot, plan: Plan, cycle_id: int, *, act: bool) -> None:
        self.last_power_decision = power_step(
            self.power, self.connector, self.store, self.counters, snap, plan,
            cycle_id=cycle_id, act=act,
        )  # fmt: skip

    def _enforce(
        self, snap: Snapshot, plan: Plan, cycle_id: int, keep_back: Set[str] = frozenset()
    ) -> int:
        done = start_planned(
            self.connector, self.store, snap, plan, self._starts,
            max_start_attempts=self.max_start_attempts, keep_back=keep_back, cycle_id=cycle_id,
        )  # fmt: skip
        for jid in done.refused_twice:
            log.error("job %s pending again after our start; not started twice", jid)
            self.counters.error("restart_refused")
        for jid in done.gave_up:
            if jid not in self._gave_up:
                log.error("giving up starting job %s after repeated refusals", jid)
                self._gave_up.add(jid)
                self.counters.error("start_gave_up")
        for _ in done.errors:
            self.counters.action("start", "failed")
            self.counters.error("start")
        for _ in done.started:
            self.counters.action("start", "done")
        return len(done.started)

    # -- the schedule --------------------------------------------------------------------------

    def start(self) -> None:
        """Run the cycle every ``cycle_seconds`` (monotonic clock) in a thread; first now.

        The mapper's (and the power policy's) compiled kernels are loaded first, so that the
        first cycle is not the one that pays numba's set-up."""
        fit_kernels.warm()
        if self.power.policy is not None:
            self.power.policy.warm()  # HGFS's fuzzy kernels
        self._timer = CycleTimer(self._scheduled, self.cycle_seconds, monotonic=self.monotonic)
        self._timer.start()

    def stop(self) -> None:
        """Stop the period, wait for a running cycle, close the connector."""
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        with self.cycle_lock:
            self.connector.close()

    def readiness(self, stale_periods: float = 3.0, max_failures: int = 3) -> str:
        """Why the daemon is not ready ("" when it is): see :func:`readiness_problem`."""
        return readiness_problem(self, stale_periods, max_failures)
