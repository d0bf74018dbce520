"""The serial kernel's timeline (:mod:`.serial_kernel`): segments cut at a time, a segment's
state packed for the window's minima, a placed entity committed to the segments it spans
(``_Timeline.cut``, ``pack`` and ``commit`` of :mod:`.serial`, on arrays)."""

from __future__ import annotations

import numpy as np
from numba import njit

from wattsched.scheduler.hybrid.decode_kernel import _min_over, _watts
from wattsched.scheduler.node_arrays import BoolArray, FloatArray, IntArray


@njit(cache=True, nogil=True)
def cut(
    t: int,
    n_seg: int,
    seg_t: IntArray,
    seg_slot: IntArray,
    n_slots: int,
    sfree: IntArray,
    sbusy: IntArray,
    sheld: IntArray,
    sexcl: IntArray,
    spow: FloatArray,
    sftot: IntArray,
    scap: FloatArray,
    cap_t: IntArray,
    cap_w: FloatArray,
) -> tuple[int, int, int]:
    """``_Timeline.cut``: ``(position of the segment starting at t, n_seg, n_slots)``."""
    pos = int(np.searchsorted(seg_t[:n_seg], t))
    if pos < n_seg and seg_t[pos] == t:
        return pos, n_seg, n_slots
    for q in range(n_seg, pos, -1):
        seg_t[q] = seg_t[q - 1]
        seg_slot[q] = seg_slot[q - 1]
    src = seg_slot[pos - 1]
    new = n_slots
    sfree[new] = sfree[src]
    sbusy[new] = sbusy[src]
    sheld[new] = sheld[src]
    sexcl[new] = sexcl[src]
    spow[new] = spow[src]
    sftot[new] = sftot[src]
    scap[new] = _min_over(cap_t, cap_w, t, t + 1)
    seg_t[pos] = t
    seg_slot[pos] = new
    return pos, n_seg + 1, n_slots + 1


@njit(cache=True, nogil=True)
def pack(
    s: int,
    out: FloatArray,
    sfree: IntArray,
    sbusy: IntArray,
    sheld: IntArray,
    sexcl: IntArray,
    spow: FloatArray,
) -> None:
    """``_Timeline.pack`` of slot ``s`` into ``out``."""
    n = sbusy.shape[1]
    k = 0
    for i in range(n):
        for r in range(4):
            out[k] = sfree[s, i, r]
            k += 1
    for i in range(n):
        out[k] = -sbusy[s, i]
        k += 1
    for i in range(n):
        out[k] = -sheld[s, i]
        k += 1
    out[k] = -sexcl[s]
    out[k + 1] = -spow[s]


@njit(cache=True, nogil=True)
def commit(
    e: int,
    i: int,
    j: int,
    seg_slot: IntArray,
    sfree: IntArray,
    sbusy: IntArray,
    sheld: IntArray,
    sexcl: IntArray,
    spow: FloatArray,
    sftot: IntArray,
    req: IntArray,
    exclusive: BoolArray,
    flat_w: FloatArray,
    node_w: FloatArray,
    units: IntArray,
    pool_i: IntArray,
    pool_c: IntArray,
    lo: int,
    m: int,
    first_core_w: FloatArray,
    has_first_core: bool,
) -> None:
    """``_Timeline.commit``: entity ``e`` on its ``m`` pool entries from ``lo``, in the
    segments at positions ``i..j-1``."""
    for q in range(i, j):
        s = seg_slot[q]
        delta = _watts(e, flat_w, node_w, units, pool_i, pool_c, lo, m, sbusy[s],
                       first_core_w, has_first_core)  # fmt: skip
        for p in range(lo, lo + m):
            nd = pool_i[p]
            c = pool_c[p]
            for r in range(4):
                sfree[s, nd, r] -= c * req[e, r]
                sftot[s, r] -= c * req[e, r]
            sbusy[s, nd] += c
            if exclusive[e]:
                sheld[s, nd] += 1
        if exclusive[e]:
            sexcl[s] += 1
        spow[s] += delta
