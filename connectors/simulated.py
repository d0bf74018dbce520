"""The simulated cluster: a discrete-event cluster behind the connector interface.

It replays a workload (jobs with their real runtimes) on a set of nodes on a virtual clock:
jobs arrive at their submit time (or all at the start, offline), run their real runtime
(killed at their walltime), and node power states change with boot and shutdown delays. It
keeps its own books, independent of the dispatchers': a start that overfills a node, names a
node that is off or a job that is not pending is refused with the same typed errors a real
RMS connector raises. It records every job's start and end, and the IT power over time, from
which :mod:`wattsched.scheduler.metrics` computes the figures.

Deterministic: it never reads the wall clock, and its only random draws (failed power
commands, when asked: :mod:`~wattsched.connectors.simulated_failures`) are seeded.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import replace

from wattsched.connectors.base import (
    Capability,
    Connector,
    StartResult,
    UnknownJobError,
)
from wattsched.connectors.simulated_books import (
    Books,
    JobRecord,
    PowerSample,
    book_end,
    start_books,
)
from wattsched.connectors.simulated_energy import PowerRecord
from wattsched.connectors.simulated_failures import PowerFailures
from wattsched.connectors.simulated_nodes import NodeVariants, figures
from wattsched.connectors.simulated_power import NodePower
from wattsched.connectors.simulated_queries import ReplayQueries
from wattsched.connectors.simulated_queue import WaitingQueue
from wattsched.connectors.simulated_records import running_job, snapshot, start_result
from wattsched.scheduler.model import Job, Node, PowerCap, PowerState, RunningJob, Snapshot

_END, _POWER_DONE, _ARRIVAL, _CAP, _WAKE = 0, 1, 2, 3, 4
"""Event kinds, in the order events of one instant are handled (plain ints: the heap
compares them millions of times in a replay)."""


class SimulatedCluster(NodePower, ReplayQueries, PowerRecord, Connector):
    """A discrete-event cluster replaying ``jobs`` on ``nodes`` under ``cap``.

    ``offline=True`` submits every job at the start time (the papers' instance experiments).
    The clock starts at the first submit time (or ``start_time``).
    """

    name = "simulated"

    def __init__(
        self,
        nodes: Sequence[Node],
        jobs: Sequence[Job],
        cap: PowerCap | None = None,
        *,
        offline: bool = False,
        start_time: int | None = None,
        record_power: bool = True,
        power_failure_p: float = 0.0,
        seed: int = 0,
    ) -> None:
        if not nodes:
            raise ValueError("a simulated cluster needs at least one node")
        self.cap = cap or PowerCap.unlimited()
        ordered = sorted(jobs, key=lambda j: j.submit)
        t0 = start_time if start_time is not None else (ordered[0].submit if ordered else 0)
        if offline:
            ordered = [replace(j, submit=t0) for j in ordered]
        self.now = t0
        self.start_time = t0
        self._nodes: list[Node] = list(nodes)
        self._node_tuple: tuple[Node, ...] | None = tuple(self._nodes)
        """The nodes as a snapshot shows them (None: made again, a node changed)."""
        self._index = {n.name: i for i, n in enumerate(self._nodes)}
        self._books = Books(self._nodes)
        self._arrivals = ordered
        self._next_arrival = 0
        self._waiting = WaitingQueue()
        self._queue = self._waiting.jobs
        self._running: dict[str, RunningJob] = {}
        self._running_tuple: tuple[RunningJob, ...] | None = ()
        self.records: dict[str, JobRecord] = {}
        self._events: list[tuple[int, int, int, str]] = []
        self._seq = 0
        self._figures = [figures(n) for n in self._nodes]
        """Each node's static draw and flags (kept with the node by ``_set_node``)."""
        self._static_w = sum(n.power.state_watts(n.state) for n in self._nodes)
        self._nodes_on = sum(1 for n in self._nodes if n.state is PowerState.ON)
        self._busy_w = 0.0
        self.record_power = record_power
        self.samples: list[PowerSample] = []
        self.energy_j = 0.0
        self.peak_power_w: float = 0.0
        self.cap_violation_s = 0
        self.power_commands = 0
        self._failures = PowerFailures(power_failure_p, seed) if power_failure_p else None
        self.power_log: list[tuple[int, str, bool]] = []
        """Every accepted power command: ``(time, node, on)``."""
        self.power_saved_j = 0.0
        """Energy not drawn because nodes were not ON, against every node ON and idle."""
        self._all_idle_w = sum(n.power.idle_w for n in self._nodes)
        self._wakes: set[int] = set()
        self._owned: dict[str, int] = {}
        """Each owner's pending wake-up (:meth:`replace_wake`)."""
        self._variants = NodeVariants()
        """Each node's objects by power state, reused by switches."""
        self._last_t = t0
        self.changes = 0
        """Counts starts, ends, node changes, holds, releases (not arrivals, cap steps)."""
        self.queue_edits = 0
        """Counts holds and releases: queued jobs replaced in place (``Snapshot.queue_edits``)."""
        self._pool = self._books.pooled_free()  # kept by starts, ends, switches
        self._schedule_cap_changes()
        self._admit_arrivals()
        self._sample()

    # -- the connector interface -------------------------------------------------------------

    @property
    def capabilities(self) -> frozenset[Capability]:
        return frozenset(Capability)

    def snapshot(self) -> Snapshot:
        if self._running_tuple is None:
            self._running_tuple = tuple(self._running.values())
        if self._node_tuple is None:
            self._node_tuple = tuple(self._nodes)
        return snapshot(
            self.now,
            self._node_tuple,
            self._running_tuple,
            self._waiting.as_tuple(),
            self.cap,
            self._waiting.view,
            self.queue_edits,
        )

    def start(self, job_id: str, nodes: Sequence[str]) -> StartResult:
        job = self._queue.get(job_id)
        if job is None:
            raise UnknownJobError(f"job {job_id} is not pending", job_id=job_id)
        if job.held:
            raise UnknownJobError(f"job {job_id} is held", job_id=job_id)
        watts = start_books(job, nodes, self._index, self._nodes, self._books)
        n, now, walltime = job.units, self.now, job.walltime
        pool, u = self._pool, job.unit  # the free resources pooled, RESOURCES order
        pool[0] -= u.cores * n
        pool[1] -= u.mem_mb * n
        pool[2] -= u.gpus * n
        pool[3] -= u.mics * n
        if now != self._last_t:  # else nothing to integrate (a start follows a step at ``now``)
            self._account(now)
        self._busy_w += watts
        self._waiting.remove(job_id)
        self.changes += 1
        runtime = job.runtime if job.runtime is not None else walltime
        killed = runtime > walltime
        end = now + (runtime if runtime < walltime else walltime)
        on = tuple(nodes)
        self._running[job_id] = running_job(job, now, on, now + walltime)
        self._running_tuple = None
        rec = self.records[job_id]
        rec.start, rec.end, rec.nodes, rec.power_w, rec.killed = now, end, on, watts, killed
        self._seq += 1
        heapq.heappush(self._events, (end, self._seq, _END, job_id))
        self._sample()
        return start_result(job_id, on)

    def hold(self, job_id: str, *, operator: bool = False) -> None:
        self._set_held(job_id, True)

    def release(self, job_id: str) -> None:
        self._set_held(job_id, False)

    def _set_held(self, job_id: str, held: bool) -> None:
        job = self._queue.get(job_id)
        if job is None:
            raise UnknownJobError(f"job {job_id} is not pending", job_id=job_id)
        self._waiting.replace(replace(job, held=held))
        self.changes += 1
        self.queue_edits += 1

    # -- the virtual clock ---------------------------------------------------------------------

    def wake_at(self, t: int) -> None:
        """Make :meth:`advance` stop at time ``t`` even if nothing else happens then.

        A no-op event for time-driven decisions (a power policy's idle timeout). Like cap steps,
        wake-ups alone are not work: they never prolong a replay whose jobs are all done.
        Times not after the clock, or already asked for, are ignored.
        """
        if t > self.now and t not in self._wakes:
            self._wakes.add(t)
            self._push(t, _WAKE, "")

    def replace_wake(self, owner: str, t: int | None) -> None:
        """Like :meth:`wake_at`, but ``owner``'s latest request replaces its earlier one (None
        withdraws it): a policy asks to be asked again at the time its latest decision named,
        not at every time some earlier decision named. Times not after the clock withdraw."""
        if t is not None and t <= self.now:
            t = None
        if self._owned.get(owner) == t:
            return
        if t is None:
            self._owned.pop(owner, None)
        else:
            self._owned[owner] = t
            self._push(t, _WAKE, owner)

    def next_event_time(self) -> int | None:
        """When something happens next (an arrival, a job end, a power transition, a cap step)."""
        events = self._events
        while events and events[0][2] == _WAKE and events[0][3]:
            _, _, _, owner = events[0]
            if self._owned.get(owner) == events[0][0]:
                break
            heapq.heappop(events)  # a wake-up replaced or withdrawn by its owner: not an event
        t = events[0][0] if events else None
        if self._next_arrival < len(self._arrivals):
            a = self._arrivals[self._next_arrival].submit
            if t is None or a < t:
                t = a
        return t

    def has_pending_work(self) -> bool:
        """True while jobs wait, run or are still to arrive."""
        return bool(self._queue or self._running or self._next_arrival < len(self._arrivals))

    def advance(self) -> bool:
        """Move the clock to the next event time and apply every event then.

        Returns False when nothing is left to happen. Cap steps alone do not count as work:
        once no job waits, runs or is to arrive, the replay is over.
        """
        while True:
            t = self.next_event_time()
            if t is None:
                return False
            if not (
                self._queue or self._running or self._next_arrival < len(self._arrivals)
            ) and all(e[2] == _CAP or e[2] == _WAKE for e in self._events):
                return False
            arrived, kinds = self._step(t)
            if self._is_event(arrived, kinds):
                return True

    def advance_while_idle(self) -> tuple[bool, int, int]:
        """:meth:`advance`, and again while no job waits or none fits (:meth:`nothing_fits`):
        the steps a replay skips by that rule (:mod:`wattsched.daemon.replay`), without a turn
        of its loop each. Returns whether something is left to happen, how many steps were
        advanced past, and the arrivals seen at the last of them (-1: none)."""
        skipped, seen = 0, -1
        while self.advance():
            if self._queue and not self.nothing_fits():
                return True, skipped, seen
            skipped += 1
            seen = self._next_arrival
        return False, skipped, seen

    def _is_event(self, arrived: bool, kinds: set[int]) -> bool:
        """Whether a step that saw ``arrived`` and event ``kinds`` calls for a cycle (a kind
        other than a cap step: more kinds than the cap step among them)."""
        return bool(arrived or len(kinds) > (_CAP in kinds) or self._queue)

    def advance_to(self, t: int) -> None:
        """Apply every event up to time ``t`` and set the clock to ``t`` (wall-clock driving:
        the daemon's demo advances the virtual clock by a fixed step each cycle)."""
        while True:
            nxt = self.next_event_time()
            if nxt is None or nxt > t:
                break
            self._step(nxt)
        if t > self.now:
            self._account(t)
            self.now = t
            self._sample()

    def _step(self, t: int) -> tuple[bool, set[int]]:
        """Move the clock to ``t`` and apply every event due then; (jobs arrived, event kinds)."""
        self._account(t)
        self.now = t
        kinds: set[int] = set()
        while self._events and self._events[0][0] <= t:
            _, _, kind, key = heapq.heappop(self._events)
            if kind == _WAKE and key:
                if self._owned.get(key) != t:
                    continue  # replaced or withdrawn by its owner's later request
                del self._owned[key]
            kinds.add(kind)
            if kind == _END:
                self._finish(key)
            elif kind == _POWER_DONE:
                self._power_done(key)
            elif kind == _WAKE and not key:
                self._wakes.discard(t)
        k, arrivals = self._next_arrival, self._arrivals
        arrived = k < len(arrivals) and arrivals[k].submit <= t and self._admit_arrivals()
        self._sample()
        return arrived, kinds

    # -- internals -----------------------------------------------------------------------------

    def _push(self, t: int, kind: int, key: str) -> None:
        self._seq += 1
        heapq.heappush(self._events, (t, self._seq, kind, key))

    def _schedule_cap_changes(self) -> None:
        t: int | None = self.now
        while t is not None:
            t = self.cap.next_change(t)
            if t is not None:
                self._push(t, _CAP, "")

    def _admit_arrivals(self) -> bool:
        arrived = False
        arrivals = self._arrivals
        while (
            self._next_arrival < len(arrivals) and arrivals[self._next_arrival].submit <= self.now
        ):
            job = arrivals[self._next_arrival]
            self._next_arrival += 1
            if job.id in self.records:
                raise ValueError(f"job id {job.id!r} appears twice in the workload")
            self._waiting.add(job, self._next_arrival)
            self.records[job.id] = JobRecord(job, job.submit)
            arrived = True
        return arrived

    def _finish(self, job_id: str) -> None:
        rj = self._running.pop(job_id)
        self._running_tuple = None
        self.changes += 1
        self._busy_w = book_end(rj.job, self._books, self._pool, self._busy_w)
        if not self._running:
            self._busy_w = 0.0  # no float drift once idle
