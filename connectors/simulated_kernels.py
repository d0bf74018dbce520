"""Compiled loops of the simulated cluster's books (numba): a start (its checks and its
booking) and an end (its release), one call each.

A start names one node per unit (an Atlas-sized job names hundreds); the books are numpy
arrays indexed like the node list (:class:`~wattsched.connectors.simulated_books.Books`),
and these kernels do a start's or an end's whole per-node work in one call: the units counted
per node once, the checks, the integer updates, and the power terms in the very same
floating-point operations and order as the Python loops they replaced
(``tests/connectors/test_simulated_books.py`` compares them bit for bit with the per-node
books of before). They return scalars only (a returned array costs more than a small start's
whole work): a start's placement is left in scratch arrays. Compiled on first use and cached
on disk beside this module.
"""

from __future__ import annotations

from numba import njit

from wattsched.scheduler.node_arrays import BoolArray, FloatArray, IntArray

EXCLUSIVE = 1
"""``flags`` bit: the job runs alone on its nodes."""
ANY_EXCLUSIVE = 2
"""``flags`` bit: some running job is exclusive (check ``held``)."""
CHECK_USABLE = 4
"""``flags`` bit: some node is not usable (check ``usable``)."""
FIRST_CORE = 8
"""``flags`` bit: some node has a first-core cost."""
MODEL_WATTS = 16
"""``flags`` bit: the job has no power estimate; a unit draws its node model's watts."""

FIRST_CORE_W, CORE_W, GPU_W, MIC_W = 0, 1, 2, 3
"""Columns of ``node_w``: each node's power model."""


@njit(cache=True, nogil=True)
def take(
    unit_ids: IntArray,
    req: IntArray,
    flat: float,
    flags: int,
    free: IntArray,
    busy: IntArray,
    held: IntArray,
    usable: BoolArray,
    node_w: FloatArray,
    pos: IntArray,
    out: IntArray,
    out_w: FloatArray,
) -> tuple[int, float]:
    """Check and book a start with node ``unit_ids[u]`` for unit ``u`` (-1: unknown node).

    Refused (-1, 0.0), nothing booked: an unknown node, an unusable node (``CHECK_USABLE``), a
    busy node for an ``EXCLUSIVE`` job, a node held by an exclusive job (``ANY_EXCLUSIVE``),
    a node short of ``req[r] * units`` of a resource. Else ``(m, watts)``: the ``m`` nodes in
    the order first named (``out[0, :m]``), their units (``out[1, :m]``) and the power of those
    units (``out_w[:m]``: ``flat`` W a unit, or its node model's with ``MODEL_WATTS``), and the
    power added node by node (the first core of a node it wakes, then its units). ``pos`` is
    scratch, one -1 per node (left as it was found).
    """
    ids = out[0]
    ks = out[1]
    m = 0
    ok = True
    for u in range(unit_ids.shape[0]):
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
    if not ok:
        return -1, 0.0
    exclusive = flags & EXCLUSIVE != 0
    check_usable = flags & CHECK_USABLE != 0
    any_exclusive = flags & ANY_EXCLUSIVE != 0
    for q in range(m):
        i = ids[q]
        clash = busy[i] if exclusive else (held[i] if any_exclusive else 0)
        if (check_usable and not usable[i]) or clash != 0:
            return -1, 0.0
        for r in range(req.shape[0]):
            if req[r] * ks[q] > free[i, r]:
                return -1, 0.0
    first_core = flags & FIRST_CORE != 0
    model = flags & MODEL_WATTS != 0
    watts = 0.0
    for q in range(m):
        i = ids[q]
        k = ks[q]
        if first_core and busy[i] == 0:
            watts += node_w[i, FIRST_CORE_W]
        busy[i] += k
        w = (_model_watts(req, node_w, i) if model else flat) * k
        for r in range(req.shape[0]):
            free[i, r] -= req[r] * k
        watts += w
        out_w[q] = w
        if exclusive:
            held[i] += 1
    return m, watts


@njit(cache=True, nogil=True)
def _model_watts(req: IntArray, node_w: FloatArray, i: int) -> float:
    """A unit's draw on node ``i`` from its model: the operations of ``NodePowerModel.
    unit_watts`` in their order (cores, GPUs, MICs)."""
    return req[0] * node_w[i, CORE_W] + req[2] * node_w[i, GPU_W] + req[3] * node_w[i, MIC_W]


@njit(cache=True, nogil=True)
def release(
    placed: IntArray,
    req: IntArray,
    flat: float,
    flags: int,
    free: IntArray,
    busy: IntArray,
    held: IntArray,
    usable: BoolArray,
    node_w: FloatArray,
    out_w: FloatArray,
    busy_w: float,
) -> tuple[int, float]:
    """Release what :func:`take` booked (``placed``: its ``out[:, :m]``, with the same
    ``req``, ``flat`` and ``flags``); returns the units freed on usable nodes and ``busy_w``
    minus the power stopped, term by term: node by node, its units, then its first core if it
    is idle now. The units' power of each node is worked out again as :func:`take` did (the
    very same operations on the same values: ``node_w`` never changes) and left in
    ``out_w[:m]``, as :func:`take` leaves it."""
    ids = placed[0]
    ks = placed[1]
    exclusive = flags & EXCLUSIVE != 0
    model = flags & MODEL_WATTS != 0
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
        out_w[q] = (_model_watts(req, node_w, i) if model else flat) * k
    first_core = flags & FIRST_CORE != 0
    for q in range(ids.shape[0]):
        busy_w -= out_w[q]
        if first_core and busy[ids[q]] == 0:
            busy_w -= node_w[ids[q], FIRST_CORE_W]
    return back, busy_w
