"""PRB: the priority-rule-based dispatcher of the power-capping paper (Algorithm 1).

Jobs are ordered by the expected wait time of their queue, then by demand (requirements x
walltime); nodes by energy efficiency, then by load (fuller first, against fragmentation).
At each event every job whose units all fit (resources and power, idle nodes and the first
busy core counted) starts; a job that does not fit is undone and retried at the next event.
"""

from __future__ import annotations

import numpy as np

from wattsched.scheduler.dispatcher import Dispatcher, prb_key, prb_order, register
from wattsched.scheduler.listsched import list_schedule
from wattsched.scheduler.mapper import ClusterState
from wattsched.scheduler.model import RESOURCES, Assignment, Job, Plan, Snapshot, SolverStats
from wattsched.scheduler.node_arrays import IntArray
from wattsched.scheduler.pass_kernels import efficiency_load_order, usable_max
from wattsched.scheduler.prb_pass import start_now
from wattsched.scheduler.queueindex import QueueIndex


def prb_node_order(state: ClusterState) -> IntArray:
    """PRB's node order (see :meth:`ClusterState.order_efficiency_load`)."""
    return state.order_efficiency_load()


class KeptNodeOrder:
    """:func:`prb_node_order` by a compiled sort of the order it gave last
    (:func:`~wattsched.scheduler.pass_kernels.efficiency_load_order`): between two calls a
    pass commits one job, which moves only its nodes (the lexsort sorted them all again)."""

    def __init__(self) -> None:
        self._order: IntArray = np.zeros(0, dtype=np.int64)

    def __call__(self, state: ClusterState) -> IntArray:
        """PRB's node order for ``state`` (a new array: the caller may keep it)."""
        n = len(state.free)
        if len(self._order) != n:
            self._order = np.arange(n, dtype=np.int64)
        a = state.arrays
        efficiency_load_order(state.free, a.capacity, a.efficiency, self._order)
        return self._order.copy()


class PRBDispatcher(Dispatcher):
    """Algorithm 1 of the power-capping paper.

    With ``full_plan`` the whole forward schedule (walltimes as durations) is returned, as the
    API's plan; otherwise only the jobs that start now (the fast path for replays).
    """

    name = "prb"
    skips_exact = True

    def __init__(self, full_plan: bool = False) -> None:
        super().__init__()
        self.full_plan = full_plan
        self.queue = QueueIndex(prb_key)
        self._free_max: IntArray = np.zeros(len(RESOURCES), dtype=np.int64)
        self._node_order = KeptNodeOrder()

    def plan(self, snap: Snapshot) -> Plan:
        state = self.cache.state(snap)
        if self.full_plan:
            starts = self._list(state, snap, prb_order(snap.queued))
        else:
            new = self.queue.sync(snap.queued, self._started_last(), snap.queue_edits)
            if self._same_cluster(snap):
                # Only arrivals since a plan that started nothing on this very cluster: the
                # jobs it tried fail again, so only the new ones need trying.
                starts = self._list(state, snap, prb_order(new))
            else:
                # Only jobs whose total need fits in what is free (pooled) can start now.
                free_max = self._free_max
                usable_max(state.free, state.arrays.usable, free_max)
                starts = start_now(
                    state, self.cache, self.queue, snap.time, free_max, node_order=self._node_order
                )
        plan = Plan(snap.time, tuple(starts), SolverStats(status="heuristic"))
        self._remember(snap, [], plan)
        return plan

    def _list(self, state: ClusterState, snap: Snapshot, jobs: list[Job]) -> list[Assignment]:
        # Running jobs' ends matter only to the full forward plan (list_schedule reads them
        # only then).
        ends = {rj.job.id: rj.end_estimate for rj in snap.running} if self.full_plan else {}
        res = list_schedule(
            state,
            self.cache,
            jobs,
            snap.time,
            ends,
            node_order=self._node_order,
            full=self.full_plan,
        )
        return res.assignments


register("prb", PRBDispatcher)
