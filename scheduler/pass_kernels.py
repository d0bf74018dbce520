"""Compiled loop of PRB's dispatching pass (numba): the next candidate worth a placement.

A pass over the waiting queue (:func:`wattsched.scheduler.prb_pass.start_now`) looked at
every candidate in Python (its job vector, its pooled total against what is free, its shape
against the shapes that already failed) to try a placement on a few of them: tens of
candidates a cycle for three or four placements. This kernel does that scan in one call per
placement tried, on the queue index's integer arrays, with the very same integer tests.
Compiled on first use and cached on disk beside this module.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from wattsched.scheduler.node_arrays import BoolArray, FloatArray, IntArray


@njit(cache=True, nogil=True)
def next_candidate(
    cand: IntArray,
    totals: IntArray,
    shapes: IntArray,
    failed: BoolArray,
    pos: int,
    f0: int,
    f1: int,
    f2: int,
    f3: int,
) -> int:
    """The first position ``p >= pos`` of ``cand`` (queue indexes, in priority order) whose
    job's shape has not failed (``failed[shapes[i]]``) and whose pooled need ``totals[i]``
    fits in the free resources ``f0..f3``; -1 when none is left."""
    for p in range(pos, len(cand)):
        i = cand[p]
        if failed[shapes[i]]:
            continue
        if totals[i, 0] <= f0 and totals[i, 1] <= f1 and totals[i, 2] <= f2 and totals[i, 3] <= f3:
            return p
    return -1


@njit(cache=True, nogil=True)
def fitting_ranked(
    alive: BoolArray,
    totals: IntArray,
    units: IntArray,
    rank: FloatArray,
    n: int,
    free_total: IntArray,
    free_max: IntArray,
    out: IntArray,
) -> int:
    """The queue indexes ``i < n`` that are alive, whose total need fits in ``free_total``
    (pooled) and whose unit fits in ``free_max`` (per resource), written to ``out`` in rank
    order (ties by index); returns how many."""
    k = 0
    width = totals.shape[1]
    for i in range(n):
        if not alive[i]:
            continue
        ok = True
        for c in range(width):
            if totals[i, c] > free_total[c] or units[i, c] > free_max[c]:
                ok = False
                break
        if ok:
            out[k] = i
            k += 1
    if k > 1:
        sel = out[:k].copy()
        order = np.argsort(rank[sel], kind="mergesort")
        for p in range(k):
            out[p] = sel[order[p]]
    return k


@njit(cache=True, nogil=True)
def usable_max(free: IntArray, usable: BoolArray, out: IntArray) -> None:
    """``out`` = the most free on any usable node, per resource (``free[usable].max(axis=0)``);
    zeros when no node is usable."""
    out[:] = 0
    seen = False
    for i in range(free.shape[0]):
        if not usable[i]:
            continue
        for c in range(free.shape[1]):
            if not seen or free[i, c] > out[c]:
                out[c] = free[i, c]
        seen = True


@njit(cache=True, nogil=True)
def efficiency_load_order(
    free: IntArray, capacity: IntArray, efficiency: FloatArray, order: IntArray
) -> None:
    """Sort ``order`` (a permutation of the node indexes: PRB's node order at the last call,
    nearly sorted, for speed) in place into PRB's node order: more efficient first, then
    fuller (fewer free cores for their cores: ``free[:, 0] / max(capacity[:, 0], 1)``, the
    same float division), then by index. The keys ``(-efficiency, free_frac, index)`` order
    every node strictly, so this is ``np.lexsort((arange, free_frac, -efficiency))``
    whatever ``order`` held (an insertion sort: a pass's commit moves only its nodes)."""
    n = free.shape[0]
    frac = np.empty(n, np.float64)
    for i in range(n):
        c = capacity[i, 0]
        frac[i] = free[i, 0] / (c if c > 1 else 1)
    for p in range(1, n):
        i = order[p]
        e = -efficiency[i]
        f = frac[i]
        q = p - 1
        while q >= 0:
            j = order[q]
            ej = -efficiency[j]
            if ej < e or (ej == e and (frac[j] < f or (frac[j] == f and j < i))):
                break
            order[q + 1] = j
            q -= 1
        order[q + 1] = i


def warm() -> None:
    """Load this module's kernels now (numba's cached machine code), with the argument types
    PRB's pass passes: the queue index's arrays, the state's ``free`` and usable mask."""
    ints, rows, four = np.zeros(2, np.int64), np.zeros((2, 4), np.int64), np.zeros(4, np.int64)
    flags = np.ones(2, np.bool_)
    next_candidate(ints, rows, ints, flags, 0, 1, 1, 1, 1)
    fitting_ranked(flags, rows, rows, np.zeros(2), 2, four, four, ints)
    usable_max(rows, flags, four)
    efficiency_load_order(rows, rows, np.zeros(2), ints)
