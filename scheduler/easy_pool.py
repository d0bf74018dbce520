"""EASY's exact pool: when its whole plan is one compiled pass (:func:`~wattsched.scheduler.
pool_kernels.easy_pool`), and the figures that pass reads.

The pool is exact when there is no cap (no power check can fail), no exclusive job is booked,
every node has the same capacity, and every queued job is of a *whole-node kind*: not
exclusive, not packed over two units or more, and its unit needs at most each resource of a
node and more than half of its cores (so one unit fits on a node with nothing booked, and none
on a node holding one). The kernel checks the nodes (one unit at most on each, the free rows,
the ends known) and the kinds of the queue, and says when the pool is not exact: EASY then
plans by its general path.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from wattsched.scheduler.easy_queue import EasyQueue
from wattsched.scheduler.mapper import ClusterState
from wattsched.scheduler.model import Assignment, Placement
from wattsched.scheduler.node_arrays import IntArray
from wattsched.scheduler.plan_records import assignment
from wattsched.scheduler.pool_kernels import NO_END, easy_pool


def whole_kind(key: tuple[object, ...], node: tuple[int, ...]) -> bool:
    """Whether jobs of this kind (:attr:`EasyQueue.kind_keys`: unit, units, unit power, rule,
    exclusive) take one whole node of capacity ``node`` per unit, on any rule."""
    unit, units, _, rule, exclusive = key
    assert isinstance(unit, tuple) and isinstance(units, int)
    if exclusive or (rule is Placement.PACK and units > 1):
        return False
    return (
        unit[0] >= 1
        and 2 * unit[0] > node[0]
        and all(a <= c for a, c in zip(unit, node, strict=True))
    )


class PoolPass:
    """Runs :func:`~wattsched.scheduler.pool_kernels.easy_pool` for an EASY dispatcher, with
    its per-kind figures (kept by kind id, judged again when the nodes' capacities change) and
    its output arrays."""

    def __init__(self) -> None:
        self._capacity: IntArray | None = None
        self._node: tuple[int, ...] | None = None
        """Every node's capacity, None when they differ."""
        self.kinds: IntArray = np.zeros((0, 6), dtype=np.int64)
        """Per kind id: units, unit (4 columns), 1 when a whole-node kind."""
        self.out: IntArray = np.zeros(0, dtype=np.int64)
        """The pass's queue positions started, their nodes and the head's (see
        :func:`easy_pool`)."""
        self.spare: IntArray = np.zeros((0, 4), dtype=np.int64)
        """What the head leaves spare (every row written by each pass; the same array from
        pass to pass until :meth:`take_spare` hands it to a reservation, which keeps it)."""
        self._spare_taken = False
        self._ones: IntArray = np.ones(0, dtype=np.int64)
        """A placement's unit counts (one per node) are views of this read-only array."""

    def run(
        self, state: ClusterState, queue: EasyQueue, ends: IntArray, now: int
    ) -> tuple[int, int, int, int | None] | None:
        """``(loop, started, head, shadow)`` of :func:`easy_pool` over ``queue`` on ``state``
        (read only; ``ends``: :meth:`~wattsched.scheduler.state_cache.StateCache.node_ends`),
        the shadow None when the head never fits; None when the pool is not exact. The started
        jobs' nodes are from ``out[len(queue.rows)]`` on, the head's from ``out[q + n]``."""
        rows = queue.rows
        if state.cap.limited or state.exclusive_jobs or not rows:
            return None
        a = state.arrays
        if a.capacity is not self._capacity:
            self._judge(a.capacity)
        if self._node is None:
            return None
        if queue.kinds > len(self.kinds):
            self._add_kinds(queue)
        n = len(a.capacity)
        q = len(rows)
        if len(self.out) < q + 2 * n:
            self.out = np.empty(2 * (q + 2 * n), dtype=np.int64)
        if self._spare_taken or len(self.spare) != n:
            self.spare = np.empty((n, 4), dtype=np.int64)
            self._spare_taken = False
        t = queue.table_if_made
        if t is None:  # short queues: their rows only
            jobs = np.array([r[4] for r in rows] + [r[5] for r in rows], dtype=np.int64)
        else:
            jobs = np.concatenate((t[:, 4], t[:, 5]))
        loop, started, head, shadow = easy_pool(
            state.free, state.busy_units, a.capacity, a.usable, state.order_index(), ends, now,
            jobs, self.kinds, self.out, self.spare,
        )  # fmt: skip
        if loop < 0:
            return None
        return loop, started, head, None if shadow == NO_END else shadow

    def starts(
        self,
        state: ClusterState,
        queue: EasyQueue,
        loop: int,
        n_started: int,
        now: int,
        planned: Callable[[str, tuple[str, ...], IntArray, IntArray], None],
    ) -> tuple[list[Assignment], list[int]]:
        """The assignments of the jobs the last :meth:`run` started (one node name per unit),
        each told to ``planned`` and noted in ``queue.started``; and the free resources pooled
        after the first ``loop`` of them (the start loop's), from ``state``'s."""
        jobs = queue.jobs
        rows = queue.rows
        names = state.arrays.names
        out = self.out
        ones = self.ones(len(names))
        f = list(state.free_total_l)
        got: list[Assignment] = []
        noted = queue.started
        m = len(jobs)  # the started jobs' nodes after the queue's positions
        for s, p in enumerate(out[:n_started].tolist()):
            job = jobs[p]
            u = job.units
            idx = out[m : m + u].copy()
            m += u
            nodes = tuple([names[i] for i in idx.tolist()])
            planned(job.id, nodes, idx, ones[:u])
            got.append(assignment(job.id, now, nodes))
            noted.append(p)
            if s < loop:
                r = rows[p]
                f[0] -= r[0]
                f[1] -= r[1]
                f[2] -= r[2]
                f[3] -= r[3]
        return got, f

    def take_spare(self) -> IntArray:
        """What the head leaves spare after the last :meth:`run`, for the caller to keep (the
        next pass writes a new array)."""
        self._spare_taken = True
        return self.spare

    def head(self, q: int, n: int, units: int) -> tuple[IntArray, IntArray]:
        """The head's nodes and unit counts after the last :meth:`run` (``q`` jobs queued,
        ``n`` nodes)."""
        return self.out[q + n : q + n + units].copy(), self.ones(n)[:units]

    def ones(self, n: int) -> IntArray:
        """``n`` ones at least, read-only (unit counts of whole-node placements)."""
        if len(self._ones) < n:
            self._ones = np.ones(n, dtype=np.int64)
            self._ones.flags.writeable = False
        return self._ones

    def _judge(self, capacity: IntArray) -> None:
        """The nodes' common capacity, and every kind judged on it again."""
        self._capacity = capacity
        rows = {tuple(r) for r in capacity.tolist()}
        self._node = rows.pop() if len(rows) == 1 else None
        self.kinds = np.zeros((0, 6), dtype=np.int64)

    def _add_kinds(self, queue: EasyQueue) -> None:
        """The figures of the kinds new since the last pass."""
        node = self._node
        assert node is not None
        keys = queue.kind_keys[len(self.kinds) :]
        more = [[k[1], *k[0], int(whole_kind(k, node))] for k in keys]
        self.kinds = np.concatenate([self.kinds, np.array(more, dtype=np.int64).reshape(-1, 6)])
