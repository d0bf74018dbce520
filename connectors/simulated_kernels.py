"""Compiled loops of the simulated cluster's books (numba): a start's check and booking, an
end's release.

A start names one node per unit (an Atlas-sized job names hundreds); the books are numpy
arrays indexed like the node list (:class:`~wattsched.connectors.simulated_books.Books`),
and each of these kernels does a start's or an end's whole per-node work in one call: the
units counted per node once, the checks, the integer updates, and the power terms in the
very same floating-point operations and order as the Python loops they replaced
(``tests/connectors/test_simulated_books.py`` compares them bit for bit with the per-node
books of before). Compiled on first use and cached on disk beside this module.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from wattsched.scheduler.node_arrays import BoolArray, FloatArray, IntArray


@njit(cache=True, nogil=True)
def accept(
    unit_ids: IntArray,
    req: IntArray,
    exclusive: bool,
    any_exclusive: bool,
    check_usable: bool,
    free: IntArray,
    busy: IntArray,
    held: IntArray,
    usable: BoolArray,
    pos: IntArray,
) -> tuple[bool, IntArray, IntArray]:
    """Whether a start with node ``unit_ids[u]`` for unit ``u`` (-1: an unknown node) fits the
    books, and its nodes in the order first named with their units.

    Refused: an unknown node, an unusable node (``check_usable``), a busy node for an
    ``exclusive`` job, a node held by an exclusive job (``held``, when ``any_exclusive``), a
    node short of ``req[r] * units`` of a resource. ``pos`` is scratch, one -1 per node (left
    as it was found).
    """
    n = unit_ids.shape[0]
    ids = np.empty(n, np.int64)
    ks = np.empty(n, np.int64)
    m = 0
    ok = True
    for u in range(n):
        i = unit_ids[u]
        if i < 0:
            ok = False
            break
        p = pos[i]
        if p < 0:
            pos[i] = m
            ids[m] = i
            ks[m] = 1
            m += 1
        else:
            ks[p] += 1
    for q in range(m):
        pos[ids[q]] = -1
    if ok:
        for q in range(m):
            i = ids[q]
            k = ks[q]
            clash = busy[i] if exclusive else (held[i] if any_exclusive else 0)
            if (check_usable and not usable[i]) or clash != 0:
                ok = False
            else:
                for r in range(req.shape[0]):
                    if req[r] * k > free[i, r]:
                        ok = False
            if not ok:
                break
    return ok, ids[:m], ks[:m]


@njit(cache=True, nogil=True)
def book(
    ids: IntArray,
    ks: IntArray,
    req: IntArray,
    flat: float,
    node_w: FloatArray,
    exclusive: bool,
    free: IntArray,
    busy: IntArray,
    held: IntArray,
    first_core: FloatArray,
    has_first_core: bool,
) -> tuple[float, FloatArray]:
    """Book ``ks[q]`` units on node ``ids[q]``; returns the power added (node by node: the
    first core of a node it wakes, then its units) and each node's units' power.

    A unit draws ``flat`` W, or ``node_w[q]`` on node ``ids[q]`` when ``node_w`` is not empty.
    """
    m = ids.shape[0]
    uwks = np.empty(m, np.float64)
    per_node = node_w.shape[0] > 0
    watts = 0.0
    for q in range(m):
        i = ids[q]
        k = ks[q]
        if has_first_core and busy[i] == 0:
            watts += first_core[i]
        busy[i] += k
        u = (node_w[q] if per_node else flat) * k
        for r in range(req.shape[0]):
            free[i, r] -= req[r] * k
        watts += u
        uwks[q] = u
        if exclusive:
            held[i] += 1
    return watts, uwks


@njit(cache=True, nogil=True)
def release(
    ids: IntArray,
    ks: IntArray,
    uwks: FloatArray,
    req: IntArray,
    exclusive: bool,
    free: IntArray,
    busy: IntArray,
    held: IntArray,
    usable: BoolArray,
    first_core: FloatArray,
    has_first_core: bool,
    busy_w: float,
) -> tuple[int, float]:
    """Release what :func:`book` booked; returns the units freed on usable nodes and
    ``busy_w`` minus the power stopped, term by term: node by node, its units, then its first
    core if the node is idle now."""
    back = 0
    for q in range(ids.shape[0]):
        i = ids[q]
        k = ks[q]
        busy[i] -= k
        for r in range(req.shape[0]):
            free[i, r] += req[r] * k
        if usable[i]:
            back += k
        if exclusive:
            held[i] -= 1
    for q in range(ids.shape[0]):
        busy_w -= uwks[q]
        if has_first_core and busy[ids[q]] == 0:
            busy_w -= first_core[ids[q]]
    return back, busy_w
