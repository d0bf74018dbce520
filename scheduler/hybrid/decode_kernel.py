"""Compiled list scheduling of one priority list (numba): the hybrid's decode.

The very decisions of :func:`wattsched.scheduler.listsched.list_schedule` (``full=True``,
PRB's node order, no horizon) from a working state, in one call: at each event (a job end
or a cap change) the waiting jobs are tried in list order with the pass-start pooled
prefilter, the shapes that failed for lack of resources skipped until the next commit,
:meth:`~wattsched.scheduler.mapper.ClusterState.place`'s checks (pooled totals, the least
power, :func:`~wattsched.scheduler.fit_kernels.first_fit`, the power delta with the first
cores) and ``commit``/``release`` in the same floating-point order; the jobs that end at an
event are released in the heap's order (end, then job id). :mod:`.decode` prepares the
arrays and only hands over the cases in which the power sums are exact in any order.

Entities: the running jobs (rows ``0..R-1``, booked at the start) and the waiting jobs
(rows ``R..``), one row each in the per-entity arrays; a placement is stored in ``pool``
from ``ptr[e]`` (room for ``units[e]`` nodes).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from wattsched.scheduler.fit_kernels import first_fit
from wattsched.scheduler.node_arrays import EPS_W, BoolArray, FloatArray, IntArray
from wattsched.scheduler.pass_kernels import efficiency_load_order

_NO_LIMIT = np.zeros(0, dtype=np.int64)


@njit(cache=True, nogil=True)
def _min_over(cap_t: IntArray, cap_w: FloatArray, t0: int, t1: int) -> float:
    """:meth:`PowerCap.min_over`."""
    if cap_t.shape[0] == 1:
        return cap_w[0]
    i = np.searchsorted(cap_t, t0, side="right")
    low = cap_w[i - 1 if i > 0 else 0]
    j = max(i, np.searchsorted(cap_t, t1, side="left"))
    for k in range(i, j):
        if cap_w[k] < low:
            low = cap_w[k]
    return low


@njit(cache=True, nogil=True)
def _watts(
    e: int,
    flat_w: FloatArray,
    node_w: FloatArray,
    units: IntArray,
    pool_i: IntArray,
    pool_c: IntArray,
    lo: int,
    m: int,
    busy: IntArray,
    first_core_w: FloatArray,
    has_first_core: bool,
) -> float:
    """:meth:`ClusterState.delta_watts` of entity ``e`` on ``pool[lo:lo + m]`` (``busy`` as
    it is now: before a commit, after a release)."""
    if not np.isnan(flat_w[e]):
        w = flat_w[e] * units[e] if m > 0 else 0.0
    else:
        w = 0.0
        for p in range(lo, lo + m):
            w += node_w[e, pool_i[p]] * pool_c[p]
    if not has_first_core:
        return w
    woken = 0.0
    for p in range(lo, lo + m):
        if busy[pool_i[p]] == 0:
            woken += first_core_w[pool_i[p]]
    return w + woken


@njit(cache=True, nogil=True)
def _book(
    free: IntArray,
    busy: IntArray,
    ftot: IntArray,
    req: IntArray,
    e: int,
    pool_i: IntArray,
    pool_c: IntArray,
    lo: int,
    m: int,
    sign: int,
) -> None:
    for p in range(lo, lo + m):
        i = pool_i[p]
        c = pool_c[p]
        for r in range(4):
            free[i, r] += sign * c * req[e, r]
        busy[i] -= sign * c
        for r in range(4):
            ftot[r] += sign * c * req[e, r]


@njit(cache=True, nogil=True)
def list_decode(
    perm: IntArray,
    t0: int,
    free0: IntArray,
    busy0: IntArray,
    held0: IntArray,
    power0: float,
    usable: BoolArray,
    capacity: IntArray,
    efficiency: FloatArray,
    first_core_w: FloatArray,
    has_first_core: bool,
    cap_t: IntArray,
    cap_w: FloatArray,
    req: IntArray,
    nz: IntArray,
    nnz: IntArray,
    units: IntArray,
    walltime: IntArray,
    shape: IntArray,
    flat_w: FloatArray,
    node_w: FloatArray,
    min_w: FloatArray,
    rule: IntArray,
    exclusive: BoolArray,
    id_rank: IntArray,
    ends0: IntArray,
    ptr: IntArray,
    pool0_i: IntArray,
    pool0_c: IntArray,
    plen0: IntArray,
    n_running: int,
    n_shapes: int,
    release: IntArray,
    hold: int,
    known_wall: IntArray,
    known_end0: IntArray,
) -> tuple[IntArray, IntArray, int, IntArray, IntArray, IntArray, int]:
    """List schedule the waiting entities ``perm`` (in priority order) from ``t0``; an
    entity is not tried before its ``release`` time (a job yet to arrive), which is an event.

    ``hold`` >= 0: that entity (first in ``perm``) holds a reservation until it starts: no
    other starts unless it ends, by its ``known_wall`` (the walltime the RMS knows), by the
    last known end of the entities running (``known_end0`` for those running at ``t0``), the
    head's shadow time for a head that needs the whole machine (EASY's rule then; for a
    smaller head a conservative one). With nothing running and the head not placed the hold
    is dropped.

    Returns ``(start, seq, placed, pool_i, pool_c, plen, ops)``: each entity's start (-1: never
    placed), the entities in placement order (``seq[:placed]``), and the node indexes and
    unit counts of entity ``e``: ``pool_*[ptr[e]:ptr[e] + plen[e]]``; and ``ops``, the
    decode's work counted in steps (per event: the entity scans and the waiting jobs tried;
    per node order and per first fit: the nodes), which a deterministic budget charges
    (:mod:`.workclock`) as a stand-in for its time.
    """
    n_ent = units.shape[0]
    free = free0.copy()
    busy = busy0.copy()
    held = held0.copy()
    excl = 0
    for e in range(n_running):
        if exclusive[e]:
            excl += 1
    power = power0
    ftot = np.zeros(4, np.int64)
    for i in range(free.shape[0]):
        for r in range(4):
            ftot[r] += free[i, r]
    pool_i = pool0_i.copy()
    pool_c = pool0_c.copy()
    plen = plen0.copy()
    end = np.full(n_ent, -1, np.int64)
    active = np.zeros(n_ent, np.bool_)
    kend = np.full(n_ent, -1, np.int64)
    for e in range(n_running):
        end[e] = ends0[e]
        active[e] = True
        kend[e] = known_end0[e]
    start = np.full(n_ent, -1, np.int64)
    seq = np.empty(perm.shape[0], np.int64)
    placed = 0
    waiting = perm.copy()
    n_wait = waiting.shape[0]
    order = np.arange(free.shape[0], dtype=np.int64)
    failed = np.zeros(n_shapes, np.bool_)
    rel = np.empty(n_ent, np.int64)
    total = np.empty((n_ent, 4), np.int64)
    for e in range(n_ent):
        for r in range(4):
            total[e, r] = req[e, r] * units[e]
    one_step = cap_t.shape[0] == 1
    t = t0
    n_nodes = free.shape[0]
    ops = n_ent + n_nodes
    while n_wait > 0:
        ops += 2 * n_ent + n_wait
        # Release every entity ended by t, in (end, id) order.
        k = 0
        for e in range(n_ent):
            if active[e] and end[e] <= t:
                rel[k] = e
                k += 1
        for a in range(1, k):  # insertion sort by (end, id rank)
            x = rel[a]
            b = a - 1
            while b >= 0 and (
                end[rel[b]] > end[x] or (end[rel[b]] == end[x] and id_rank[rel[b]] > id_rank[x])
            ):
                rel[b + 1] = rel[b]
                b -= 1
            rel[b + 1] = x
        for a in range(k):
            e = rel[a]
            active[e] = False
            _book(free, busy, ftot, req, e, pool_i, pool_c, ptr[e], plen[e], 1)
            if exclusive[e]:
                for p in range(ptr[e], ptr[e] + plen[e]):
                    held[pool_i[p]] -= 1
                excl -= 1
            power -= _watts(e, flat_w, node_w, units, pool_i, pool_c, ptr[e], plen[e], busy,
                            first_core_w, has_first_core)  # fmt: skip
        holding = hold >= 0 and start[hold] < 0
        shadow = 0
        n_active = 0
        if holding:  # the scan only when a head holds (most decodes have no hold)
            for e in range(n_ent):
                if active[e]:
                    n_active += 1
                    if kend[e] > shadow:
                        shadow = kend[e]
        f0, f1, f2, f3 = ftot[0], ftot[1], ftot[2], ftot[3]
        fresh = False
        failed[:] = False
        still = 0
        arrive = -1
        for q in range(n_wait):
            e = waiting[q]
            ok = False
            if release[e] > t:  # not arrived yet
                if arrive < 0 or release[e] < arrive:
                    arrive = release[e]
                waiting[still] = e
                still += 1
                continue
            if holding and e != hold and t + known_wall[e] > shadow:
                waiting[still] = e  # it would delay the head's reservation
                still += 1
                continue
            # The pass-start pooled prefilter, the failed shapes, then place()'s own checks:
            # pooled totals now (a failure for resources), the least power (for power).
            if (
                total[e, 0] <= f0
                and total[e, 1] <= f1
                and total[e, 2] <= f2
                and total[e, 3] <= f3
                and not failed[shape[e]]
            ):
                if (
                    total[e, 0] > ftot[0]
                    or total[e, 1] > ftot[1]
                    or total[e, 2] > ftot[2]
                    or total[e, 3] > ftot[3]
                ):
                    failed[shape[e]] = True
                else:
                    limit = cap_w[0] if one_step else _min_over(cap_t, cap_w, t, t + walltime[e])
                    if not power + min_w[e] > limit + EPS_W:
                        if not fresh:
                            efficiency_load_order(free, capacity, efficiency, order)
                            fresh = True
                            ops += n_nodes
                        ops += n_nodes
                        ok = _place(e, free, busy, held, excl, power, limit, usable,
                                    first_core_w, has_first_core, req, nz, nnz, units,
                                    flat_w, node_w, rule, exclusive, ptr, pool_i, pool_c,
                                    plen, order, failed, shape)  # fmt: skip
            if not ok:
                waiting[still] = e
                still += 1
                continue
            lo = ptr[e]
            power += _watts(e, flat_w, node_w, units, pool_i, pool_c, lo, plen[e], busy,
                            first_core_w, has_first_core)  # fmt: skip
            _book(free, busy, ftot, req, e, pool_i, pool_c, lo, plen[e], -1)
            if exclusive[e]:
                for p in range(lo, lo + plen[e]):
                    held[pool_i[p]] += 1
                excl += 1
            fresh = False  # loads changed: the node order may too
            active[e] = True
            end[e] = t + walltime[e]
            kend[e] = t + known_wall[e]
            n_active += 1
            if e == hold:
                holding = False
            start[e] = t
            seq[placed] = e
            placed += 1
        n_wait = still
        if n_wait == 0:
            break
        if holding and n_active == 0:
            hold = -1  # the head fits on no empty machine: no reservation holds for it
            continue
        # Next event: a job end, an arrival or a cap change.
        nxt = arrive
        for e in range(n_ent):
            if active[e] and (nxt < 0 or end[e] < nxt):
                nxt = end[e]
        if cap_t.shape[0] > 1:
            ci = np.searchsorted(cap_t, t, side="right")
            if ci < cap_t.shape[0] and (nxt < 0 or cap_t[ci] < nxt):
                nxt = cap_t[ci]
        if nxt < 0:
            break
        t = nxt
    return start, seq, placed, pool_i, pool_c, plen, ops


@njit(cache=True, nogil=True)
def _place(
    e: int,
    free: IntArray,
    busy: IntArray,
    held: IntArray,
    excl: int,
    power: float,
    limit: float,
    usable: BoolArray,
    first_core_w: FloatArray,
    has_first_core: bool,
    req: IntArray,
    nz: IntArray,
    nnz: IntArray,
    units: IntArray,
    flat_w: FloatArray,
    node_w: FloatArray,
    rule: IntArray,
    exclusive: BoolArray,
    ptr: IntArray,
    pool_i: IntArray,
    pool_c: IntArray,
    plen: IntArray,
    order: IntArray,
    failed: BoolArray,
    shape: IntArray,
) -> bool:
    """The rest of :meth:`ClusterState.place` of entity ``e`` (its pooled and least-power
    checks passed; ``order`` PRB's node order of the state as it is, ``limit`` the cap over
    its run): :func:`first_fit` (a failure marks its shape failed) and the power delta. The
    placement is written to the pool."""
    take, counts = first_fit(free, req[e], nz[e, : nnz[e]], usable, order, units[e], _NO_LIMIT,
                             False, held, busy, excl > 0, exclusive[e], rule[e])  # fmt: skip
    m = take.shape[0]
    if m == 0:
        failed[shape[e]] = True
        return False
    lo = ptr[e]
    for p in range(m):
        pool_i[lo + p] = take[p]
        pool_c[lo + p] = counts[p]
    if power + _watts(e, flat_w, node_w, units, pool_i, pool_c, lo, m, busy, first_core_w,
                      has_first_core) > limit + EPS_W:  # fmt: skip
        return False
    plen[e] = m
    return True


@njit(cache=True, nogil=True)
def mean_weighted_wait(
    perm: IntArray, start: IntArray, weight: FloatArray, submit: IntArray
) -> float:
    """:func:`~wattsched.scheduler.hybrid.problem.weighted_queue_time` of the entities
    ``perm`` (summed in that order, as the list's jobs); ``inf`` when one has no start."""
    n = perm.shape[0]
    if n == 0:
        return 0.0
    total = 0.0
    for p in range(n):
        e = perm[p]
        if start[e] < 0:
            return np.inf
        total += weight[e] * (start[e] - submit[e])
    return total / n
