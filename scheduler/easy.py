"""EASY backfilling, power-aware, on the node model (as Slurm's backfill does it).

Jobs start in submit order while they fit. The first that does not (the head) gets a
reservation: the earliest time at which, with running jobs ending at their walltime
estimates, all its units fit and the power cap holds (the *shadow time*), and the nodes it
would use then. A later job may start now (backfill) if it fits now and either ends before
the shadow time, or fits in what the head leaves spare at the shadow time (per node, and in
power), so that it never delays the head.
"""

from __future__ import annotations

from types import MappingProxyType

import numpy as np

from wattsched.scheduler.dispatcher import Dispatcher, register
from wattsched.scheduler.easy_pool import PoolPass
from wattsched.scheduler.easy_queue import BackfillScan, EasyQueue
from wattsched.scheduler.easy_reserve import Reservation as _Reservation
from wattsched.scheduler.easy_reserve import cap_times, ends_of, pooled_fit, times_from
from wattsched.scheduler.fit_kernels import col_sums, room_both, units_in
from wattsched.scheduler.mapper import ClusterState
from wattsched.scheduler.model import Assignment, Job, Plan, Snapshot, SolverStats
from wattsched.scheduler.node_arrays import EPS_W, IntArray, JobVec
from wattsched.scheduler.plan_records import assignment as _assignment
from wattsched.scheduler.plan_records import plan as _plan

_INF = float("inf")
_HEURISTIC = SolverStats(status="heuristic", extra=MappingProxyType({}))
"""Every plan's stats (one shared object: frozen, its ``extra`` read-only)."""


class EASYDispatcher(Dispatcher):
    """EASY backfilling with a power-aware reservation for the head job."""

    name = "easy"
    skips_exact = True

    def __init__(
        self, full_plan: bool = False, whole_nodes: bool = True, exact_pool: bool = True
    ) -> None:
        super().__init__()
        self.full_plan = full_plan
        """Always compute and publish the head's reservation (else only when some job could
        backfill: the fast path for replays)."""
        self.whole_nodes = whole_nodes
        """Reserve in one compiled call when no node holds more than one unit and there is no
        cap (:meth:`ClusterState.place_after`; False: always job by job, as a check)."""
        self.exact_pool = exact_pool
        """Plan in one compiled pass where the pool is exact (:mod:`wattsched.scheduler.
        easy_pool`; False: always by the general path, as a check)."""
        self._pool = PoolPass()
        self._queue = EasyQueue()
        self._last_head: tuple[list[str], tuple[bytes, bytes], tuple[str, ...]] | None = None
        """The last large reservation's node names, by placement (see :meth:`_head_names`)."""

    def plan(self, snap: Snapshot) -> Plan:
        now = snap.time
        base = self.cache.synced(snap)  # read only: copied below where a pass books on it
        order = base.order_index()
        queue, ids = self._queue_of(snap.queued)
        seen = self._unchanged_prefix(snap, ids)
        memo = self._memo
        if seen and memo is not None and memo.extra is None:
            if seen == len(ids):
                # The same queue on the same cluster (a wake-up of the clock): again nothing
                # starts, and no reservation is needed.
                plan = _plan(now, (), _HEURISTIC)
                self._remember(snap, ids, plan)
                return plan
            # Nothing could backfill last time and no reservation was needed: compute it now
            # only if a new job could backfill.
            seen = 0
        if seen and memo is not None and isinstance(memo.extra, tuple):
            # Only arrivals since a plan that started nothing: same head, same reservation;
            # only the new jobs may backfill.
            head_id, res = memo.extra
            state = base.copy()
            first = self._queue.first_fitting(seen, state.free_total_l)
            fast = self._backfill(state, queue[first:], now, order, res)
            if res is not None:
                fast.append(_assignment(head_id, res.shadow, res.nodes))
            plan = _plan(now, tuple(fast), _HEURISTIC)
            self._remember(snap, ids, plan, memo.extra)
            return plan
        if self.exact_pool:
            got = self._pool.run(base, self._queue, self.cache.node_ends(), now)
            if got is not None:
                return self._plan_pool(snap, base, ids, *got)
        state = base.copy()
        out: list[Assignment] = []
        started: dict[str, tuple[JobVec, IntArray, IntArray]] = {}
        i = 0
        while i < len(queue):
            job = queue[i]
            jv = self.cache.vec(job)
            placed = state.place(jv, order, now)
            if placed is None:
                break
            state.commit(jv, *placed)
            names = state.names_for(*placed)
            self.cache.planned(job.id, names, *placed)
            out.append(_assignment(job.id, now, names))
            self._queue.started.append(i)
            started[job.id] = (jv, *placed)
            i += 1
        if i >= len(queue):
            plan = _plan(now, tuple(out), _HEURISTIC)
            self._remember(snap, ids, plan)
            return plan
        head = queue[i]
        first = self._queue.first_fitting(i + 1, state.free_total_l)
        candidates = first < len(queue)
        res = (
            self._reserve(state, head, now, ends_of(snap, now, started), started)
            if candidates or self.full_plan
            else None
        )
        memo_extra = (head.id, res) if candidates or self.full_plan else None
        if candidates:
            out.extend(self._backfill(state, queue[first:], now, order, res))
        if res is not None:
            out.append(_assignment(head.id, res.shadow, res.nodes))
        plan = _plan(now, tuple(out), _HEURISTIC)
        self._remember(snap, ids, plan, memo_extra)
        return plan

    def _plan_pool(
        self,
        snap: Snapshot,
        state: ClusterState,
        ids: list[str],
        loop: int,
        n_started: int,
        head: int,
        shadow: int | None,
    ) -> Plan:
        """The plan from :class:`PoolPass`'s pass: the very starts, reservation and memo of the
        general path below (``loop`` jobs started by its start loop, ``n_started`` in all)."""
        now = snap.time
        pool = self._pool
        jobs = self._queue.jobs
        out, f = pool.starts(state, self._queue, loop, n_started, now, self.cache.planned)
        memo_extra = None
        if head < len(jobs) and (
            self._queue.first_fitting(head + 1, f) < len(jobs) or self.full_plan
        ):
            res = None
            if shadow is not None:
                idx, cnt = pool.head(len(jobs), len(state.free), jobs[head].units)
                names = self._head_names(state, idx, cnt)
                res = _Reservation(shadow, pool.take_spare(), _INF, names, idx)
                out.append(_assignment(jobs[head].id, shadow, names))
            memo_extra = (jobs[head].id, res)
        plan = _plan(now, tuple(out), _HEURISTIC)
        self._remember(snap, ids, plan, memo_extra)
        return plan

    def _queue_of(self, queued: tuple[Job, ...]) -> tuple[list[Job], list[str]]:
        """The eligible jobs in submit order and their ids (read-only), brought from the last
        snapshot's queue by the jobs that left and came (:class:`EasyQueue`)."""
        self._queue.sync(queued)
        return self._queue.jobs, self._queue.ids

    def _reserve(
        self,
        state: ClusterState,
        head: Job,
        now: int,
        ends: list[tuple[int, str]],
        started: dict[str, tuple[JobVec, IntArray, IntArray]],
    ) -> _Reservation | None:
        """The head's shadow time and what it leaves spare then (None: it never fits).

        Jobs end in ``ends`` order; at each end or cap step the head is tried on the nodes
        freed so far. The pooled free resources only grow as jobs end, so every time before
        the first at which the head fits pooled is skipped at once (nothing is released or
        placed there); from that time on, each time releases its jobs and tries the head."""
        jv = self.cache.vec(head)
        placements = self.cache.running_placements()
        pending = sorted(ends)
        looked: list[tuple[JobVec, IntArray, IntArray]] = []  # placements of pending[:k0]
        k0 = pooled_fit(pending, started, placements, state.free_total_l, jv.total_l, looked)
        if k0 is None:
            return None
        t0 = pending[k0 - 1][0] if k0 else now
        caps = (
            sorted(c for c in cap_times(state.cap, now, pending) if c > t0)
            if len(state.cap.steps) > 1
            else []  # a constant cap never steps: no time but ``now``, not after ``t0``
        )
        order = state.order_index()
        fast = self.whole_nodes
        future: ClusterState | None = None
        k = 0
        released = 0
        for t in times_from(t0, pending, k0, caps):
            while k < len(pending) and pending[k][0] <= t:
                k += 1
            while len(looked) < k:
                jid = pending[len(looked)][1]
                looked.append(started.get(jid) or placements[jid])
            if fast:  # the steps below in one compiled call, while it applies
                got = state.place_after(jv, [p[1] for p in looked[:k]], order, t)
                if got is not None:
                    idx, cnt, spare = got
                    if not len(idx):
                        continue  # the head does not fit at t
                    spare_w = state.cap_limit(t, head.walltime) - state.power_w  # inf - finite
                    return _Reservation(t, spare, spare_w, self._head_names(state, idx, cnt), idx)
                fast = False
            if future is None:
                future = state.copy()
            future.release_many(looked[released:k])
            released = k
            placed = future.place(jv, order, t)
            if placed is None:
                continue
            future.commit(jv, *placed)
            spare_w = future.cap_limit(t, head.walltime) - future.power_w
            spare = future.free  # the look-ahead state is dropped: no copy needed
            if head.exclusive:
                spare[placed[0]] = 0
            return _Reservation(t, spare, spare_w, self._head_names(future, *placed), placed[0])
        return None

    def _head_names(self, state: ClusterState, idx: IntArray, cnt: IntArray) -> tuple[str, ...]:
        """``state.names_for(idx, cnt)``; a large placement's names are kept for the next
        cycle, whose reservation is mostly the very same one (same nodes and counts)."""
        if len(idx) <= 16:
            return state.names_for(idx, cnt)
        last = self._last_head
        names = state.arrays.names
        key = (idx.tobytes(), cnt.tobytes())  # int64 both: equal bytes, equal placements
        if last is not None and last[0] is names and last[1] == key:
            return last[2]
        out = state.names_for(idx, cnt)
        self._last_head = (names, key, out)
        return out

    def _backfill(
        self,
        state: ClusterState,
        rest: list[Job],
        now: int,
        order: IntArray,
        res: _Reservation | None,
    ) -> list[Assignment]:
        """Start now, in order, the jobs of ``rest`` (a tail of this cycle's queue, from its
        first job that fits pooled) that fit and do not delay the head.

        Between two starts the state and the reservation do not change, so a job fails as
        the last job of the same kind failed (same shape and power, rule, side of the shadow
        time and cap over its walltime): it is skipped without being tried again. The jobs that
        do not fit pooled or are of a kind that failed are passed over by a compiled scan
        (:class:`BackfillScan`)."""
        out: list[Assignment] = []
        room = _Room()
        queue = self._queue
        jobs = queue.jobs
        n = len(jobs)
        first = n - len(rest)
        if first >= n:
            return out
        scan = BackfillScan(queue, state.cap, now, None if res is None else res.shadow)
        own = False  # ``res`` is copied before its first change
        vecs = self.cache.vecs
        vec = self.cache.vec
        f = state.free_total_l  # updated in place by each start
        p, key = scan.next(first, f)
        while p < n:
            job = jobs[p]
            jv = vecs.get(job.id) or vec(job)
            short = res is None or now + job.walltime <= res.shadow
            if short:
                placed = state.place(jv, order, now)
            else:
                assert res is not None
                placed = _place_in_spare(state, jv, now, order, res, room)
            if placed is None:
                scan.failed_as(key)
                p, key = scan.next(p + 1, f)
                continue
            idx, cnt = placed
            state.commit(jv, idx, cnt)
            scan.started()
            room.both = None
            names = state.names_for(idx, cnt)
            self.cache.planned(job.id, names, idx, cnt)
            out.append(_assignment(job.id, now, names))
            queue.started.append(p)
            if not short and res is not None:
                if not own:  # the reservation is the memo's too: change a copy
                    res = res.copy()
                    own = True
                res.spare[idx] -= cnt[:, None] * jv.req
                room.spare_total = None
                if res.power_spare != _INF:  # no cap: it stays infinite (finite watts)
                    res.power_spare -= float(np.dot(state.unit_watts(jv, idx), cnt)) + float(
                        state.arrays.first_core_w[idx].sum()
                    )
            p, key = scan.next(p + 1, f)
        scan.done()
        return out


class _Room:
    """What the head leaves spare pooled, and the room both now and then pooled (computed on
    first use, forgotten when a start changes them)."""

    __slots__ = ("both", "spare_total")

    def __init__(self) -> None:
        self.spare_total: list[int] | None = None
        self.both: list[int] | None = None


def _place_in_spare(
    state: ClusterState,
    jv: JobVec,
    now: int,
    order: IntArray,
    res: _Reservation,
    room: _Room,
) -> tuple[IntArray, IntArray] | None:
    """A placement now for a job running past the shadow time, within what the head leaves
    spare (per node, and in power), or None."""
    # The least it can add (first cores not counted) already breaks the power the head leaves
    # spare: the placement below would be refused on power anyway.
    if jv.min_w * (1 - 1e-9) > res.power_spare + EPS_W:
        return None
    if room.spare_total is None:
        room.spare_total = list(col_sums(res.spare))
    t = jv.total_l
    s = room.spare_total
    if t[0] > s[0] or t[1] > s[1] or t[2] > s[2] or t[3] > s[3]:
        return None  # cannot fit in what the head leaves spare, even pooled
    if room.both is None:
        room.both = _room_now_and_spare(state, res.spare)
    b = room.both
    if t[0] > b[0] or t[1] > b[1] or t[2] > b[2] or t[3] > b[3]:
        return None  # the placement below would find too few units: skip its work
    limit_k = _units_in(res.spare, jv)
    if jv.exclusive:
        limit_k[res.idx] = 0
    placed = state.place(jv, order, now, limit_k=limit_k)
    if placed is not None and res.power_spare != _INF:  # no cap: no finite sum breaks it
        idx, cnt = placed
        # Conservative: the nodes may be idle at the shadow time (first core counted).
        worst = float(np.dot(state.unit_watts(jv, idx), cnt)) + float(
            state.arrays.first_core_w[idx].sum()
        )
        if worst > res.power_spare + EPS_W:
            return None
    return placed


def _room_now_and_spare(state: ClusterState, spare: IntArray) -> list[int]:
    """Per resource, the room of the usable nodes both now and in what the head leaves spare,
    pooled: a job placed within both (``place`` with ``limit_k=_units_in(spare)``) puts
    ``k_i <= min(free_ir, spare_ir) / req_r`` units on usable node ``i``, so its total of each
    resource is at most this sum (a necessary condition, exact to skip on)."""
    return list(room_both(state.free, spare, state.arrays.usable))


def _units_in(free: IntArray, jv: JobVec) -> IntArray:
    """Units of the job that fit in ``free`` per node (compiled: ``fit_kernels.units_in``)."""
    return units_in(free, jv.req, jv.nz)


register("easy", EASYDispatcher)
