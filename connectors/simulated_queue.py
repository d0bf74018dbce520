"""The simulated cluster's waiting jobs, kept in the forms its hot paths read.

A dict by id (lookups, and a read-only live view for the snapshots' index), the same jobs in
arrival order as a list (a snapshot's tuple is copied from a list four times faster than from
a dict's values) with each job's arrival number ascending along it (a start or a hold finds
its job's place by bisection), and a heap of the jobs' total cores for
:meth:`WaitingQueue.least_cores` (jobs that left are dropped when they come to the top).
"""

from __future__ import annotations

import heapq
from bisect import bisect_left
from types import MappingProxyType

from wattsched.scheduler.model import Job


class WaitingQueue:
    """Jobs waiting in a simulated cluster, in arrival order."""

    __slots__ = ("_cores", "_list", "_seq", "_seqs", "_tuple", "jobs", "view")

    def __init__(self) -> None:
        self.jobs: dict[str, Job] = {}
        """The waiting jobs by id, in arrival order."""
        self.view = MappingProxyType(self.jobs)
        """A read-only live view of :attr:`jobs` (no copy per cycle)."""
        self._list: list[Job] = []
        self._seqs: list[int] = []
        self._seq: dict[str, int] = {}
        self._cores: list[tuple[int, int, str]] = []
        self._tuple: tuple[Job, ...] | None = ()

    def add(self, job: Job, seq: int) -> None:
        """Append an arriving job; ``seq`` is its arrival number (larger than any before)."""
        self.jobs[job.id] = job
        self._list.append(job)
        self._seqs.append(seq)
        self._seq[job.id] = seq
        heapq.heappush(self._cores, (job.unit.cores * job.units, seq, job.id))
        self._tuple = None

    def remove(self, job_id: str) -> None:
        """Take a waiting job out (it started)."""
        del self.jobs[job_id]
        i = bisect_left(self._seqs, self._seq.pop(job_id))
        del self._list[i]
        del self._seqs[i]
        self._tuple = None

    def replace(self, job: Job) -> None:
        """Put ``job`` in the place of the waiting job with its id (a hold or a release)."""
        self.jobs[job.id] = self._list[bisect_left(self._seqs, self._seq[job.id])] = job
        self._tuple = None

    def as_tuple(self) -> tuple[Job, ...]:
        """The waiting jobs in arrival order (the same tuple until the queue changes)."""
        if self._tuple is None:
            self._tuple = tuple(self._list)
        return self._tuple

    def least_cores(self) -> int | None:
        """The fewest total cores any waiting job (held or not) needs; None when none waits."""
        heap, jobs = self._cores, self.jobs
        while heap and heap[0][2] not in jobs:
            heapq.heappop(heap)  # a job that started since it arrived
        return heap[0][0] if heap else None
