"""The cooling model of the profit paper: outside temperature, its segments, and the PUE table.

Pure (no I/O; the file readers are in :mod:`wattsched.connectors.traces.cooling_files`).

- :class:`TemperatureProfile`: outside dry-bulb temperature over time, linear between points;
  a *daily* profile repeats every 24 h (the built-in winter and summer days), a *forecast*
  holds its first and last values outside its range.
- :func:`temperature_segments`: the paper's time segments, spans of near-uniform temperature
  (all within one 5 C band), each with its mean temperature.
- :class:`PueTable`: PUE by IT power and outside temperature (the paper's LUT), the IT power
  rounded to 500 W as the paper does, linear between the table's rows and columns.

The built-in days (:data:`WINTER_DAY`, :data:`SUMMER_DAY`) are sinusoids through a minimum at
06:00 and a maximum at 15:00: winter 0..8 C (mean 4 C), summer 20..34 C (mean 27 C), typical of
a continental European site such as the Curie machine's.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

DAY_S = 86_400
BAND_C = 5.0
"""Width of a temperature segment's band (the paper: 5 C, as its cooling model)."""
PUE_POWER_STEP_W = 500.0
"""The IT power is rounded to this before the table lookup (the paper: 500 W)."""


class CoolingModelError(ValueError):
    """A cooling model object was built from invalid values; the message names field and value."""


def _daily(
    t_min: float, t_max: float, hour_min: float = 6.0, hour_max: float = 15.0
) -> list[float]:
    """Hourly temperatures of a day: a cosine rising from ``t_min`` at ``hour_min`` to
    ``t_max`` at ``hour_max`` and falling back over the other hours."""
    out = []
    rise = hour_max - hour_min
    fall = 24.0 - rise
    for h in range(24):
        x = (h - hour_min) % 24.0
        phase = x / rise if x <= rise else 1.0 - (x - rise) / fall
        out.append(t_min + (t_max - t_min) * (1 - math.cos(math.pi * phase)) / 2)
    return out


@dataclass(frozen=True, slots=True)
class TemperatureProfile:
    """Outside temperature (C) at ``times`` (seconds), linear in between.

    ``daily``: ``times`` lie in ``[0, 86400)`` and the profile repeats every day (time 0 is
    midnight of the first day); otherwise the values hold before the first and after the last
    point (a forecast).
    """

    times: tuple[float, ...]
    celsius: tuple[float, ...]
    daily: bool = False
    name: str = "custom"

    def __post_init__(self) -> None:
        if not self.times or len(self.times) != len(self.celsius):
            raise CoolingModelError(
                f"TemperatureProfile {self.name}: needs as many times as temperatures, at least "
                f"one (got {len(self.times)} and {len(self.celsius)})"
            )
        if any(b <= a for a, b in itertools.pairwise(self.times)):
            raise CoolingModelError(f"TemperatureProfile {self.name}: times must increase")
        if self.daily and not (self.times[0] >= 0 and self.times[-1] < DAY_S):
            raise CoolingModelError(
                f"TemperatureProfile {self.name}: a daily profile's times lie in [0, 86400)"
            )
        bad = [c for c in self.celsius if not (math.isfinite(c) and -80 <= c <= 70)]
        if bad:
            raise CoolingModelError(
                f"TemperatureProfile {self.name}: celsius={bad[0]!r} must be within -80..70"
            )

    def at(self, t: float | np.ndarray) -> np.ndarray:
        """The temperature at time(s) ``t``."""
        x = np.asarray(t, dtype=float)
        xs = np.asarray(self.times, dtype=float)
        ys = np.asarray(self.celsius, dtype=float)
        if self.daily:
            # Close the day: the value at 86400 is the first point's of the next day.
            xs = np.concatenate([xs - DAY_S, xs, xs + DAY_S])
            ys = np.concatenate([ys, ys, ys])
            return np.interp(np.mod(x, DAY_S), xs, ys)
        return np.interp(x, xs, ys)

    def mean(self, start: float, end: float, step: float = 300.0) -> float:
        """The mean temperature over ``[start, end)`` (sampled every ``step`` seconds)."""
        if end <= start:
            return float(self.at(start))
        n = max(2, math.ceil((end - start) / step) + 1)
        return float(self.at(np.linspace(start, end, n)).mean())


WINTER_DAY = TemperatureProfile(
    tuple(float(h * 3600) for h in range(24)), tuple(_daily(0.0, 8.0)), daily=True, name="winter"
)
"""The built-in winter day: 0 C at 06:00 up to 8 C at 15:00."""
SUMMER_DAY = TemperatureProfile(
    tuple(float(h * 3600) for h in range(24)), tuple(_daily(20.0, 34.0)), daily=True, name="summer"
)
"""The built-in summer day: 20 C at 06:00 up to 34 C at 15:00."""
SEASONS = {"winter": WINTER_DAY, "summer": SUMMER_DAY}


@dataclass(frozen=True, slots=True)
class Segment:
    """A span ``[start, end)`` whose temperature stays within one band; its mean ``celsius``."""

    start: int
    end: int
    celsius: float


def temperature_segments(
    profile: TemperatureProfile,
    start: int,
    end: int,
    *,
    band_c: float = BAND_C,
    step_s: int = 300,
    cuts: Sequence[int] = (),
) -> list[Segment]:
    """Split ``[start, end)`` into segments of near-uniform temperature.

    The temperature is sampled every ``step_s``; a new segment begins where it leaves the band
    (``band_c`` wide, aligned on multiples of ``band_c``) of the segment's first sample, and at
    every time of ``cuts`` inside the span (tariff changes, day boundaries).
    """
    if end <= start:
        return []
    grid = np.arange(start, end, step_s, dtype=np.int64)
    temps = profile.at(grid)
    bands = np.floor(temps / band_c)
    change = np.flatnonzero(bands[1:] != bands[:-1]) + 1
    bounds = {int(start), int(end)}
    bounds.update(int(grid[i]) for i in change)
    bounds.update(int(c) for c in cuts if start < c < end)
    edges = sorted(bounds)
    return [
        Segment(a, b, profile.mean(a, b, step=min(step_s, max(1, b - a))))
        for a, b in itertools.pairwise(edges)
    ]


@dataclass(frozen=True, slots=True)
class PueTable:
    """PUE by IT power (rows, watts) and outside temperature (columns, C).

    Lookups round the IT power to :data:`PUE_POWER_STEP_W` (the paper's 500 W) and interpolate
    linearly between rows and between columns, holding the edge values beyond the table.
    """

    it_w: tuple[float, ...]
    celsius: tuple[float, ...]
    pue: tuple[tuple[float, ...], ...]
    """``pue[i][j]``: the PUE at ``it_w[i]`` and ``celsius[j]``."""
    name: str = "custom"

    def __post_init__(self) -> None:
        for label, axis in (("it_w", self.it_w), ("celsius", self.celsius)):
            if not axis or any(b <= a for a, b in itertools.pairwise(axis)):
                raise CoolingModelError(f"PueTable {self.name}: {label} must increase")
        if len(self.pue) != len(self.it_w) or any(len(r) != len(self.celsius) for r in self.pue):
            raise CoolingModelError(
                f"PueTable {self.name}: needs {len(self.it_w)} rows of {len(self.celsius)} values"
            )
        for i, row in enumerate(self.pue):
            for j, v in enumerate(row):
                if not (math.isfinite(v) and 1.0 <= v <= 5.0):
                    raise CoolingModelError(
                        f"PueTable {self.name}: pue at it_w={self.it_w[i]}, "
                        f"celsius={self.celsius[j]} is {v!r}; must be within 1..5"
                    )

    def lookup(self, it_w: float | np.ndarray, celsius: float | np.ndarray) -> np.ndarray:
        """The PUE at IT power(s) ``it_w`` (rounded to 500 W) and temperature(s) ``celsius``."""
        p = np.round(np.asarray(it_w, dtype=float) / PUE_POWER_STEP_W) * PUE_POWER_STEP_W
        c = np.asarray(celsius, dtype=float)
        p, c = np.broadcast_arrays(p, c)
        grid = np.asarray(self.pue, dtype=float)
        xs = np.asarray(self.it_w, dtype=float)
        ys = np.asarray(self.celsius, dtype=float)
        # Along temperature for every row, then along power: bilinear, edges held.
        by_row = np.stack([np.interp(c, ys, grid[i]) for i in range(len(xs))], axis=-1)
        pi = np.clip(np.searchsorted(xs, p, side="right") - 1, 0, len(xs) - 1)
        pj = np.clip(pi + 1, 0, len(xs) - 1)
        x0, x1 = xs[pi], xs[pj]
        w = np.where(x1 > x0, np.clip((p - x0) / np.where(x1 > x0, x1 - x0, 1.0), 0, 1), 0.0)
        lo = np.take_along_axis(by_row, pi[..., None], axis=-1)[..., 0]
        hi = np.take_along_axis(by_row, pj[..., None], axis=-1)[..., 0]
        return np.asarray(lo + w * (hi - lo))


@dataclass(frozen=True, slots=True)
class CoolingModel:
    """What the profit evaluator needs of the cooling: the weather and the plant's PUE."""

    temperature: TemperatureProfile
    pue: PueTable
