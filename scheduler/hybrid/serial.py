"""A serial schedule-generation scheme on the real nodes: a second decoder of priority lists.

The local search decodes a list with :func:`~wattsched.scheduler.listsched.list_schedule`, a
*parallel* scheme: at each event every waiting job that fits starts, in list order, so a job
late in the list starts whenever it fits, even when that delays a wider job earlier in the
list (non-delay schedules). The *serial* scheme here places each job, in list order, at the
earliest time it fits for its whole walltime beside every job placed before it: conservative
backfilling in list order. For a regular objective such as the weighted queue time, the
serial schedules of all lists contain an optimal one (on pooled resources); the parallel ones
need not. Neither decoder dominates on the Eurora instances (``bench/results/hybrid_eurora.md``,
"Session 47"), so the search may try both (``SearchParams.serial``,
:func:`.serial_swaps.serial_search`).

The time from the snapshot on is cut into segments at every placed start and end, every
running job's end and every cap change, each segment with its own
:class:`~wattsched.scheduler.mapper.ClusterState`. A job tries each segment start in turn, on
a state merged over the segments its walltime would span (the least free room of each node,
the most units on it, the most power drawn), and goes on the first start where PRB's node
order finds room (:meth:`ClusterState.place`) and the power, first cores included, stays
under the cap in each segment. A segment that rules the job out whatever the nodes (pooled
room, least power) is found once a job, and skips every start whose span holds it; the
merges over the moving spans come from a two-stack queue (:class:`_Window`). In Python
about 5-50 ms for 200 jobs on 32 nodes at the tightest caps, 0.1-0.4 s uncapped (when many
jobs run at once); :class:`SerialDecoder` gives the very same schedules compiled
(:mod:`.serial_kernel`), 1-9 ms (18 x faster over 832 Eurora decodes), where the compiled
list decode applies (exact power sums); the search decodes through it.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Sequence

import numpy as np

from wattsched.scheduler.hybrid.decode import KernelOut, ListDecoder
from wattsched.scheduler.hybrid.decode import warm as decode_warm
from wattsched.scheduler.hybrid.decode_kernel import mean_weighted_wait
from wattsched.scheduler.hybrid.mapping import MappedSchedule
from wattsched.scheduler.hybrid.problem import weighted_queue_time
from wattsched.scheduler.hybrid.serial_kernel import BOUND_SLACK_W, serial_decode
from wattsched.scheduler.listsched import live_end
from wattsched.scheduler.mapper import ClusterState, StateCache
from wattsched.scheduler.model import (
    Assignment,
    Job,
    Node,
    NodePowerModel,
    PowerCap,
    Resources,
    Snapshot,
)
from wattsched.scheduler.node_arrays import EPS_W, FloatArray, IntArray, JobVec
from wattsched.scheduler.prb import prb_node_order

MAX_CAP_CHANGES = 1000
"""Cap changes cut into segments at most (a cap schedule is a few steps a day)."""


def _power_fits(
    states: Sequence[ClusterState],
    merged: ClusterState,
    jv: JobVec,
    idx: IntArray,
    cnt: IntArray,
    limit: float,
) -> bool:
    """The placement's power, first cores of the nodes it wakes included, under ``limit`` in
    each of ``states`` (``merged``: their merge). First the bound that wakes every node it
    uses at the most power drawn in any of them; each state apart only when that fails."""
    bound = merged.power_w + merged.units_watts(jv, idx, cnt)
    if merged.arrays.has_first_core:
        bound += float(merged.arrays.first_core_w[idx].sum())
    if bound + BOUND_SLACK_W <= limit + EPS_W:
        return True
    return all(s.power_w + s.delta_watts(jv, idx, cnt) <= limit + EPS_W for s in states)


class _Timeline:
    """The segments: ``times[i]`` starts segment ``i`` (the last one has no end), with its
    state and its cap (segments are cut at cap changes: one cap each)."""

    def __init__(self, start: int, state: ClusterState) -> None:
        self.times = [start]
        self.states = [state]
        self.caps = [state.cap.min_over(start, start + 1)]
        self.packed: list[FloatArray | None] = [None]
        """Each segment's state as one vector (:meth:`pack`), made when first asked for."""

    def cut(self, t: int) -> int:
        """Index of the segment that starts at ``t`` (made by splitting the one holding it)."""
        i = bisect.bisect_left(self.times, t)
        if i == len(self.times) or self.times[i] != t:
            self.times.insert(i, t)
            self.states.insert(i, self.states[i - 1].copy())
            self.caps.insert(i, self.states[i].cap.min_over(t, t + 1))
            self.packed.insert(i, None)
        return i

    def commit(self, i: int, j: int, jv: JobVec, idx: IntArray, cnt: IntArray) -> None:
        """Book the placement in segments ``i..j-1``."""
        for m in range(i, j):
            self.states[m].commit(jv, idx, cnt)
            self.packed[m] = None

    def pack(self, m: int) -> FloatArray:
        """Segment ``m``'s state as one vector whose elementwise minimum over segments is
        their merge (:func:`_unpack`): a state whose placements fit the resources and rules of
        each (the least free room of each node, the most units and exclusive jobs on it, the
        most power drawn). Its free room, then minus the busy units, the units held whole,
        the exclusive jobs and the power (whole numbers but the power: exact either way). The
        power of a placement is checked on each segment apart (:func:`_power_fits`): a node's
        first core is paid where it is idle."""
        v = self.packed[m]
        if v is None:
            s = self.states[m]
            v = np.concatenate((s.free.ravel(), -s.busy_units, -s.held_whole,
                                (-s.exclusive_jobs, -s.power_w))).astype(float)  # fmt: skip
            self.packed[m] = v
        return v

    def blocked(self, m: int, jv: JobVec) -> bool:
        """The job cannot fit in segment ``m`` whatever the nodes: not enough pooled room, or
        its least power over the segment's cap."""
        s = self.states[m]
        return s.quick_reject(jv) or s.power_w + jv.min_w > self.caps[m] + EPS_W


def _unpack(v: FloatArray, like: ClusterState) -> ClusterState:
    """The merged state whose packed vector (:meth:`_Timeline.pack`) is ``v``."""
    m = like.copy()
    n_free = m.free.size
    n = len(m.busy_units)
    m.free[...] = v[:n_free].reshape(m.free.shape)
    m.busy_units[:] = -v[n_free : n_free + n]
    m.held_whole[:] = -v[n_free + n : n_free + 2 * n]
    m.exclusive_jobs = int(-v[-2])
    m.power_w = float(-v[-1])
    m.free_total_l[:] = m.free.sum(axis=0).tolist()
    return m


class _Window:
    """The elementwise minimum of the packed segments ``[lo, hi)`` for one job's candidate
    starts, whose spans only move forward: a queue of two stacks (the oldest segments with
    the minimum of each suffix of them, the newest with their running minimum), so each
    segment is pushed and popped once a job instead of reduced once a candidate start."""

    def __init__(self, line: _Timeline) -> None:
        self.line = line
        self.lo = self.hi = 0
        self.front: list[FloatArray] = []
        self.back: list[FloatArray] = []
        self.back_min: FloatArray | None = None

    def merged(self, i: int, k: int) -> ClusterState:
        """The merge of segments ``i..k-1`` (``i`` and ``k`` never below the last call's)."""
        if i >= self.hi:
            self.front, self.back, self.back_min = [], [], None
            self.lo = self.hi = i
        while self.lo < i:
            if not self.front:
                acc: FloatArray | None = None
                for v in reversed(self.back):
                    acc = v if acc is None else np.minimum(acc, v)
                    self.front.append(acc)
                self.back, self.back_min = [], None
            self.front.pop()
            self.lo += 1
        while self.hi < k:
            v = self.line.pack(self.hi)
            self.back.append(v)
            self.back_min = v if self.back_min is None else np.minimum(self.back_min, v)
            self.hi += 1
        if not self.front:
            low = self.back_min
        elif self.back_min is None:
            low = self.front[-1]
        else:
            low = np.minimum(self.front[-1], self.back_min)
        assert low is not None
        return _unpack(low, self.line.states[i])


def cap_cuts(snap: Snapshot) -> list[int]:
    """The cap's changes after ``snap``'s time (at most :data:`MAX_CAP_CHANGES`)."""
    out: list[int] = []
    t = snap.time
    for _ in range(MAX_CAP_CHANGES):
        nxt = snap.cap.next_change(t)
        if nxt is None:
            break
        out.append(nxt)
        t = nxt
    return out


class SerialDecoder:
    """:func:`serial_schedule` compiled (:func:`.serial_kernel.serial_decode`) on the arrays
    of ``decoder`` (a :class:`.decode.ListDecoder` of the snapshot, no arrivals), where its
    list decode is compiled: the very same schedules (``tests/hybrid/test_serial.py``)."""

    def __init__(self, decoder: ListDecoder) -> None:
        self.decoder = decoder
        self.compiled = decoder.compiled and len(decoder.jobs) == len(decoder.snap.queued)
        self.cuts = np.array(cap_cuts(decoder.snap), dtype=np.int64)
        self.ops = 0
        """Steps of the compiled decodes so far (:meth:`.workclock.WorkClock.meter`)."""

    def schedule(self, jobs: Sequence[Job], source: str) -> MappedSchedule:
        """The serial schedule of ``jobs`` (every job of the list must be queued)."""
        d = self.decoder
        if not self.compiled:
            out = serial_schedule(d.snap, d.cache, jobs, source=source)
            assert out is not None  # no deadline
            return out
        perm = d.perm(jobs)
        return d.mapped(perm, self.run(perm)[1], source)

    def run(
        self, perm: IntArray, fixed: int = 0, known: KernelOut | None = None
    ) -> tuple[float, KernelOut]:
        """The compiled serial decode of the entity rows ``perm`` (:meth:`.ListDecoder.perm`):
        its objective (summed in ``perm``'s order, as :meth:`schedule`'s) and the kernel's
        output, for :meth:`.ListDecoder.mapped`. ``known``: the output of a decode of a list
        whose first ``fixed`` rows are ``perm``'s; those take their places from it, no search
        (the same schedule, faster)."""
        d = self.decoder
        s, a = d.state, d.state.arrays
        empty = np.zeros(0, dtype=np.int64)
        if known is None or fixed <= 0:
            fixed, kstart, kpool_i, kpool_c, kplen = 0, empty, empty, empty, empty
        else:
            kstart, _, _, kpool_i, kpool_c, kplen = known
        out = serial_decode(
            perm, s.free, s.busy_units, s.held_whole, s.exclusive_jobs, s.power_w, d.snap.time,
            self.cuts, a.usable, a.capacity, a.efficiency, a.first_core_w, a.has_first_core,
            d.cap_t, d.cap_w, d.req, d.nz, d.nnz, d.units, d.walltime, d.flat_w, d.node_w,
            d.min_w, d.rule, d.exclusive, d.ends0, d.ptr, d.pool_i, d.pool_c, d.plen0,
            d.n_running, fixed, kstart, kpool_i, kpool_c, kplen,
        )  # fmt: skip
        self.ops += out[6]
        objective = float(mean_weighted_wait(perm, out[0], d.weight, d.submit))
        return objective, out[:6]


def serial_schedule(
    snap: Snapshot,
    cache: StateCache,
    jobs: Sequence[Job],
    *,
    source: str,
    deadline: float = math.inf,
    timer: Callable[[], float] | None = None,
    decoder: SerialDecoder | None = None,
) -> MappedSchedule | None:
    """The serial schedule of ``jobs`` (a priority list of the queued jobs) from ``snap``.

    ``cache`` must have seen ``snap``. Returns None when ``timer()`` passes ``deadline``
    before every job is placed; the objective is ``inf`` when a job fits nowhere ever.
    ``decoder`` (of this snapshot): its compiled decode when it has one.
    """
    if decoder is not None and decoder.compiled:
        if timer is not None and timer() >= deadline:
            return None
        return decoder.schedule(jobs, source)
    t0 = snap.time
    line = _Timeline(t0, cache.state(snap))
    placements = cache.running_placements()
    for rj in snap.running:  # each running job's room comes back at its end estimate
        booked = placements.get(rj.job.id)
        if booked is None:
            continue
        i = line.cut(live_end(rj.end_estimate, t0))
        for s in line.states[i:]:
            s.release(*booked)
    for t in cap_cuts(snap):
        line.cut(t)
    out: list[Assignment] = []
    unplaced = False
    for job in jobs:
        if timer is not None and timer() >= deadline:
            return None
        jv = cache.vec(job)
        placed = None
        window = _Window(line)
        i = clear = 0  # segments [i, clear) are known not to block the job
        while i < len(line.times):
            start = line.times[i]
            k = bisect.bisect_left(line.times, start + job.walltime)
            clear = max(clear, i)
            while clear < k and not line.blocked(clear, jv):
                clear += 1
            if clear < k:
                i = clear + 1  # no start up to that segment can fit
                continue
            span = line.states[i:k]
            limit = span[0].cap_limit(start, job.walltime)
            merged = span[0] if len(span) == 1 else window.merged(i, k)
            placed = merged.place(jv, prb_node_order(merged), start)
            if placed is not None and (
                len(span) == 1 or _power_fits(span, merged, jv, placed[0], placed[1], limit)
            ):
                break
            placed = None
            i += 1
        if placed is None:
            unplaced = True
            continue
        idx, cnt = placed
        start = line.times[i]
        j = line.cut(start + job.walltime)
        line.commit(i, j, jv, idx, cnt)
        out.append(Assignment(job.id, start, line.states[i].names_for(idx, cnt)))
    starts = {a.job_id: a.start for a in out}
    objective = math.inf if unplaced else weighted_queue_time(jobs, starts, snap.max_ewt())
    return MappedSchedule(
        assignments=tuple(out), objective=objective, conflicts=(), postponed=0, source=source
    )


_warm = False


def warm() -> None:
    """Load the compiled decodes now, list (:func:`.decode.warm`) and serial: a toy decode of
    each once per process, so that a search's budget does not pay for it."""
    global _warm
    if _warm:
        return
    decode_warm()
    node = Node("w0", Resources(cores=2, mem_mb=1024), NodePowerModel(first_core_w=1.0))
    job = Job("w", 0, 10, 1, Resources(cores=1, mem_mb=1), unit_power_w=1.5)
    snap = Snapshot(0, (node,), (), (job,), PowerCap.constant(1000.0))
    SerialDecoder(ListDecoder(snap, StateCache())).schedule([job], "warm")
    _warm = True
