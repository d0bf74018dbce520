"""Compiled loops of the node mapper (numba): first-fit unit placement and booking.

:meth:`~wattsched.scheduler.mapper.ClusterState.place` and ``commit``/``release`` ran a
dozen small numpy calls each, on arrays of 100-1,000 nodes; their per-call cost, not the
arithmetic, was the replay's time. These kernels do the same integer work in one call each,
with the very same result (the power checks stay in Python, in the same floating-point order).
Compiled on first use and cached on disk beside this module.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from wattsched.scheduler.node_arrays import BoolArray, IntArray

RULE_FREE = 0
RULE_SCATTER = 1
RULE_PACK = 2

_BIG = np.iinfo(np.int64).max


@njit(cache=True, nogil=True)
def fit_into(
    free: IntArray,
    req: IntArray,
    nz: IntArray,
    usable: BoolArray,
    order: IntArray,
    units: int,
    limit_k: IntArray,
    use_limit: bool,
    held_whole: IntArray,
    busy_units: IntArray,
    check_held: bool,
    exclusive: bool,
    rule: int,
    take: IntArray,
    counts: IntArray,
) -> int:
    """Nodes for ``units`` units in ``order``, each node filled as far as it has room, written
    into ``take[:m]`` (node indexes) and ``counts[:m]`` (units), scratch arrays of at least
    ``len(order)``; returns ``m``, 0 when the units do not all fit (then nothing is made:
    most of PRB's placements fail, and allocating and returning two arrays cost more than the
    scan).

    Room on node ``i``: ``min_r free[i, r] // req[r]`` over the needed resources, 0 where
    the node is unusable, at most ``limit_k[i]`` (``use_limit``), 0 on a node held whole by
    an exclusive job (``check_held``), 0 on a busy node for an exclusive job, at most 1 per
    node (scatter), all units or none (pack). A node with less free than one unit needs of a
    resource has no room whatever the rest (no division then: a full cluster's nodes mostly
    have none).
    """
    n = order.shape[0]
    m = 0
    got = 0
    for p in range(n):
        i = order[p]
        if not usable[i]:
            continue
        k = _BIG
        for r in nz:
            f = free[i, r]
            if f < req[r]:
                k = 0
                break
            q = f // req[r]
            if q < k:
                k = q
        if k <= 0:
            continue
        if use_limit and limit_k[i] < k:
            k = limit_k[i]
        if check_held and held_whole[i] > 0:
            k = 0
        if exclusive and busy_units[i] > 0:
            k = 0
        if rule == RULE_SCATTER and k > 1:
            k = 1
        elif rule == RULE_PACK:
            k = units if k >= units else 0
        if k <= 0:
            continue
        need = units - got
        if k > need:
            k = need
        take[m] = i
        counts[m] = k
        m += 1
        got += k
        if got == units:
            return m
    return 0


@njit(cache=True, nogil=True)
def first_fit(
    free: IntArray,
    req: IntArray,
    nz: IntArray,
    usable: BoolArray,
    order: IntArray,
    units: int,
    limit_k: IntArray,
    use_limit: bool,
    held_whole: IntArray,
    busy_units: IntArray,
    check_held: bool,
    exclusive: bool,
    rule: int,
) -> tuple[IntArray, IntArray]:
    """:func:`fit_into` returning ``(node_indexes, unit_counts)``, empty when the units do not
    all fit."""
    n = order.shape[0]
    take = np.empty(n, np.int64)
    counts = np.empty(n, np.int64)
    m = fit_into(
        free, req, nz, usable, order, units, limit_k, use_limit, held_whole, busy_units,
        check_held, exclusive, rule, take, counts,
    )  # fmt: skip
    return take[:m], counts[:m]


@njit(cache=True, nogil=True)
def book(
    free: IntArray,
    busy_units: IntArray,
    idx: IntArray,
    counts: IntArray,
    req: IntArray,
    nz: IntArray,
    sign: int,
) -> None:
    """Take (``sign`` -1) or give back (+1) ``counts[j]`` units of ``req`` on node ``idx[j]``."""
    for j in range(idx.shape[0]):
        i = idx[j]
        c = counts[j]
        for r in nz:
            free[i, r] += sign * c * req[r]
        busy_units[i] -= sign * c


@njit(cache=True, nogil=True)
def place_after_ends(
    free: IntArray,
    busy_units: IntArray,
    capacity: IntArray,
    ended: IntArray,
    req: IntArray,
    nz: IntArray,
    usable: BoolArray,
    order: IntArray,
    units: int,
    held_whole: IntArray,
    rule: int,
    take: IntArray,
    counts: IntArray,
    spare: IntArray,
    spare_busy: IntArray,
) -> int:
    """EASY's reservation where no node holds more than one unit (each unit a whole node, as
    on KTH-SP2): the running jobs on the nodes ``ended`` end, then a non-exclusive job with no
    exclusive job booked (``held_whole`` all 0) is placed as :func:`fit_into` would and booked.

    On a node with one unit, releasing that unit's job gives its free row back whole
    (``capacity``) and its busy count 0: that is :func:`book` ``+1`` of the job's units, so
    ``spare`` and ``spare_busy`` are the state after those releases and the commit, in one
    call. Returns ``m`` (``take[:m]``, ``counts[:m]`` the placement), 0 when it does not fit
    (nothing placed), -1 when some node holds more than one unit (nothing done: the caller
    releases job by job)."""
    n = free.shape[0]
    for i in range(n):
        if busy_units[i] > 1:
            return -1
    for i in range(n):
        spare_busy[i] = busy_units[i]
        for r in range(free.shape[1]):
            spare[i, r] = free[i, r]
    for j in range(ended.shape[0]):
        i = ended[j]
        spare_busy[i] = 0
        for r in range(free.shape[1]):
            spare[i, r] = capacity[i, r]
    no_limit = np.empty(0, np.int64)
    m = fit_into(
        spare, req, nz, usable, order, units, no_limit, False, held_whole, spare_busy,
        False, False, rule, take, counts,
    )  # fmt: skip
    if m:
        book(spare, spare_busy, take[:m], counts[:m], req, nz, -1)
    return m


@njit(cache=True, nogil=True)
def room_both(free: IntArray, spare: IntArray, usable: BoolArray) -> tuple[int, int, int, int]:
    """Per resource (4 columns), the sum over the usable nodes of ``max(min(free, spare), 0)``:
    the room both now and in what EASY's head leaves spare, pooled."""
    r0 = r1 = r2 = r3 = 0
    for i in range(free.shape[0]):
        if not usable[i]:
            continue
        a = min(free[i, 0], spare[i, 0])
        if a > 0:
            r0 += a
        a = min(free[i, 1], spare[i, 1])
        if a > 0:
            r1 += a
        a = min(free[i, 2], spare[i, 2])
        if a > 0:
            r2 += a
        a = min(free[i, 3], spare[i, 3])
        if a > 0:
            r3 += a
    return r0, r1, r2, r3


@njit(cache=True, nogil=True)
def col_sums(a: IntArray) -> tuple[int, int, int, int]:
    """The sum of each of the 4 columns (``a.sum(axis=0)`` without an array)."""
    r0 = r1 = r2 = r3 = 0
    for i in range(a.shape[0]):
        r0 += a[i, 0]
        r1 += a[i, 1]
        r2 += a[i, 2]
        r3 += a[i, 3]
    return r0, r1, r2, r3


@njit(cache=True, nogil=True)
def units_in(free: IntArray, req: IntArray, nz: IntArray) -> IntArray:
    """Units of ``req`` that fit in ``free`` per node: ``max(min_r free[i, r] // req[r], 0)``
    over the needed resources ``nz`` (not empty)."""
    n = free.shape[0]
    out = np.empty(n, np.int64)
    for i in range(n):
        k = _BIG
        for r in nz:
            q = free[i, r] // req[r]
            if q < k:
                k = q
        out[i] = k if k > 0 else 0
    return out


@njit(cache=True, nogil=True)
def first_pooled(lo: int, tot: IntArray, free: IntArray) -> int:
    """The first row from ``lo`` of ``tot`` (n x 4) that fits in ``free`` (``n`` when none)."""
    for p in range(lo, tot.shape[0]):
        if (
            tot[p, 0] <= free[0]
            and tot[p, 1] <= free[1]
            and tot[p, 2] <= free[2]
            and tot[p, 3] <= free[3]
        ):
            return p
    return tot.shape[0]


@njit(cache=True, nogil=True)
def next_try(
    lo: int, table: IntArray, params: IntArray, failed: BoolArray, after: IntArray
) -> tuple[int, int]:
    """EASY's backfill scan over the queue's ``table`` (per job: total need in 4 columns,
    walltime, kind id): the first row ``p`` from ``lo`` whose total fits in the pooled free
    ``params[0:4]`` and whose key is not ``failed`` (when ``params[7]``, else any key), and
    its key: the kind, the side of the shadow time (short: ``now + walltime <= shadow``, or no
    reservation) and how many cap steps ``after`` (sorted, after ``now``) fall before
    ``now + walltime``. ``params[4:7]``: now, shadow, 1 when there is a reservation.
    ``(n, 0)`` when none."""
    stride = after.shape[0] + 1
    f0, f1, f2, f3 = params[0], params[1], params[2], params[3]
    now, shadow, has_res, marks = params[4], params[5], params[6] != 0, params[7] != 0
    for p in range(lo, table.shape[0]):
        if table[p, 0] > f0 or table[p, 1] > f1 or table[p, 2] > f2 or table[p, 3] > f3:
            continue
        if not marks:
            return p, 0
        end = now + table[p, 4]
        short = 1 if (not has_res or end <= shadow) else 0
        c = np.searchsorted(after, end) if stride > 1 else 0
        key = (table[p, 5] * 2 + short) * stride + c
        if not failed[key]:
            return p, key
    return table.shape[0], 0


def warm() -> None:
    """Load the scheduler's kernels now (these, PRB's pass kernels, EASY's pool pass): numba's
    one-time set-up (about 0.5 s per process) and the cached machine code, paid at start-up
    rather than in the first control cycle that places a job.

    Runs each kernel on a 2-node toy state with the argument types the mapper passes (a
    job's vectors and a shared node order are read-only arrays, a computed order is not):
    ``tests/scheduler/test_fit_kernels.py`` checks that a replay compiles nothing more."""
    free = np.ones((2, 1), np.int64)
    busy = np.zeros(2, np.int64)
    zeros = np.zeros(2, np.int64)
    usable = np.ones(2, np.bool_)
    req, nz, shared = np.ones(1, np.int64), np.zeros(1, np.int64), np.arange(2, dtype=np.int64)
    for a in (req, nz, shared):
        a.flags.writeable = False
    for order in (shared, np.arange(2, dtype=np.int64)):
        idx, counts = first_fit(
            free, req, nz, usable, order, 1, zeros, False, zeros, busy, False, False, RULE_FREE
        )
        fit_into(
            free, req, nz, usable, order, 1, zeros, False, zeros, busy, False, False, RULE_FREE,
            idx.copy(), counts.copy(),
        )  # fmt: skip
        book(free, busy, idx, counts, req, nz, -1)
        book(free, busy, idx, counts, req, nz, +1)
        counts.flags.writeable = False  # EASY's pool pass: views of one array of ones
        book(free, busy, idx, counts, req, nz, -1)
        book(free, busy, idx, counts, req, nz, +1)
        place_after_ends(
            free, busy, free.copy(), zeros[:1].copy(), req, nz, usable, order, 1, zeros,
            RULE_FREE, idx.copy(), counts.copy(), free.copy(), busy.copy(),
        )  # fmt: skip
    spare = np.ones((2, 4), np.int64)
    room_both(spare, spare, usable)
    col_sums(spare)
    units_in(spare, req, nz)
    table = np.zeros((2, 6), np.int64)  # EASY's queue (easy_queue)
    first_pooled(0, table[:, :4], np.zeros(4, np.int64))
    first_pooled(0, table[:1, :4], np.zeros(4, np.int64))  # contiguous when one row
    next_try(0, table, np.zeros(8, np.int64), np.zeros(2, np.bool_), zeros[:0].copy())
    from wattsched.scheduler import pass_kernels, pool_kernels  # PRB's pass, EASY's pool

    pass_kernels.warm()
    pool_kernels.warm()
