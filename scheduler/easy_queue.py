"""EASY's queue kept across cycles: the eligible jobs in submit order with their totals,
walltimes and kinds as arrays, and the compiled scan of the backfill over them.

Atlas-like replays keep about 400 jobs waiting; looking at each in Python at every cycle (its
vector, its pooled total against what is free, its kind against the kinds that failed since the
last start) was most of the replay. :class:`EasyQueue` brings the order and the arrays from one
snapshot's queue to the next by the jobs that left and those appended
(:func:`~wattsched.scheduler.tuple_diff.left_and_appended`; first, the jobs EASY noted it
started, checked by one tuple comparison: a quarter of the cost then): the order stays the
submit order (:func:`~wattsched.scheduler.dispatcher.submit_order`) when no appended job was
submitted before the last kept one, else it is made afresh. :class:`BackfillScan` finds the
next job worth trying by one compiled scan (:func:`~wattsched.scheduler.fit_kernels.next_try`).
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence

import numpy as np

from wattsched.scheduler.dispatcher import submit_order
from wattsched.scheduler.fit_kernels import first_pooled, next_try
from wattsched.scheduler.model import Job, PowerCap
from wattsched.scheduler.node_arrays import BoolArray, IntArray
from wattsched.scheduler.tuple_diff import left_and_appended

_SMALL = 48
"""Queues up to this long are ordered afresh (a sort of a few jobs costs less than bringing
the order forward, even by the noted starts: 5.2 against 6.4 us a cycle on KTH-SP2)."""
_SHORT = 48
"""Scans of up to this many jobs run in Python over the rows when the table is not made (it
costs more than they do)."""
_NO_STEPS: IntArray = np.zeros(0, dtype=np.int64)
_MAX_FAILED = 1 << 22
"""The largest table of failed kinds a scan allocates (kinds x sides x cap windows); past it
the scan marks no kind failed and every fitting job is tried (the same decisions, slower)."""


class EasyQueue:
    """The eligible (not held) queued jobs in submit order, with a row per job in ``table``:
    total need (RESOURCES order), walltime and kind (an id of the job's shape, unit power, rule
    and exclusivity: what decides, with its side of the shadow time and its cap, whether a
    backfill fails as another job did)."""

    def __init__(self) -> None:
        self.jobs: list[Job] = []
        self.ids: list[str] = []
        self.rows: list[list[int]] = []
        """Per job in order: total need (4 columns, RESOURCES order), walltime, kind id."""
        self._table: IntArray | None = None
        self._kinds: dict[tuple[object, ...], int] = {}
        self.kind_keys: list[tuple[object, ...]] = []
        """Each kind id's key: (unit in RESOURCES order, units, unit power, rule, exclusive)."""
        self._row_of: dict[str, tuple[Job, list[int]]] = {}
        """Each job's row, by id (with the job object it was made from)."""
        self._of: tuple[Job, ...] | None = None
        self.rebuilds = 0
        self._failed: BoolArray = np.zeros(0, dtype=np.bool_)
        self._dirty = False
        self.started: list[int] = []
        """Positions in :attr:`jobs` of the jobs the last plan started (its dispatcher notes
        them; the next :meth:`sync` tries the queue less them first)."""
        self.params: IntArray = np.zeros(8, dtype=np.int64)
        """Scratch for a scan's figures (:func:`~wattsched.scheduler.fit_kernels.next_try`)."""

    def failed_table(self, size: int) -> BoolArray:
        """A table of ``size`` flags, all False (kept and reused: a scan clears what it set,
        and what a scan cut short left set is cleared here)."""
        t = self._failed
        if len(t) < size:
            t = self._failed = np.zeros(max(size, 2 * len(t)), dtype=np.bool_)
        elif self._dirty:
            t[:] = False
        self._dirty = True
        return t

    def clean(self) -> None:
        """The last scan's table is all False again."""
        self._dirty = False

    @property
    def kinds(self) -> int:
        """How many kind ids there are (ids are never reused)."""
        return len(self._kinds)

    def sync(self, queued: tuple[Job, ...]) -> None:
        """Bring the order and the arrays to this snapshot's queue."""
        started, self.started = self.started, []
        if queued is self._of:
            return
        last = self._of
        diff: tuple[list[int], Sequence[Job]] | None = None
        if last is not None and len(queued) > _SMALL:
            diff = self._less_started(last, queued, started) or self._positions(
                left_and_appended(last, queued, 8 + len(last) // 4)
            )
        if diff is None or not self._apply(*diff):
            self._rebuild(queued)
        self._of = queued

    def _positions(
        self, diff: tuple[list[Job], Sequence[Job]] | None
    ) -> tuple[list[int], Sequence[Job]] | None:
        """A difference's jobs that left as their positions in the kept order (held jobs are
        not kept); None when one is not there (ids listed twice: make the order afresh)."""
        if diff is None:
            return None
        try:
            return [self.ids.index(j.id) for j in diff[0] if not j.held], diff[1]
        except ValueError:
            return None

    def _less_started(
        self, last: tuple[Job, ...], queued: tuple[Job, ...], started: list[int]
    ) -> tuple[list[int], tuple[Job, ...]] | None:
        """``(left, appended)``, the positions that left and the jobs new, when ``queued`` is
        ``last`` less the jobs at the ``started`` positions of the kept order, then new ones
        (what the simulated cluster does between two cycles), checked by one tuple comparison
        (items compared by identity first, at C speed; the ends by identity only, so a tuple
        of objects made anew is not taken: in between, a job equal in every field would be
        kept as the earlier object, the same frozen job); None otherwise. The positions are
        the kept order's, so this applies only while that order is the tuple's there (no held
        job; else the checks fail)."""
        jobs = self.jobs
        if not started or len(jobs) != len(last) or any(last[p] is not jobs[p] for p in started):
            return None
        pos = sorted(set(started))
        kept: tuple[Job, ...] = ()
        a = 0
        for p in pos:
            kept += last[a:p]
            a = p + 1
        kept += last[a:]
        k = len(kept)
        if k > len(queued) or (k and (queued[0] is not kept[0] or queued[k - 1] is not kept[-1])):
            return None  # a rebuilt tuple (a real RMS makes every object anew) fails here
        if queued[:k] != kept:
            return None
        return pos, queued[k:]

    def _rebuild(self, queued: tuple[Job, ...]) -> None:
        self.rebuilds += 1
        self.jobs = submit_order(queued)
        self.ids = [j.id for j in self.jobs]
        self.rows = self._rows(self.jobs)
        self._table = None  # made from the rows when a long scan needs it
        if len(self._row_of) > 2 * len(queued) + 64:  # forget the jobs gone
            self._row_of = {j.id: self._row_of[j.id] for j in self.jobs}

    @property
    def table_if_made(self) -> IntArray | None:
        """:attr:`table` if it is made (long queues), else None."""
        return self._table

    @property
    def table(self) -> IntArray:
        """:attr:`rows` as an array (n x 6)."""
        if self._table is None:
            self._table = np.array(self.rows, dtype=np.int64).reshape(len(self.rows), 6)
        return self._table

    def _apply(self, pos: list[int], appended: Sequence[Job]) -> bool:
        """Drop the jobs at positions ``pos`` of the kept order, append the new ones; False
        when the new ones do not all come after the kept ones in submit order (then the
        caller rebuilds)."""
        # ``ids`` is a new list whenever it changes (EASY's memo keeps the last one); ``jobs``
        # and the table are the caller's for one cycle only. A table not made yet is made
        # from the lists when a scan needs it.
        rows = self._table
        new = [j for j in appended if not j.held]
        if not pos and not new:
            return True
        ids = self.ids.copy()
        jobs = self.jobs
        lists = self.rows
        pieces = [] if rows is None else [rows]
        if pos:
            pos.sort()
            row_of = self._row_of
            for p in reversed(pos):
                row_of.pop(ids[p], None)  # gone: its row is made again if it comes back
                del jobs[p]
                del ids[p]
                del lists[p]
            if rows is not None:
                pieces, a = [], 0
                for p in pos:  # the table's rows between the positions: one copy below
                    pieces.append(rows[a:p])
                    a = p + 1
                pieces.append(rows[a:])
        if new:
            if jobs and min(j.submit for j in new) < jobs[-1].submit:
                return False
            new = submit_order(new)
            jobs.extend(new)
            ids.extend(j.id for j in new)
            more = self._rows(new)
            lists.extend(more)
            if rows is not None:
                pieces.append(np.array(more, dtype=np.int64).reshape(len(more), 6))
        self.ids = ids
        self._table = None if rows is None else np.concatenate(pieces)
        return True

    def _rows(self, jobs: list[Job]) -> list[list[int]]:
        """Per job: its total need (4 columns), walltime and kind id."""
        get = self._row_of.get
        # The kept rows (one comprehension: the common case); a job new or made anew, its own.
        return [c[1] if (c := get(j.id)) is not None and c[0] is j else self._row(j) for j in jobs]

    def _row(self, j: Job) -> list[int]:
        """A job's row, made and kept."""
        kinds = self._kinds
        key = (j.unit.as_tuple(), j.units, j.unit_power_w, j.placement, j.exclusive)
        kind = kinds.get(key)
        if kind is None:
            kind = kinds[key] = len(kinds)
            self.kind_keys.append(key)
        row = [*(a * j.units for a in key[0]), j.walltime, kind]
        self._row_of[j.id] = (j, row)
        return row

    def first_fitting(self, lo: int, free: list[int]) -> int:
        """The first position from ``lo`` whose total fits in ``free`` pooled (``len`` when
        none)."""
        rows = self.rows
        if len(rows) - lo <= _SHORT and self._table is None:  # a few jobs, no table made
            f0, f1, f2, f3 = free
            for p in range(lo, len(rows)):
                r = rows[p]
                if r[0] <= f0 and r[1] <= f1 and r[2] <= f2 and r[3] <= f3:
                    return p
            return len(rows)
        return int(first_pooled(lo, self.table[:, :4], np.array(free, dtype=np.int64)))


class BackfillScan:
    """One backfill's walk over an :class:`EasyQueue`: the next job that fits pooled and whose
    kind (with its side of the shadow time, and its cap window when the cap is limited) has
    not failed since the last start."""

    def __init__(self, queue: EasyQueue, cap: PowerCap, now: int, shadow: int | None) -> None:
        self.queue = queue
        # The lowest cap over [now, now + walltime) depends on how many steps fall inside:
        # jobs of one kind and side with the same count share it (a finer key than the cap's
        # value: it only ever tries more).
        after: list[int] = []
        if cap.limited and len(cap.steps) > 1:
            times = [t for t, _ in cap.steps]
            after = times[bisect.bisect_right(times, now) :]
        self.after = np.array(after, dtype=np.int64) if after else _NO_STEPS
        self.after_l = after
        size = 2 * max(queue.kinds, 1) * (len(after) + 1)
        self.marks = size <= _MAX_FAILED
        self.failed = queue.failed_table(size if self.marks else 2)
        self._marked: list[int] = []
        self.params = queue.params
        self.figures = (now, -1 if shadow is None else shadow, shadow is not None, self.marks)
        self._armed = False
        """Whether :attr:`params` holds this scan's figures (written before the first kernel
        call only: a short queue is scanned in Python)."""

    def next(self, lo: int, free: list[int]) -> tuple[int, int]:
        """``(position, key)`` of the next job from ``lo`` worth trying (position ``len`` when
        none); ``free`` is the pooled free now."""
        q = self.queue
        if len(q.rows) - lo <= _SHORT and q._table is None:  # a few jobs, no table made
            return next_try_py(lo, q.rows, free, self.figures, self.failed, self.after_l)
        p = self.params
        if not self._armed:
            p[4], p[5], p[6], p[7] = self.figures
            self._armed = True
        p[0], p[1], p[2], p[3] = free
        pos, key = next_try(lo, q.table, p, self.failed, self.after)
        return int(pos), int(key)

    def failed_as(self, key: int) -> None:
        """The job of ``key`` failed: skip its like until the next start."""
        if self.marks:
            self.failed[key] = True
            self._marked.append(key)

    def started(self) -> None:
        """A job started: every kind may fit again."""
        failed = self.failed
        for key in self._marked:
            failed[key] = False
        self._marked.clear()

    def done(self) -> None:
        """The scan is over: its table is clean for the next one."""
        self.started()
        self.queue.clean()


def next_try_py(
    lo: int,
    rows: list[list[int]],
    free: list[int],
    figures: tuple[int, int, bool, bool],
    failed: BoolArray,
    after: list[int],
) -> tuple[int, int]:
    """:func:`~wattsched.scheduler.fit_kernels.next_try` in Python over the rows as lists
    (``figures``: now, shadow, whether there is a reservation, whether keys are marked;
    the pooled free given as ``free``): for a few rows, cheaper than making the table and
    calling the kernel."""
    f0, f1, f2, f3 = free
    now, shadow, has_res, marks = figures
    stride = len(after) + 1
    for p in range(lo, len(rows)):
        r = rows[p]
        if r[0] > f0 or r[1] > f1 or r[2] > f2 or r[3] > f3:
            continue
        if not marks:
            return p, 0
        end = now + r[4]
        short = 1 if (not has_res or end <= shadow) else 0
        key = (r[5] * 2 + short) * stride + (bisect.bisect_left(after, end) if after else 0)
        if not failed[key]:
            return p, key
    return len(rows), 0
