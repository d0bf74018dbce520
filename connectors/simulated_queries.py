"""What a replay loop asks the simulated cluster between cycles: counts and views of its
workload, queue and pools (:class:`ReplayQueries`, a base of
:class:`~wattsched.connectors.simulated.SimulatedCluster`, which holds the state)."""

from __future__ import annotations

from wattsched.connectors.simulated_failures import PowerFailures
from wattsched.connectors.simulated_queue import WaitingQueue
from wattsched.scheduler.model import Job, RunningJob


class ReplayQueries:
    """Read-only questions about a simulated cluster's workload and queue."""

    _arrivals: list[Job]
    _next_arrival: int
    _queue: dict[str, Job]
    _running: dict[str, RunningJob]
    _pool: list[int]
    _waiting: WaitingQueue
    _failures: PowerFailures | None
    changes: int

    @property
    def arrivals_seen(self) -> int:
        """How many jobs have arrived so far (an index into the workload in submit order)."""
        return self._next_arrival

    def only_arrivals_since(self, changes: int, seen: int) -> list[Job] | None:
        """The jobs arrived since ``(changes, arrivals_seen)`` if nothing else changed since
        (cap steps are the caller's to check), else None."""
        if changes != self.changes:
            return None
        return self._arrivals[seen : self._next_arrival]

    def nothing_fits(self) -> bool:
        """True when jobs wait and none of them (held or not) needs at most the free cores of
        the nodes a job may start on now, pooled: then no start can be accepted now."""
        least = self._waiting.least_cores()
        return least is not None and least > self._pool[0]

    def free_usable(self) -> list[int]:
        """Free resources pooled over the nodes a job may start on now (on and available)."""
        return list(self._pool)

    @property
    def power_failures(self) -> int:
        """Power commands that failed (``power_failure_p``; they change nothing)."""
        return self._failures.count if self._failures is not None else 0

    @property
    def pending_arrivals(self) -> int:
        """How many jobs are still to arrive."""
        return len(self._arrivals) - self._next_arrival

    @property
    def workload_size(self) -> int:
        """How many jobs the workload holds."""
        return len(self._arrivals)

    @property
    def queued(self) -> int:
        """How many jobs wait."""
        return len(self._queue)

    @property
    def running(self) -> int:
        """How many jobs run."""
        return len(self._running)

    def unfinished(self) -> list[Job]:
        """Jobs that never started (still queued at the end)."""
        return list(self._queue.values())
