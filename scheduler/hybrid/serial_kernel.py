"""Compiled serial schedule generation (numba): :func:`.serial.serial_schedule`'s decisions.

The very steps of the Python decoder, on arrays: the timeline's segments (cut at every
running job's end, every cap change, every placed start and end) each hold a state (free
room, busy units, units held whole, exclusive jobs, power) in a slot of their own, listed by
time in ``seg_t``/``seg_slot``; a job tries each segment start in turn, skipping the starts
whose span holds a segment that rules it out whatever the nodes, on the merge of the
segments its walltime spans (a two-stack queue of packed vectors, as ``_Window``), with
PRB's node order of the merge, :func:`~wattsched.scheduler.fit_kernels.first_fit` and the
power checks of ``ClusterState.place`` and ``_power_fits`` in the same floating-point order.
:class:`.serial.SerialDecoder` prepares the arrays (those of :class:`.decode.ListDecoder`)
and takes this path only where the list decode's is exact.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from wattsched.scheduler.fit_kernels import first_fit
from wattsched.scheduler.hybrid.decode_kernel import _min_over, _watts
from wattsched.scheduler.hybrid.serial_segments import commit, cut, pack
from wattsched.scheduler.node_arrays import EPS_W, BoolArray, FloatArray, IntArray
from wattsched.scheduler.pass_kernels import efficiency_load_order

_NO_LIMIT = np.zeros(0, dtype=np.int64)
BOUND_SLACK_W = 1e-6
"""Kept below the cap by the power bound of :func:`.serial._power_fits` and of the kernel (sums
in another order)."""


@njit(cache=True, nogil=True)
def serial_decode(
    perm: IntArray,
    free0: IntArray,
    busy0: IntArray,
    held0: IntArray,
    excl0: int,
    power0: float,
    t0: int,
    cuts: IntArray,
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
    flat_w: FloatArray,
    node_w: FloatArray,
    min_w: FloatArray,
    rule: IntArray,
    exclusive: BoolArray,
    ends0: IntArray,
    ptr: IntArray,
    pool0_i: IntArray,
    pool0_c: IntArray,
    plen0: IntArray,
    n_running: int,
    n_fixed: int,
    kstart: IntArray,
    kpool_i: IntArray,
    kpool_c: IntArray,
    kplen: IntArray,
) -> tuple[IntArray, IntArray, int, IntArray, IntArray, IntArray, int]:
    """The serial schedule of the waiting entities ``perm`` (in list order) from ``t0``.

    The running entities (rows ``0..n_running-1``) give their room back at ``ends0``; then
    the timeline is cut at each of ``cuts`` (the cap's changes). The first ``n_fixed``
    entities of ``perm`` take their known places (``kstart``, ``kpool_*``, ``kplen``: the
    output of a decode of a list with the same first ``n_fixed`` entries) without a search:
    the same timeline, at the cost of the commits only. Returns ``(start, seq,
    placed, pool_i, pool_c, plen, ops)`` as :func:`.decode_kernel.list_decode`: ``ops``
    counts the steps (a segment checked, a node's entry of a merge, a fit or a commit), the
    work clock's measure of a decode (:data:`.workclock.SERIAL_STEP_S`).
    """
    n_ent = units.shape[0]
    n_nodes = free0.shape[0]
    s_max = 2 + n_running + cuts.shape[0] + 2 * perm.shape[0]
    sfree = np.empty((s_max, n_nodes, 4), np.int64)
    sbusy = np.empty((s_max, n_nodes), np.int64)
    sheld = np.empty((s_max, n_nodes), np.int64)
    sexcl = np.empty(s_max, np.int64)
    spow = np.empty(s_max, np.float64)
    sftot = np.zeros((s_max, 4), np.int64)
    scap = np.empty(s_max, np.float64)
    seg_t = np.empty(s_max, np.int64)
    seg_slot = np.empty(s_max, np.int64)
    sfree[0] = free0
    sbusy[0] = busy0
    sheld[0] = held0
    sexcl[0] = excl0
    spow[0] = power0
    for i in range(n_nodes):
        for r in range(4):
            sftot[0, r] += free0[i, r]
    scap[0] = _min_over(cap_t, cap_w, t0, t0 + 1)
    seg_t[0] = t0
    seg_slot[0] = 0
    n_seg = 1
    n_slots = 1
    pool_i = pool0_i.copy()
    pool_c = pool0_c.copy()
    plen = plen0.copy()
    for e in range(n_running):  # each running job's room comes back at its end estimate
        pos, n_seg, n_slots = cut(ends0[e], n_seg, seg_t, seg_slot, n_slots, sfree, sbusy,
                                   sheld, sexcl, spow, sftot, scap, cap_t, cap_w)  # fmt: skip
        lo = ptr[e]
        m = plen[e]
        for q in range(pos, n_seg):
            s = seg_slot[q]
            for p in range(lo, lo + m):
                i = pool_i[p]
                c = pool_c[p]
                for r in range(4):
                    sfree[s, i, r] += c * req[e, r]
                    sftot[s, r] += c * req[e, r]
                sbusy[s, i] -= c
                if exclusive[e]:
                    sheld[s, i] -= 1
            if exclusive[e]:
                sexcl[s] -= 1
            spow[s] -= _watts(e, flat_w, node_w, units, pool_i, pool_c, lo, m, sbusy[s],
                              first_core_w, has_first_core)  # fmt: skip
    for c in range(cuts.shape[0]):
        pos, n_seg, n_slots = cut(cuts[c], n_seg, seg_t, seg_slot, n_slots, sfree, sbusy,
                                   sheld, sexcl, spow, sftot, scap, cap_t, cap_w)  # fmt: skip
    width = 6 * n_nodes + 2
    fsuf = np.empty((s_max, width), np.float64)  # the window's front: suffix minima
    bmin = np.empty(width, np.float64)  # the window's back: running minimum
    vec = np.empty(width, np.float64)
    low = np.empty(width, np.float64)
    mfree = np.empty((n_nodes, 4), np.int64)
    mbusy = np.empty(n_nodes, np.int64)
    mheld = np.empty(n_nodes, np.int64)
    mftot = np.zeros(4, np.int64)
    order = np.arange(n_nodes, dtype=np.int64)
    start = np.full(n_ent, -1, np.int64)
    seq = np.empty(perm.shape[0], np.int64)
    placed = 0
    ops = n_ent + n_nodes * (n_running + cuts.shape[0])
    for a in range(perm.shape[0]):
        e = perm[a]
        wall = walltime[e]
        if a < n_fixed:  # an unchanged prefix: the known placement, no search
            if kstart[e] < 0:
                continue
            lo = ptr[e]
            m = kplen[e]
            plen[e] = m
            for p in range(lo, lo + m):
                pool_i[p] = kpool_i[p]
                pool_c[p] = kpool_c[p]
            i, n_seg, n_slots = cut(kstart[e], n_seg, seg_t, seg_slot, n_slots, sfree, sbusy,
                                     sheld, sexcl, spow, sftot, scap, cap_t, cap_w)  # fmt: skip
            j, n_seg, n_slots = cut(kstart[e] + wall, n_seg, seg_t, seg_slot, n_slots, sfree,
                                     sbusy, sheld, sexcl, spow, sftot, scap, cap_t,
                                     cap_w)  # fmt: skip
            ops += (j - i) * m + n_seg - j
            commit(e, i, j, seg_slot, sfree, sbusy, sheld, sexcl, spow, sftot, req, exclusive,
                    flat_w, node_w, units, pool_i, pool_c, lo, m, first_core_w,
                    has_first_core)  # fmt: skip
            start[e] = kstart[e]
            seq[placed] = e
            placed += 1
            continue
        lo_w = mid = hi = 0  # the window: front [lo_w, mid), back [mid, hi)
        ok = False
        take = _NO_LIMIT
        counts = _NO_LIMIT
        i = 0
        clear = 0  # segments [i, clear) are known not to block the job
        while i < n_seg:
            t = seg_t[i]
            k = np.searchsorted(seg_t[:n_seg], t + wall)
            if clear < i:
                clear = i
            ops += 1 + max(k - clear, 0)
            while clear < k:
                s = seg_slot[clear]
                if (
                    req[e, 0] * units[e] > sftot[s, 0]
                    or req[e, 1] * units[e] > sftot[s, 1]
                    or req[e, 2] * units[e] > sftot[s, 2]
                    or req[e, 3] * units[e] > sftot[s, 3]
                    or spow[s] + min_w[e] > scap[s] + EPS_W
                ):
                    break
                clear += 1
            if clear < k:
                i = clear + 1  # no start up to that segment can fit
                continue
            limit = _min_over(cap_t, cap_w, t, t + wall)
            ops += width
            if k - i == 1:
                s = seg_slot[i]
                mfree[:] = sfree[s]
                mbusy[:] = sbusy[s]
                mheld[:] = sheld[s]
                mexcl = sexcl[s]
                mpow = spow[s]
                mftot[:] = sftot[s]
            else:
                if i >= hi:
                    lo_w = mid = hi = i
                while lo_w < i:
                    if lo_w == mid:  # the front is empty: the back becomes it
                        ops += (hi - mid) * width
                        for q in range(hi - 1, mid - 1, -1):
                            pack(seg_slot[q], vec, sfree, sbusy, sheld, sexcl, spow)
                            if q == hi - 1:
                                fsuf[q] = vec
                            else:
                                for x in range(width):
                                    fsuf[q, x] = min(fsuf[q + 1, x], vec[x])
                        mid = hi
                    lo_w += 1
                ops += (k - hi) * width if hi < k else 0
                while hi < k:
                    pack(seg_slot[hi], vec, sfree, sbusy, sheld, sexcl, spow)
                    if hi == mid:
                        bmin[:] = vec
                    else:
                        for x in range(width):
                            bmin[x] = min(bmin[x], vec[x])
                    hi += 1
                if lo_w == mid:
                    low[:] = bmin
                elif mid == hi:
                    low[:] = fsuf[lo_w]
                else:
                    for x in range(width):
                        low[x] = min(fsuf[lo_w, x], bmin[x])
                x = 0
                mftot[:] = 0
                for n in range(n_nodes):
                    for r in range(4):
                        mfree[n, r] = np.int64(low[x])
                        mftot[r] += mfree[n, r]
                        x += 1
                for n in range(n_nodes):
                    mbusy[n] = np.int64(-low[x])
                    x += 1
                for n in range(n_nodes):
                    mheld[n] = np.int64(-low[x])
                    x += 1
                mexcl = np.int64(-low[x])
                mpow = -low[x + 1]
            # ClusterState.place on the merge.
            if (
                req[e, 0] * units[e] > mftot[0]
                or req[e, 1] * units[e] > mftot[1]
                or req[e, 2] * units[e] > mftot[2]
                or req[e, 3] * units[e] > mftot[3]
                or mpow + min_w[e] > limit + EPS_W
            ):
                i += 1
                continue
            ops += 2 * n_nodes
            efficiency_load_order(mfree, capacity, efficiency, order)
            take, counts = first_fit(mfree, req[e], nz[e, : nnz[e]], usable, order, units[e],
                                     _NO_LIMIT, False, mheld, mbusy, mexcl > 0, exclusive[e],
                                     rule[e])  # fmt: skip
            m = take.shape[0]
            if m == 0:
                i += 1
                continue
            lo = ptr[e]
            for p in range(m):
                pool_i[lo + p] = take[p]
                pool_c[lo + p] = counts[p]
            if limit != np.inf and mpow + _watts(e, flat_w, node_w, units, pool_i, pool_c, lo,
                                                 m, mbusy, first_core_w,
                                                 has_first_core) > limit + EPS_W:  # fmt: skip
                i += 1
                continue
            if k - i == 1:
                ok = True
                break
            # _power_fits: a bound first, then each segment apart.
            bound = mpow + _watts(e, flat_w, node_w, units, pool_i, pool_c, lo, m, mbusy,
                                  first_core_w, False)  # fmt: skip
            if has_first_core:
                fc = 0.0
                for p in range(m):
                    fc += first_core_w[take[p]]
                bound += fc
            if bound + BOUND_SLACK_W <= limit + EPS_W:
                ok = True
                break
            ok = True
            ops += k - i
            for q in range(i, k):
                s = seg_slot[q]
                if spow[s] + _watts(e, flat_w, node_w, units, pool_i, pool_c, lo, m, sbusy[s],
                                    first_core_w, has_first_core) > limit + EPS_W:  # fmt: skip
                    ok = False
                    break
            if ok:
                break
            i += 1
        if not ok:
            continue
        m = take.shape[0]
        plen[e] = m
        t = seg_t[i]
        j, n_seg, n_slots = cut(t + wall, n_seg, seg_t, seg_slot, n_slots, sfree, sbusy,
                                 sheld, sexcl, spow, sftot, scap, cap_t, cap_w)  # fmt: skip
        ops += (j - i) * m + n_seg - j
        commit(e, i, j, seg_slot, sfree, sbusy, sheld, sexcl, spow, sftot, req, exclusive,
                flat_w, node_w, units, pool_i, pool_c, ptr[e], m, first_core_w,
                has_first_core)  # fmt: skip
        start[e] = t
        seq[placed] = e
        placed += 1
    return start, seq, placed, pool_i, pool_c, plen, ops
