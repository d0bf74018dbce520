"""A persistent, vectorised view of the waiting queue across control cycles.

Long replays keep thousands of jobs waiting (the Curie sample on 300 nodes queues tens of
thousands); looking at every one of them in Python at every cycle would dominate the run.
:class:`QueueIndex` keeps the queue's requirements as numpy arrays from one cycle to the next
and updates them with the difference only: the jobs the last plan started leave, the jobs
listed after the known ones arrive. It checks that the snapshot agrees (counts, and the very
same job objects at the seams) and rebuilds itself from scratch when it does not, so a
connector that builds new objects at every snapshot (a real RMS) is served correctly, just
without the shortcut.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable

import numpy as np

from wattsched.scheduler.model import Job
from wattsched.scheduler.node_arrays import IntArray
from wattsched.scheduler.pass_kernels import fitting_ranked

KeyFn = Callable[[Job], tuple[float | int | str, ...]]


class QueueIndex:
    """Eligible (not held) queued jobs with their total requirements as one array."""

    def __init__(self, key: KeyFn) -> None:
        self._key = key
        self._jobs: list[Job | None] = []
        self._keys: list[tuple[float | int | str, ...]] = []
        self._pos: dict[str, int] = {}
        self._totals: IntArray = np.zeros((0, 4), dtype=np.int64)
        self._units: IntArray = np.zeros((0, 4), dtype=np.int64)
        self._alive = np.zeros(0, dtype=bool)
        self._shape: IntArray = np.zeros(0, dtype=np.int64)
        self._shape_ids: dict[tuple[object, ...], int] = {}
        """Per index, the id of the job's kind (per-unit need, unit count, placement rule and
        exclusivity, as :attr:`~wattsched.scheduler.node_arrays.JobVec.fit_kind`): ids of one
        index, never reused."""
        self._rank = np.zeros(0, dtype=float)
        """Per index, a float in key order (equal keys: in index order), so that candidates are
        put in key order by one numpy argsort instead of a sort by tuple keys every cycle."""
        self._skeys: list[tuple[float | int | str, ...]] = []
        self._sidx: list[int] = []
        """The alive jobs' keys and indexes, sorted by key then index (ranks are assigned from
        their neighbours here)."""
        self._out: IntArray = np.zeros(0, dtype=np.int64)
        """Scratch for :meth:`candidates` (its answer is a view of it, valid until the next
        call)."""
        self._count = 0
        self._last_tuple: tuple[Job, ...] | None = None
        self._edits: int | None = None
        self.rebuilds = 0

    def __len__(self) -> int:
        return self._count

    def sync(
        self, queued: tuple[Job, ...], started: Iterable[str], edits: int | None = None
    ) -> list[Job]:
        """Bring the index up to date with this snapshot's queue; returns the new jobs (after
        a rebuild, every eligible job).

        ``started`` names the jobs the previous plan started (they should have left).
        ``edits`` is the snapshot's :attr:`~wattsched.scheduler.model.Snapshot.queue_edits`:
        when it moved, a job was replaced in the middle of the queue (held or released), which
        the checks at the queue's ends cannot see, so the index rebuilds.
        """
        if edits != self._edits:
            self._edits = edits
            return self._rebuild(queued)
        if queued is self._last_tuple:
            return []
        for jid in started:
            self._drop(jid)
        n_new = len(queued) - self._count
        ok = 0 <= n_new <= len(queued)
        if ok and self._count:
            # The known jobs must come first, ending with the last one still waiting.
            ok = queued[len(queued) - n_new - 1] is self._last_alive()
        if ok and n_new:
            ok = queued[len(queued) - n_new].id not in self._pos
        if not ok:
            return self._rebuild(queued)
        new = list(queued[len(queued) - n_new :]) if n_new else []
        for job in new:
            self._add(job)
        self._last_tuple = queued
        return [j for j in new if not j.held]

    def fitting(self, free_total: IntArray, free_max: IntArray) -> list[Job]:
        """The eligible jobs that may fit now, in key order: their total need fits in
        ``free_total`` (pooled) and one unit fits in ``free_max`` (the most free on any one
        node, per resource). Necessary conditions only: the mapper decides."""
        jobs = self._jobs
        idx = self.candidates(free_total, free_max).tolist()
        return [j for j in (jobs[i] for i in idx) if j is not None and not j.held]

    def candidates(self, free_total: IntArray, free_max: IntArray) -> IntArray:
        """The indexes of the jobs :meth:`fitting` gives, in the same order, held jobs
        included (:meth:`job` gives each; its ``held`` is the caller's to test): a view of a
        scratch array, valid until the next call. One compiled scan
        (:func:`~wattsched.scheduler.pass_kernels.fitting_ranked`) does the filter and the rank
        order."""
        if not self._count:
            return np.zeros(0, dtype=np.int64)
        if len(self._out) < len(self._alive):
            self._out = np.zeros(len(self._alive), dtype=np.int64)
        k = fitting_ranked(
            self._alive,
            self._totals,
            self._units,
            self._rank,
            len(self._jobs),
            np.asarray(free_total, dtype=np.int64),
            np.asarray(free_max, dtype=np.int64),
            self._out,
        )
        return self._out[:k]

    def job(self, i: int) -> Job:
        """The job at index ``i`` (one of :meth:`candidates`)."""
        job = self._jobs[i]
        assert job is not None
        return job

    @property
    def totals(self) -> IntArray:
        """Per index, the job's total need (pooled, RESOURCES order); read-only use."""
        return self._totals

    @property
    def shapes(self) -> IntArray:
        """Per index, the id of the job's shape; read-only use."""
        return self._shape

    @property
    def shape_count(self) -> int:
        """How many shape ids were given (every id is below it)."""
        return len(self._shape_ids)

    # -- internals -----------------------------------------------------------------------------

    def _last_alive(self) -> Job | None:
        jobs = self._jobs
        while jobs and jobs[-1] is None:
            jobs.pop()
            self._keys.pop()
        return jobs[-1] if jobs else None

    def _rebuild(self, queued: tuple[Job, ...]) -> list[Job]:
        self.rebuilds += 1
        self._jobs = []
        self._keys = []
        self._pos = {}
        self._totals = np.zeros((max(16, 2 * len(queued)), 4), dtype=np.int64)
        self._units = np.zeros_like(self._totals)
        self._alive = np.zeros(len(self._totals), dtype=bool)
        self._shape = np.zeros(len(self._totals), dtype=np.int64)
        self._rank = np.zeros(len(self._totals), dtype=float)
        self._count = 0
        for job in queued:
            self._add(job, ranked=False)
        keys = self._keys
        self._sidx = sorted(range(len(keys)), key=keys.__getitem__)  # stable: ties by index
        self._skeys = [keys[i] for i in self._sidx]
        self._renumber()
        self._last_tuple = queued
        return [j for j in queued if not j.held]

    def _add(self, job: Job, *, ranked: bool = True) -> None:
        i = len(self._jobs)
        if i >= len(self._totals):
            grow = max(16, len(self._totals))
            self._totals = np.vstack([self._totals, np.zeros((grow, 4), dtype=np.int64)])
            self._units = np.vstack([self._units, np.zeros((grow, 4), dtype=np.int64)])
            self._alive = np.concatenate([self._alive, np.zeros(grow, dtype=bool)])
            self._shape = np.concatenate([self._shape, np.zeros(grow, dtype=np.int64)])
            self._rank = np.concatenate([self._rank, np.zeros(grow, dtype=float)])
        self._jobs.append(job)
        key = self._key(job)
        self._keys.append(key)
        if ranked:
            self._insert_rank(i, key)
        self._pos[job.id] = i
        u = job.unit
        k = job.units
        self._totals[i] = (u.cores * k, u.mem_mb * k, u.gpus * k, u.mics * k)
        self._units[i] = (u.cores, u.mem_mb, u.gpus, u.mics)
        shape = (*u.as_tuple(), k, job.placement, job.exclusive)  # JobVec.fit_kind's parts
        sid = self._shape_ids.get(shape)
        if sid is None:
            sid = self._shape_ids[shape] = len(self._shape_ids)
        self._shape[i] = sid
        self._alive[i] = True
        self._count += 1

    def _drop(self, job_id: str) -> None:
        i = self._pos.pop(job_id, None)
        if i is None:
            return
        key = self._keys[i]
        p = bisect.bisect_left(self._skeys, key)
        while self._sidx[p] != i:  # among equal keys, by index
            p += 1
        del self._skeys[p], self._sidx[p]
        self._jobs[i] = None
        self._alive[i] = False
        self._count -= 1
        if len(self._jobs) > 1024 and self._count < len(self._jobs) // 4:
            self._compact()

    def _insert_rank(self, i: int, key: tuple[float | int | str, ...]) -> None:
        """Rank index ``i`` (the newest, so the last among equal keys) between its neighbours
        in key order; every rank is renumbered when no float lies between them."""
        p = bisect.bisect_right(self._skeys, key)
        for _ in range(2):
            lo = float(self._rank[self._sidx[p - 1]]) if p > 0 else None
            hi = float(self._rank[self._sidx[p]]) if p < len(self._sidx) else None
            if lo is None:
                r = 0.0 if hi is None else hi - 1.0
            elif hi is None:
                r = lo + 1.0
            else:
                r = (lo + hi) / 2
                if not lo < r < hi:
                    self._renumber()
                    continue
            break
        self._skeys.insert(p, key)
        self._sidx.insert(p, i)
        self._rank[i] = r

    def _renumber(self) -> None:
        """Ranks 0, 1, 2, ... in key order."""
        if self._sidx:
            self._rank[np.array(self._sidx, dtype=np.int64)] = np.arange(
                len(self._sidx), dtype=float
            )

    def _compact(self) -> None:
        keep = [j for j in self._jobs if j is not None]
        last_tuple = self._last_tuple
        self._rebuild(tuple(keep))
        self.rebuilds -= 1
        self._last_tuple = last_tuple
