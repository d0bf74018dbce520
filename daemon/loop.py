"""The service loop: observe, plan, record, and (in enforce mode) act with a journal.

:class:`Service` runs :func:`wattsched.daemon.controller.run_cycle` with ``act=False`` and then
carries out the starts itself, journaling each one in the store *before* (``pending``) and
*after* (``done``/``failed``) the RMS call. At start-up the pending actions left by a crash are
reconciled against the RMS snapshot (job running: done; still pending: failed, so that a later
cycle may start it): a job is never started twice. :class:`CycleTimer` runs the cycle
every ``cycle_seconds`` on the monotonic clock (one at a time, missed runs coalesced);
:meth:`Service.run_now` runs it on demand. A failing RMS call is logged, recorded, and retried
at the next cycles up to ``max_start_attempts``; the loop and the API keep running.

The daemon decides the power cap (the RMS knows none): the connector's snapshots are seen
through :class:`CapView`, which puts the configured cap (or the one set over the API) on them.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence, Set
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.exc import SQLAlchemyError

from wattsched.connectors.base import Capability, Connector, ConnectorError, StartResult
from wattsched.connectors.simulated import SimulatedCluster
from wattsched.daemon.config import Settings
from wattsched.daemon.controller import run_cycle
from wattsched.daemon.cycle_timer import CycleTimer
from wattsched.daemon.job_records import StartRecord
from wattsched.daemon.requeue import RequeuePolicy, handle_requeues
from wattsched.daemon.store import RECONCILED, CycleRecord, Store, check_schema, make_engine
from wattsched.scheduler import dispatcher as dispatchers
from wattsched.scheduler.dispatcher import Dispatcher
from wattsched.scheduler.model import Plan, PowerCap, PowerState, Snapshot

log = logging.getLogger(__name__)

Clock = Callable[[], float]

CYCLE_BUCKETS: tuple[float, ...] = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0)
"""Upper bounds (seconds) of the cycle-duration histogram."""

JOURNAL_BATCH = 64
"""Starts journaled per commit (pending before the RMS calls, outcomes after)."""


class CapView(Connector):
    """A connector whose snapshots carry the daemon's power cap; everything else delegates."""

    def __init__(self, inner: Connector, cap: PowerCap) -> None:
        self.inner = inner
        self.cap = cap
        self.name = inner.name

    @property
    def capabilities(self) -> frozenset[Capability]:
        return self.inner.capabilities

    def snapshot(self) -> Snapshot:
        return dataclasses.replace(self.inner.snapshot(), cap=self.cap)

    def start(self, job_id: str, nodes: Sequence[str]) -> StartResult:
        return self.inner.start(job_id, nodes)

    def hold(self, job_id: str, *, operator: bool = False) -> None:
        self.inner.hold(job_id, operator=operator)

    def release(self, job_id: str) -> None:
        self.inner.release(job_id)

    def power(self, node: str, on: bool) -> None:
        self.inner.power(node, on)

    def close(self) -> None:
        self.inner.close()


def estimate_power(snap: Snapshot) -> tuple[float, int]:
    """The IT power of the snapshot from the node power models, and the number of nodes on."""
    nodes = {n.name: n for n in snap.nodes}
    watts = sum(n.power.state_watts(n.state) for n in snap.nodes)
    busy: set[str] = set()
    for rj in snap.running:
        for name in rj.nodes:
            node = nodes.get(name)
            if node is None:
                continue
            busy.add(name)
            unit_w = rj.job.unit_power_w
            watts += unit_w if unit_w is not None else node.power.unit_watts(rj.job.unit)
    watts += sum(nodes[n].power.first_core_w for n in busy)
    on = sum(1 for n in snap.nodes if n.state is PowerState.ON)
    return watts, on


def planned_mean_wait(snap: Snapshot, plan: Plan) -> float | None:
    """Mean of (planned start - submit) over the queued jobs the plan places (None: none)."""
    submit = {j.id: j.submit for j in snap.queued}
    waits = [a.start - submit[a.job_id] for a in plan.assignments if a.job_id in submit]
    return sum(waits) / len(waits) if waits else None


@dataclass(frozen=True, slots=True)
class CycleSummary:
    """The last cycle as the API and the metrics serve it (replaced whole, never mutated)."""

    cycle_id: int | None
    ok: bool
    started_at: float
    duration_s: float
    time: int | None = None
    error: str | None = None
    power_w: float | None = None
    cap_w: float | None = None
    nodes_by_state: dict[str, int] = field(default_factory=dict)
    jobs_by_state: dict[str, int] = field(default_factory=dict)
    planned: int = 0
    planned_mean_wait_s: float | None = None
    solver_status: str | None = None
    started: int = 0


class Counters:
    """The loop's counters (actions, errors, energy, cycle durations), read by the metrics."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.actions: Counter[tuple[str, str]] = Counter()
        self.errors: Counter[str] = Counter()
        self.energy_j = 0.0
        self.cycle_buckets = [0] * len(CYCLE_BUCKETS)
        self.cycle_count = 0
        self.cycle_sum = 0.0
        self.cycles_total = 0

    def action(self, kind: str, result: str) -> None:
        """Count an action outcome."""
        with self._lock:
            self.actions[(kind, result)] += 1

    def error(self, kind: str) -> None:
        """Count an error."""
        with self._lock:
            self.errors[kind] += 1

    def cycle(self, seconds: float) -> None:
        """Observe one cycle's duration."""
        with self._lock:
            self.cycle_count += 1
            self.cycle_sum += seconds
            for i, bound in enumerate(CYCLE_BUCKETS):
                if seconds <= bound:
                    self.cycle_buckets[i] += 1

    def add_energy(self, joules: float) -> None:
        """Add to the energy counter."""
        with self._lock:
            self.energy_j += joules

    def copy(self) -> dict[str, Any]:
        """A consistent copy of every counter."""
        with self._lock:
            return {
                "actions": dict(self.actions),
                "errors": dict(self.errors),
                "energy_j": self.energy_j,
                "cycle_buckets": list(self.cycle_buckets),
                "cycle_count": self.cycle_count,
                "cycle_sum": self.cycle_sum,
            }


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
        before_cycle: Callable[[], None] | None = None,
        clock: Clock = time.time,
        timer: Clock = time.perf_counter,
    ) -> None:
        self.view = CapView(connector, cap or PowerCap.unlimited())
        self.dispatcher = dispatcher
        self.store = store
        self.mode = mode
        self.cycle_seconds = cycle_seconds
        self.max_start_attempts = max_start_attempts
        self.requeue: RequeuePolicy = requeue
        self.before_cycle = before_cycle
        self.clock = clock
        self.timer = timer
        self.counters = Counters()
        self.last: CycleSummary | None = None
        self._lock = threading.Lock()
        # Our last successful start of each job (never two starts of one incarnation).
        self._starts: dict[str, StartRecord] = store.start_records()
        self._requeues: set[tuple[str, int]] = store.requeues_seen()
        self._gave_up: set[str] = set()
        self._prev_power: tuple[int, float] | None = None
        self._reconciled = False
        self._timer: CycleTimer | None = None
        self.monotonic: Clock = time.monotonic
        self.last_ok_mono: float | None = None
        """Monotonic time of the last successful cycle (readiness)."""
        self.failures_in_row = 0
        """Cycles failed since the last success (readiness)."""

    # -- configuration changes (API) ------------------------------------------------------

    @property
    def cap(self) -> PowerCap:
        """The power cap the dispatcher plans under."""
        return self.view.cap

    def set_power_cap(self, watts: float | None) -> None:
        """A constant cap from now on (None: no cap)."""
        self.view.cap = PowerCap.constant(watts) if watts is not None else PowerCap.unlimited()
        log.info("power cap set to %s W", watts)

    def set_mode(self, mode: str) -> None:
        """Switch between ``advise`` and ``enforce``."""
        if mode not in ("advise", "enforce"):
            raise ValueError(f"mode {mode!r} must be advise or enforce")
        self.mode = mode
        log.info("mode set to %s", mode)

    # -- start-up ----------------------------------------------------------------------------

    def reconcile(self) -> int:
        """Settle the actions left ``pending`` by a crash against the RMS; how many there were.

        A start whose job now runs is ``done``; one whose job is still pending (or gone) is
        ``failed``, so that a later cycle may start it once. Other kinds cannot be checked and
        are ``failed`` with an explanation. Until it has succeeded once, every cycle calls it
        before acting.
        """
        pending = self.store.pending_actions()
        if not pending:
            self._reconciled = True
            return 0
        snap = self.view.snapshot()
        running = {rj.job.id for rj in snap.running}
        queued = {j.id for j in snap.queued}
        for a in pending:
            if a.kind == "start" and a.job_id in running:
                self.store.finish_action(a.id, "done", result="reconciled: running after restart")
                nodes = tuple((a.nodes or "").split(","))
                self._starts[a.job_id] = StartRecord(a.incarnation, a.time, nodes)
                self.counters.action("start", "reconciled_done")
            elif a.kind == "start" and a.job_id in queued:
                self.store.finish_action(
                    a.id, "failed", error=f"{RECONCILED} interrupted, job still pending"
                )
                self.counters.action("start", "reconciled_failed")
            else:
                self.store.finish_action(
                    a.id, "failed", error=f"{RECONCILED} interrupted, outcome unknown"
                )
                self.counters.action(a.kind, "reconciled_failed")
        log.warning("reconciled %d pending action(s) after a restart", len(pending))
        self._reconciled = True
        return len(pending)

    # -- the cycle -------------------------------------------------------------------------------

    def run_now(self) -> CycleSummary:
        """Run one cycle now (waits for a running one to finish first)."""
        with self._lock:
            return self._cycle()

    def _scheduled(self) -> None:
        if not self._lock.acquire(blocking=False):
            return  # a cycle asked over the API is running; this one is coalesced into it
        try:
            self._cycle()
        except Exception:
            log.exception("cycle failed")
            self.counters.error("cycle")
        finally:
            self._lock.release()

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
            result = run_cycle(self.view, self.dispatcher, act=False, timer=self.timer)
        except ConnectorError as exc:
            return self._failed(wall0, t0, mode, "rms", exc)
        except Exception as exc:
            log.exception("planning failed")
            return self._failed(wall0, t0, mode, "plan", exc)
        snap, plan = result.snapshot, result.plan
        power_w, nodes_on = estimate_power(snap)
        if self._prev_power is not None and snap.time > self._prev_power[0]:
            self.counters.add_energy(self._prev_power[1] * (snap.time - self._prev_power[0]))
        self._prev_power = (snap.time, power_w)
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
                self.view, self.store, snap, plan, self._starts, self._requeues,
                mode=mode, policy=self.requeue, cycle_id=cycle_id,
            )  # fmt: skip
            for _ in range(hold_failures):
                self.counters.action("hold", "failed")
            started = self._enforce(snap, plan, cycle_id, keep_back) if mode == "enforce" else 0
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

    def _enforce(
        self, snap: Snapshot, plan: Plan, cycle_id: int, keep_back: Set[str] = frozenset()
    ) -> int:
        # Only jobs the RMS reports pending and not held by their owner or an operator (DESIGN
        # safety rules), and not kept back this cycle (a requeue under requeue = "hold").
        queued = {j.id: j for j in snap.queued if not j.held and j.id not in keep_back}
        todo = [a for a in plan.starts_now() if a.job_id in queued]
        failures = self.store.failed_start_counts(a.job_id for a in todo)
        ready = []
        for a in todo:
            prev = self._starts.get(a.job_id)
            if prev is not None and prev.incarnation >= queued[a.job_id].restarts:
                # Pending again in the incarnation we started (not a requeue): never twice.
                log.error("job %s pending again after our start; not started twice", a.job_id)
                self.counters.error("restart_refused")
                continue
            if failures.get(a.job_id, 0) >= self.max_start_attempts:
                if a.job_id not in self._gave_up:
                    log.error(
                        "giving up starting job %s after %d failures", a.job_id, failures[a.job_id]
                    )
                    self._gave_up.add(a.job_id)
                    self.counters.error("start_gave_up")
                continue
            ready.append(a)
        started = 0
        # Journal a batch as pending (one commit) before any of its RMS calls, then record the
        # outcomes (one commit). A crash in between leaves them pending: the restart
        # reconciles them against the RMS, so nothing is lost nor started twice.
        for i in range(0, len(ready), JOURNAL_BATCH):
            batch = ready[i : i + JOURNAL_BATCH]
            ids = self.store.begin_actions(
                [("start", a.job_id, a.nodes) for a in batch],
                time_=snap.time,
                cycle_id=cycle_id,
                incarnations=[queued[a.job_id].restarts for a in batch],
            )
            outcomes: list[tuple[int, str, str | None, str | None]] = []
            try:
                for action_id, a in zip(ids, batch, strict=True):
                    try:
                        self.view.start(a.job_id, a.nodes)
                    except ConnectorError as exc:
                        log.warning(
                            "start of job %s on %s failed: %s", a.job_id, ",".join(a.nodes), exc
                        )
                        outcomes.append((action_id, "failed", None, f"{type(exc).__name__}: {exc}"))
                        self.counters.action("start", "failed")
                        self.counters.error("start")
                        continue
                    outcomes.append((action_id, "done", "started", None))
                    self._starts[a.job_id] = StartRecord(
                        queued[a.job_id].restarts, snap.time, tuple(a.nodes)
                    )
                    self.counters.action("start", "done")
                    started += 1
            finally:
                self.store.finish_actions(outcomes)
        return started

    # -- the schedule --------------------------------------------------------------------------

    def start(self) -> None:
        """Run the cycle every ``cycle_seconds`` (monotonic clock) in a thread; first now."""
        self._timer = CycleTimer(self._scheduled, self.cycle_seconds, monotonic=self.monotonic)
        self._timer.start()

    def stop(self) -> None:
        """Stop the period, wait for a running cycle, close the connector."""
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        with self._lock:
            self.view.close()

    def readiness(self, stale_periods: float = 3.0, max_failures: int = 3) -> str:
        """Why the daemon is not ready ("" when it is): no successful cycle within
        ``stale_periods`` periods (on the monotonic clock), ``max_failures`` cycles failed in
        a row (the RMS or the database), or the store's file replaced or deleted."""
        problem = self.store.file_problem()
        if problem:
            return problem
        if self.failures_in_row >= max_failures:
            error = self.last.error if self.last else ""
            return f"the last {self.failures_in_row} cycles failed: {error}"
        if self.last_ok_mono is None:
            return "no successful cycle yet"
        age = self.monotonic() - self.last_ok_mono
        if age > stale_periods * self.cycle_seconds:
            return f"the last successful cycle is {age:.0f} s old"
        return ""


# -- wiring from the configuration --------------------------------------------------------------


def read_cap(settings: Settings, origin: int) -> PowerCap:
    """The configured cap: constant, a profile file (offsets from ``origin``), or none."""
    if settings.power_cap_w is not None:
        return PowerCap.constant(settings.power_cap_w)
    if settings.power_cap_file is not None:
        from wattsched.connectors.traces.caps import read_power_cap

        return read_power_cap(settings.power_cap_file, origin=origin)
    return PowerCap.unlimited()


def build_simulated(settings: Settings) -> SimulatedCluster:
    """The simulated cluster of the ``[connector]`` table (Eurora or SWF workload)."""
    from wattsched.connectors.traces import eurora

    c = settings.connector
    if c.nodes_file is not None:
        nodes = eurora.read_eurora_nodes(c.nodes_file)
    else:
        from wattsched.connectors.traces import read_system_toml

        assert c.system_file is not None  # guaranteed by the settings' validator
        nodes = list(read_system_toml(c.system_file))
    assert c.trace_file is not None
    if c.trace_format == "eurora":
        queues = eurora.read_queues(c.queues_file) if c.queues_file else {}
        power = (
            eurora.read_power_predictions(c.power_predictions_file)
            if (c.power_predictions_file)
            else None
        )
        jobs = eurora.read_eurora_jobs(c.trace_file, queues=queues, power=power).jobs
    else:
        from wattsched.connectors.traces.swf import read_swf

        cores = max(n.capacity.cores for n in nodes)
        jobs = read_swf(c.trace_file, cores_per_node=cores, nodes=len(nodes)).jobs
    t0 = min((j.submit for j in jobs), default=0)
    return SimulatedCluster(nodes, jobs, read_cap(settings, t0), offline=c.offline)


def restore_simulation(cluster: SimulatedCluster, store: Store) -> int:
    """Replay the journal's successful starts on a fresh simulated cluster (after a restart).

    The simulated cluster lives in the daemon's memory; its state is rebuilt from the store,
    the one source of truth: each journaled start is carried out again at its cluster time,
    then the clock is set to the last cycle's. Returns how many starts were replayed.
    """
    n = 0
    for a in store.done_starts():
        if a.time > cluster.now:
            cluster.advance_to(a.time)
        try:
            cluster.start(str(a.job_id), (a.nodes or "").split(","))
            n += 1
        except ConnectorError as exc:
            log.error("could not replay the start of job %s: %s", a.job_id, exc)
    last = store.last_cycle_time()
    if last is not None and last > cluster.now:
        cluster.advance_to(last)
    return n


def build_service(settings: Settings, *, check: bool = True, clock: Clock = time.time) -> Service:
    """The daemon from its settings: store (schema checked), connector, dispatcher, cap."""
    engine = make_engine(settings.database_url)
    if check:
        check_schema(engine)
    store = Store(engine, clock=clock)
    dispatcher = dispatchers.create(settings.dispatcher, **settings.dispatcher_params)
    before: Callable[[], None] | None = None
    connector: Connector
    if settings.connector.kind == "simulated":
        cluster = build_simulated(settings)
        restore_simulation(cluster, store)
        step = max(1, round(settings.cycle_seconds * settings.connector.speedup))
        first = [True]

        def advance() -> None:
            # Each cycle moves the virtual clock by cycle_seconds x speedup (the first none).
            if first[0]:
                first[0] = False
                return
            cluster.advance_to(cluster.now + step)

        before = advance
        connector = cluster
        origin = cluster.start_time
    else:
        from wattsched.connectors import config as connector_config  # the connectors issue

        connector = connector_config.build_connector(settings.connector.params)
        origin = int(clock())
    service = Service(
        connector,
        dispatcher,
        store,
        mode=settings.mode,
        cap=read_cap(settings, origin),
        cycle_seconds=settings.cycle_seconds,
        max_start_attempts=settings.max_start_attempts,
        requeue=settings.requeue,
        before_cycle=before,
        clock=clock,
    )
    return service
