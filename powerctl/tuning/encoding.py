"""The HGFS parameter vector NSGA-II searches, and its bounds.

A vector ``x`` of ``5 + 2N`` reals (N fuzzy sets over node idle time, 3 by default):

========  =========================  ================  ====================================
index     gene                       bounds            decoded as
========  =========================  ================  ====================================
0         ``wait_on_s``              0 .. 14,400 s     rule 2: one node on above this mean wait
1         ``queue_on``               0 .. 200          rule 2: one node on above this queue (int)
2         ``wait_off`` fraction      0 .. 1            ``wait_off_s = f * wait_on_s``
3         ``queue_off`` fraction     0 .. 1            ``queue_off = round(f * queue_on)``
4         ``min_on``                 0 .. 4            nodes kept on (int)
5         first centre               0 .. 3,600 s      ``centers[0]``
6..4+N    centre steps               60 .. 14,400 s    ``centers[i] = centers[i-1] + step``
5+N..     weights                    0 .. 1            the N rule weights
========  =========================  ================  ====================================

Decoding always yields valid :class:`~wattsched.powerctl.hgfs.HGFSParams` (fractions keep
``wait_off_s <= wait_on_s`` and ``queue_off <= queue_on``; steps keep the centres increasing),
so no candidate is wasted on a constraint violation.
"""

from __future__ import annotations

import numpy as np

from wattsched.powerctl.hgfs import HGFSParams

WAIT_MAX_S = 14_400.0
QUEUE_MAX = 200.0
MIN_ON_MAX = 4.0
FIRST_CENTER_MAX_S = 3_600.0
STEP_MIN_S, STEP_MAX_S = 60.0, 14_400.0


def n_genes(n_sets: int = 3) -> int:
    """Length of the vector for ``n_sets`` fuzzy sets."""
    return 5 + 2 * n_sets


def bounds(n_sets: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper bounds of every gene."""
    if n_sets < 1:
        raise ValueError(f"n_sets={n_sets!r} must be >= 1")
    lo = [0.0, 0.0, 0.0, 0.0, 0.0, 0.0] + [STEP_MIN_S] * (n_sets - 1) + [0.0] * n_sets
    hi = (
        [WAIT_MAX_S, QUEUE_MAX, 1.0, 1.0, MIN_ON_MAX, FIRST_CENTER_MAX_S]
        + [STEP_MAX_S] * (n_sets - 1)
        + [1.0] * n_sets
    )
    return np.array(lo), np.array(hi)


def decode(x: np.ndarray | list[float], n_sets: int = 3) -> HGFSParams:
    """The HGFS parameters of vector ``x`` (clipped to the bounds)."""
    lo, hi = bounds(n_sets)
    v = np.clip(np.asarray(x, dtype=float), lo, hi)
    if v.shape != lo.shape:
        raise ValueError(f"vector of {v.shape[0]} genes, expected {lo.shape[0]} for {n_sets} sets")
    wait_on = float(round(v[0], 3))
    queue_on = round(float(v[1]))
    centers = [float(round(v[5], 3))]
    for step in v[6 : 5 + n_sets]:
        centers.append(float(round(centers[-1] + step, 3)))
    weights = tuple(float(round(w, 6)) for w in v[5 + n_sets : 5 + 2 * n_sets])
    return HGFSParams(
        wait_on_s=wait_on,
        queue_on=queue_on,
        wait_off_s=float(round(v[2] * wait_on, 3)),
        queue_off=round(float(v[3]) * queue_on),
        min_on=round(float(v[4])),
        centers=tuple(centers),
        weights=weights,
    )


def encode(p: HGFSParams) -> np.ndarray:
    """The vector of ``p`` (its number of sets taken from ``p.centers``)."""
    n = len(p.centers)
    steps = [b - a for a, b in zip(p.centers, p.centers[1:], strict=False)]
    return np.array(
        [
            p.wait_on_s,
            float(p.queue_on),
            p.wait_off_s / p.wait_on_s if p.wait_on_s > 0 else 0.0,
            p.queue_off / p.queue_on if p.queue_on > 0 else 0.0,
            float(p.min_on),
            p.centers[0],
            *steps,
            *p.weights,
        ],
        dtype=float,
    )[: n_genes(n)]
