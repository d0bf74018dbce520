"""The running jobs booked on a :class:`~wattsched.scheduler.mapper.StateCache`'s kept state,
brought from one snapshot to the next by the jobs that started and ended.

When the connector keeps its objects (the simulated cluster), the running tuple is the last
one less the jobs that ended, then the jobs that started: :func:`~wattsched.scheduler.
tuple_diff.left_and_appended` finds them by identity at C speed, and only they are released
and booked. Any other difference (a job restarted elsewhere, objects built anew at every
snapshot by a real RMS, an unknown job) is applied by job id, as before.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from wattsched.scheduler.model import Job, RunningJob
from wattsched.scheduler.node_arrays import IntArray, JobVec, NodeArrays
from wattsched.scheduler.tuple_diff import left_and_appended

if TYPE_CHECKING:
    from wattsched.scheduler.mapper import ClusterState

Placed = tuple[JobVec, IntArray, IntArray]

NO_END = np.iinfo(np.int64).min
""":meth:`RunningBook.node_ends` of a node whose job's end is not known (none booked, or one
of its jobs released)."""


def placement_of(arrays: NodeArrays, nodes: Sequence[str]) -> tuple[IntArray, IntArray]:
    """Node indexes and unit counts of an assignment given as one node name per unit."""
    counts = Counter(nodes)  # in the order the nodes are named first, as a loop would
    index = arrays.index
    idx = np.fromiter((index[name] for name in counts), dtype=np.int64, count=len(counts))
    cnt = np.fromiter(counts.values(), dtype=np.int64, count=len(counts))
    return idx, cnt


def _where(rj: RunningJob) -> tuple[int, tuple[str, ...]]:
    return rj.start, rj.nodes


class RunningBook:
    """Which running jobs are booked on a state, and where (by job id)."""

    def __init__(self) -> None:
        self.placed: dict[str, Placed] = {}
        """Job id -> (vector, node indexes, counts) of the jobs booked."""
        self.planned: dict[str, tuple[tuple[str, ...], IntArray, IntArray]] = {}
        """Starts the dispatcher planned since the last :meth:`sync` (see
        :meth:`~wattsched.scheduler.mapper.StateCache.planned`)."""
        self._of: tuple[RunningJob, ...] | None = None
        self._seen: dict[str, RunningJob] = {}
        self._ends: IntArray | None = None
        """:meth:`node_ends` once asked (kept from then on)."""

    def node_ends(self, n: int) -> IntArray:
        """Per node (``n`` of them), the end estimate of the last job booked there, or
        :data:`NO_END` once a job there was released until the next is booked: on a node with
        one unit booked and an end, that unit's job's end (EASY's exact pool pass). Kept by
        every :meth:`sync` after the first call (read-only use)."""
        ends = self._ends
        if ends is None or len(ends) != n:
            ends = self._ends = np.full(n, NO_END, dtype=np.int64)
            for jid, rj in self._seen.items():
                ends[self.placed[jid][1]] = rj.end_estimate
        return ends

    def sync(
        self,
        base: ClusterState,
        running: tuple[RunningJob, ...],
        vec: Callable[[Job], JobVec],
        forget: Callable[[str], None],
    ) -> None:
        """Book and release on ``base`` so that it holds exactly ``running``. ``vec`` gives a
        job's vector; ``forget`` is told each job id that ended (not restarted)."""
        if running is self._of:
            return
        last = self._of
        diff = None if last is None else left_and_appended(last, running, 8 + len(last) // 4)
        if diff is None or not self._apply_diff(base, diff[0], diff[1], vec, forget):
            self._apply_by_id(base, running, vec, forget)
        self._of = running
        self.planned.clear()

    def _apply_diff(
        self,
        base: ClusterState,
        left: list[RunningJob],
        appended: Sequence[RunningJob],
        vec: Callable[[Job], JobVec],
        forget: Callable[[str], None],
    ) -> bool:
        """Release the jobs that left and book those appended; False, with nothing changed,
        when that is not a plain set of starts and ends of known jobs (then by job id)."""
        seen = self._seen
        ends = self._ends
        gone: dict[str, RunningJob] = {}
        for rj in left:
            jid = rj.job.id
            if seen.get(jid) is not rj or jid in gone:
                return False
            gone[jid] = rj
        came: dict[str, RunningJob] = {}
        for rj in appended:
            jid = rj.job.id
            if jid in came or (jid in seen and jid not in gone):
                return False
            came[jid] = rj
        for jid, rj in gone.items():
            again = came.get(jid)
            if again is not None and _where(again) == _where(rj):
                del came[jid]  # a new object for the same run: stays booked
                seen[jid] = again
                if ends is not None:
                    ends[self.placed[jid][1]] = again.end_estimate
                continue
            placed = self.placed.pop(jid)
            base.release(*placed)
            if ends is not None:
                ends[placed[1]] = NO_END
            del seen[jid]
            if again is None:
                forget(jid)
        for jid, rj in came.items():
            self._book(base, jid, rj, vec)
            seen[jid] = rj
        return True

    def _apply_by_id(
        self,
        base: ClusterState,
        running: tuple[RunningJob, ...],
        vec: Callable[[Job], JobVec],
        forget: Callable[[str], None],
    ) -> None:
        """Bring the booked jobs to ``running`` by job id (any difference)."""
        now = {rj.job.id: rj for rj in running}
        seen = self._seen
        # A job id seen before but now running from another start or on other nodes (requeued
        # and restarted) is released and booked again where it runs now.
        moved = {
            jid
            for jid, rj in now.items()
            if jid in seen and seen[jid] is not rj and _where(seen[jid]) != _where(rj)
        }
        ends = self._ends
        for jid in (self.placed.keys() - now.keys()) | moved:
            placed = self.placed.pop(jid)
            base.release(*placed)
            if ends is not None:
                ends[placed[1]] = NO_END
            if jid not in moved:
                forget(jid)
        for jid in now.keys() - self.placed.keys():
            self._book(base, jid, now[jid], vec)
        if ends is not None:  # objects made anew may bring other end estimates
            for jid, rj in now.items():
                ends[self.placed[jid][1]] = rj.end_estimate
        self._seen = now

    def _book(
        self, base: ClusterState, jid: str, rj: RunningJob, vec: Callable[[Job], JobVec]
    ) -> None:
        """Book a running job, its placement from the plan when it runs on the very node
        tuple planned."""
        jv = vec(rj.job)
        p = self.planned.get(jid)
        if p is not None and p[0] is rj.nodes:
            idx, cnt = p[1], p[2]
        else:
            idx, cnt = placement_of(base.arrays, rj.nodes)
        base.commit(jv, idx, cnt)
        self.placed[jid] = (jv, idx, cnt)
        if self._ends is not None:
            self._ends[idx] = rj.end_estimate
