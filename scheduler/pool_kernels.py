"""EASY's whole pass in one compiled call where the pool is exact (numba).

On a cluster of identical nodes where every unit of every queued job takes one whole node
(KTH-SP2: 1-core units on 1-core nodes), with no cap and no exclusive job, a node is either
open (no unit booked: one unit of any queued job fits) or closed (one unit booked: none fits),
and EASY's steps are counting problems over the nodes in their order: a job starts on the
first open nodes, the head's shadow time is the earliest time at which enough usable nodes
are open or ended, its nodes the first such, and a backfill past the shadow time takes the
first open nodes that are not the head's. :func:`easy_pool` does the start loop, the
reservation and the backfill of :class:`~wattsched.scheduler.easy.EASYDispatcher` so, with
the very nodes, times and spare resources the general path finds (checked against it by
``tests/scheduler/test_easy_pool.py``).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from wattsched.scheduler.node_arrays import BoolArray, IntArray
from wattsched.scheduler.running_book import NO_END

__all__ = ["NO_END", "easy_pool"]


@njit(cache=True, nogil=True)
def easy_pool(
    free: IntArray,
    busy: IntArray,
    capacity: IntArray,
    usable: BoolArray,
    order: IntArray,
    ends: IntArray,
    now: int,
    jobs: IntArray,
    kinds: IntArray,
    out: IntArray,
    spare: IntArray,
) -> tuple[int, int, int, int]:
    """EASY's plan over the queue ``jobs`` (the ``q`` jobs' walltimes in submit order, then
    their kind ids) on the nodes (``free``, ``busy`` units, ``capacity``, ``usable``,
    ``ends``: each busy node's job's end estimate), in node ``order``, at ``now``; per kind
    (``kinds``' rows) its units, its unit (4 columns) and 1 when it is a whole-node kind (see
    :mod:`wattsched.scheduler.easy_pool`).

    Returns ``(loop, started, head, shadow)``: the jobs started, in order, are at queue
    positions ``out[:started]`` (the first ``loop`` by the start loop, the rest backfilled),
    their nodes one per unit from ``out[q]`` on, job after job; ``head`` is the head's
    position (``q`` when every job started, then nothing else is set); ``shadow`` its shadow
    time, or :data:`NO_END` when it never fits; then its nodes are ``out[q + n:]`` (``n``
    nodes) and ``spare`` what it leaves spare per node at the shadow time (before the
    backfills, as EASY's memo keeps it). ``out`` holds at least ``q + 2 n`` items.
    ``loop`` is -1 when the pool is not exact (a node with two units, a booked node with room
    for a whole unit, a free node not whole, an end not known, a job of another kind): nothing
    is set then."""
    n = free.shape[0]
    nr = free.shape[1]
    q = jobs.shape[0] // 2
    wall = jobs[:q]
    kind = jobs[q:]
    kunits = kinds[:, 0]
    kreq = kinds[:, 1:5]
    pos = out[:q]
    nodes = out[q : q + n]
    head_nodes = out[q + n :]
    for p in range(q):
        if kinds[kind[p], 5] == 0:
            return -1, 0, 0, 0
    open_ = np.zeros(n, np.bool_)
    end = np.empty(n, np.int64)
    kind_on = np.full(n, -1, np.int64)  # the kind started now on a node
    n_open = 0
    for i in range(n):
        b = busy[i]
        if b == 0:
            for r in range(nr):
                if free[i, r] != capacity[i, r]:
                    return -1, 0, 0, 0
            end[i] = now
            if usable[i]:
                open_[i] = True
                n_open += 1
        elif b == 1:
            if 2 * free[i, 0] > capacity[i, 0] or ends[i] == NO_END:
                return -1, 0, 0, 0
            end[i] = ends[i] if ends[i] > now else now
        else:
            return -1, 0, 0, 0
    # The start loop: jobs in order while they fit, each on the first open nodes.
    s = 0
    m = 0
    head = q
    for p in range(q):
        kd = kind[p]
        u = kunits[kd]
        if u > n_open:
            head = p
            break
        pos[s] = p
        s += 1
        took = 0
        for j in range(n):
            i = order[j]
            if open_[i]:
                open_[i] = False
                nodes[m] = i
                m += 1
                end[i] = now + wall[p]
                kind_on[i] = kd
                took += 1
                if took == u:
                    break
        n_open -= u
    loop = s
    if head == q:
        return loop, s, q, 0
    # The reservation: the earliest time at which ``u`` usable nodes are open or ended.
    hk = kind[head]
    uh = kunits[hk]
    n_usable = 0
    for i in range(n):
        if usable[i]:
            n_usable += 1
    shadow = NO_END
    is_head = np.zeros(n, np.bool_)
    if n_usable >= uh:
        times = np.empty(n_usable, np.int64)
        c = 0
        for i in range(n):
            if usable[i]:
                times[c] = end[i]
                c += 1
        times.sort()
        shadow = times[uh - 1]
        c = 0
        for j in range(n):
            i = order[j]
            if usable[i] and end[i] <= shadow:
                is_head[i] = True
                head_nodes[c] = i
                c += 1
                if c == uh:
                    break
        for i in range(n):
            ended = (busy[i] == 1 or kind_on[i] >= 0) and end[i] <= shadow
            for r in range(nr):
                if ended:
                    spare[i, r] = capacity[i, r]
                elif kind_on[i] >= 0:
                    spare[i, r] = capacity[i, r] - kreq[kind_on[i], r]
                else:
                    spare[i, r] = free[i, r]
                if is_head[i]:
                    spare[i, r] -= kreq[hk, r]
    # The backfill: a job ending by the shadow time on any open nodes, a later one on open
    # nodes the head does not take.
    n_open_head = 0
    for i in range(n):
        if open_[i] and is_head[i]:
            n_open_head += 1
    for p in range(head + 1, q):
        kd = kind[p]
        u = kunits[kd]
        short = shadow == NO_END or now + wall[p] <= shadow
        if u > (n_open if short else n_open - n_open_head):
            continue
        pos[s] = p
        s += 1
        took = 0
        for j in range(n):
            i = order[j]
            if open_[i] and (short or not is_head[i]):
                open_[i] = False
                nodes[m] = i
                m += 1
                if is_head[i]:
                    n_open_head -= 1
                took += 1
                if took == u:
                    break
        n_open -= u
    return loop, s, head, shadow


def warm() -> None:
    """Load :func:`easy_pool` with the argument types EASY passes (its node order read-only)."""
    free = np.ones((2, 4), np.int64)
    busy = np.zeros(2, np.int64)
    usable = np.ones(2, np.bool_)
    order = np.arange(2, dtype=np.int64)
    order.flags.writeable = False
    kinds = np.ones((1, 6), np.int64)
    easy_pool(
        free, busy, free.copy(), usable, order, busy.copy(), 0, np.zeros(2, np.int64), kinds,
        np.zeros(5, np.int64), free.copy(),
    )  # fmt: skip
