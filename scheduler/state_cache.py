"""The kept working state of a dispatcher: :class:`StateCache` builds a :class:`~wattsched.
scheduler.mapper.ClusterState` from each snapshot, reusing work from the last one (split from
:mod:`wattsched.scheduler.mapper`, which still exports it)."""

from __future__ import annotations

from wattsched.scheduler.mapper import ClusterState
from wattsched.scheduler.model import Job, Node, Snapshot
from wattsched.scheduler.node_arrays import IntArray, JobVec, NodeArrays
from wattsched.scheduler.running_book import RunningBook


class StateCache:
    """Builds a :class:`ClusterState` from each snapshot, reusing work from the last one.

    Static node arrays are rebuilt only when the node tuple changes; running jobs are applied
    as a difference against the previous snapshot's (:class:`~wattsched.scheduler.
    running_book.RunningBook`: the jobs that started and ended, found by identity, else by job
    id). Also caches each job's :class:`JobVec`.
    """

    def __init__(self) -> None:
        self._nodes: tuple[Node, ...] | None = None
        self._arrays: NodeArrays | None = None
        self._base: ClusterState | None = None
        self._book = RunningBook()
        self._planned = self._book.planned  # the same dict (cleared, never rebound)
        self._vecs: dict[str, JobVec] = {}
        self._shapes: dict[tuple[object, ...], JobVec] = {}

    def planned(self, job_id: str, nodes: tuple[str, ...], idx: IntArray, cnt: IntArray) -> None:
        """A start the dispatcher planned: ``nodes`` (one name per unit) is the placement
        ``(idx, cnt)``. When the job is running on that very tuple at the next snapshot, its
        placement is taken from here instead of from the names (read-only arrays)."""
        self._planned[job_id] = (nodes, idx, cnt)

    @property
    def vecs(self) -> dict[str, JobVec]:
        """The cached job vectors by job id (read-only use: :meth:`vec` fills it)."""
        return self._vecs

    def vec(self, job: Job) -> JobVec:
        """The job's arrays (cached by id)."""
        v = self._vecs.get(job.id)
        if v is None:
            v = JobVec.of(job, self._arrays, self._shapes)
            self._vecs[job.id] = v
        return v

    def state(self, snap: Snapshot) -> ClusterState:
        """A fresh working state for this snapshot (the caller may mutate it)."""
        return self.synced(snap).copy()

    def synced(self, snap: Snapshot) -> ClusterState:
        """The kept state brought to this snapshot: read only (:meth:`state` copies it)."""
        # Other node objects (a node switched) are restated without asking first whether the
        # lists are equal (``Node.__eq__`` on the first that differs): equal ones restate to
        # the very arrays and draw (each node's own terms taken out and put back: + 0.0).
        if self._nodes is not snap.nodes:
            restated = self._arrays.restated(snap.nodes) if self._arrays is not None else None
            if restated is not None and self._base is not None:
                # Only power states or availability changed: keep the booked jobs and the
                # job vectors (they depend on capacities and power models only).
                base = self._base
                base.power_w += restated.static_w - base.arrays.static_w
                base.arrays = restated
                self._arrays = restated
            else:
                self._arrays = NodeArrays(snap.nodes)
                self._base = ClusterState(self._arrays, snap.cap)
                self._book = RunningBook()  # node indexes of the old arrays
                self._planned = self._book.planned
                self._vecs = {}
                self._shapes = {}
        self._nodes = snap.nodes
        assert self._base is not None and self._arrays is not None
        base = self._base
        base.cap = snap.cap
        self._book.sync(base, snap.running, self.vec, self._forget)
        return base

    def _forget(self, job_id: str) -> None:
        self._vecs.pop(job_id, None)

    def node_ends(self) -> IntArray:
        """Per node, the end estimate of its running job as booked by the last :meth:`state`
        (see :meth:`~wattsched.scheduler.running_book.RunningBook.node_ends`; kept from the
        first call on, read-only)."""
        assert self._base is not None
        return self._book.node_ends(len(self._base.busy_units))

    def running_placements(self) -> dict[str, tuple[JobVec, IntArray, IntArray]]:
        """Job id -> (vector, node indexes, counts) of the running jobs of the last snapshot."""
        return self._book.placed
