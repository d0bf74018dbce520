"""The HGFS parameter vector NSGA-II searches, and its bounds.

A vector ``x`` of ``7 + 2N`` reals (N fuzzy sets over node idle time, 3 by default):

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
5+2N      ``need_on``                0 .. 1            rule 1b: share of the queue's need
6+2N      ``spare_on``               0 .. 8            rule 4: idle nodes kept ready (int)
========  =========================  ================  ====================================

The last two genes are rules this project adds to the paper's (see ``docs/powerctl.md``): with
``need_on`` 1 and a step of the weights at ``t`` seconds, HGFS powers nodes on and off as the
idle-timeout policy with ``idle_s = t`` does, so the search can reach the baselines.

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
SPARE_MAX = 8.0


def n_genes(n_sets: int = 3) -> int:
    """Length of the vector for ``n_sets`` fuzzy sets."""
    return 7 + 2 * n_sets


def bounds(n_sets: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper bounds of every gene."""
    if n_sets < 1:
        raise ValueError(f"n_sets={n_sets!r} must be >= 1")
    lo = [0.0, 0.0, 0.0, 0.0, 0.0, 0.0] + [STEP_MIN_S] * (n_sets - 1) + [0.0] * (n_sets + 2)
    hi = (
        [WAIT_MAX_S, QUEUE_MAX, 1.0, 1.0, MIN_ON_MAX, FIRST_CENTER_MAX_S]
        + [STEP_MAX_S] * (n_sets - 1)
        + [1.0] * (n_sets + 1)
        + [SPARE_MAX]
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
        need_on=float(round(v[5 + 2 * n_sets], 6)),
        spare_on=round(float(v[6 + 2 * n_sets])),
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
            p.need_on,
            float(p.spare_on),
        ],
        dtype=float,
    )[: n_genes(n)]


def idle_timeout_like(idle_s: float, n_sets: int = 3) -> HGFSParams | None:
    """HGFS parameters that act as the idle-timeout policy with ``idle_s`` (rule 1b on the
    whole queue, the weights a step from 0 to 1 over the last minute before ``idle_s``, rules
    2 and 3 out of reach), or None when ``n_sets`` sets cannot express it within the bounds."""
    first = idle_s - STEP_MIN_S * (n_sets - 1)
    if n_sets < 2 or first < 0 or first > FIRST_CENTER_MAX_S:
        return None
    return HGFSParams(
        wait_on_s=WAIT_MAX_S,
        queue_on=int(QUEUE_MAX),
        min_on=1,
        centers=tuple(first + STEP_MIN_S * i for i in range(n_sets)),
        weights=(0.0,) * (n_sets - 1) + (1.0,),
        need_on=1.0,
    )
