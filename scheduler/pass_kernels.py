"""Compiled loop of PRB's dispatching pass (numba): the next candidate worth a placement.

A pass over the waiting queue (:func:`wattsched.scheduler.prb_pass.start_now`) looked at
every candidate in Python (its job vector, its pooled total against what is free, its shape
against the shapes that already failed) to try a placement on a few of them: tens of
candidates a cycle for three or four placements. This kernel does that scan in one call per
placement tried, on the queue index's integer arrays, with the very same integer tests.
Compiled on first use and cached on disk beside this module.
"""

from __future__ import annotations

from numba import njit

from wattsched.scheduler.node_arrays import BoolArray, IntArray


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
