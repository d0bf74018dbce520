"""Compiled sums of the HGFS fuzzy rules (numba): how many idle nodes the rules power off,
and after how many periods that count grows.

A replay asks the policy at every event, each time over the idle times of up to a thousand
nodes, and the next count change over every period until the truths saturate. These loops do
the arithmetic of :meth:`~wattsched.powerctl.hgfs.HGFSParams.truth` in the same order of
operations (the same floats: ``tests/powerctl/test_hgfs.py`` checks them bit for bit against
the scalar rule), sum in the order given, and stop at the first period that grows the count.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

FloatArray = np.ndarray


@njit(cache=True, nogil=True)
def truth(centers: FloatArray, weights: FloatArray, x: float) -> float:
    """The truth of "power it off" after ``x`` idle seconds (strong triangular partition)."""
    n = centers.shape[0]
    if x < centers[0]:
        x = centers[0]
    if x > centers[n - 1]:
        x = centers[n - 1]
    if n == 1:
        return weights[0]
    j = 0  # the first set whose peak is at or beyond x (numpy's searchsorted, side left)
    while j < n and centers[j] < x:
        j += 1
    i = min(max(j - 1, 0), n - 2)
    lo = centers[i]
    hi = centers[i + 1]
    d = hi - lo
    return ((hi - x) / d) * weights[i] + ((x - lo) / d) * weights[i + 1]


@njit(cache=True, nogil=True)
def off_count(centers: FloatArray, weights: FloatArray, idle: FloatArray, shift: float) -> int:
    """The floor of the truths of ``idle + shift`` summed in order (plus 1e-9 for rounding)."""
    s = 0.0
    for k in range(idle.shape[0]):
        s += truth(centers, weights, idle[k] + shift)
    return math.floor(s + 1e-9)


@njit(cache=True, nogil=True)
def next_change(centers: FloatArray, weights: FloatArray, idle: FloatArray, period: int) -> int:
    """The first multiple of ``period`` after which ``idle`` gives a larger :func:`off_count`,
    or 0 when the truths saturate first (``idle`` not empty)."""
    now = off_count(centers, weights, idle, 0.0)
    least = idle[0]
    for k in range(1, idle.shape[0]):
        if idle[k] < least:
            least = idle[k]
    steps = math.ceil(max(0.0, centers[centers.shape[0] - 1] - least) / period)
    for k in range(1, steps + 1):
        if off_count(centers, weights, idle, float(k * period)) > now:
            return k * period
    return 0


def warm() -> None:
    """Load these kernels now (numba's cached machine code), at start-up rather than in the
    first replay's policy step, with the argument types :class:`~wattsched.powerctl.hgfs.
    HGFSParams` passes: float arrays (C order, writable), a float shift, an integer period.
    ``tests/powerctl/test_hgfs.py`` checks that a HGFS replay compiles nothing more."""
    c = np.array([0.0, 1.0])
    w = np.array([0.0, 1.0])
    idle = np.zeros(1)
    off_count(c, w, idle, 0.0)
    next_change(c, w, idle, 1)
