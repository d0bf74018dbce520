"""The profit of a schedule, as the profit and cooling paper scores it (its equation 3).

Over the time segments ``s`` of near-uniform outside temperature
(:func:`~wattsched.scheduler.cooling.temperature_segments`, also cut where the energy tariff
changes)::

    profit = sum_s  G_s * K1  -  (W_s + J_s) * K2_s
    G_s    = sum_i execTime(i, s) * resourceCost(i)     accounted resource use, priced
    W_s    = sum_i execTime(i, s) * power_i             IT energy of the jobs (kWh)
    J_s    = W_s * (PUE(P'_s, T_s) - 1)                 cooling energy (kWh)
    P'_s   = W_s / (s.end - s.start), rounded to 500 W  mean IT power of the segment

``resourceCost`` prices core-hours, GPU-hours, MIC-hours and GB-hours of memory
(:class:`Prices`); ``K2_s`` is the energy price of the segment (constant, or a daily tariff).
Pure and vectorised (numpy over jobs, one pass per segment): one evaluator scores the schedule
of any dispatcher, replay or search.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from wattsched.scheduler.cooling import DAY_S, CoolingModel, Segment, temperature_segments

J_PER_KWH = 3.6e6


class ProfitModelError(ValueError):
    """A price or tariff is invalid; the message names the field and value."""


@dataclass(frozen=True, slots=True)
class Tariff:
    """A daily energy tariff: from ``times[k]`` (seconds after midnight) on, ``prices[k]`` per
    kWh, until the next time; the last price runs through midnight to the first time."""

    times: tuple[int, ...]
    prices: tuple[float, ...]

    def __post_init__(self) -> None:
        if not self.times or len(self.times) != len(self.prices):
            raise ProfitModelError("Tariff: needs as many times as prices, at least one")
        if any(b <= a for a, b in itertools.pairwise(self.times)):
            raise ProfitModelError(f"Tariff: times={self.times!r} must increase")
        if not (self.times[0] >= 0 and self.times[-1] < DAY_S):
            raise ProfitModelError(f"Tariff: times={self.times!r} must lie in [0, 86400)")
        for p in self.prices:
            if not (math.isfinite(p) and p >= 0):
                raise ProfitModelError(f"Tariff: price={p!r} must be a number >= 0")

    def at(self, t: int) -> float:
        """The price per kWh at time ``t`` (time 0 is a midnight)."""
        k = int(np.searchsorted(np.asarray(self.times), t % DAY_S, side="right")) - 1
        return self.prices[k]  # k = -1 wraps to the last price: before the first change

    def changes(self, start: int, end: int) -> list[int]:
        """Times in ``(start, end)`` at which the price changes."""
        if len(self.times) < 2:
            return []
        out: list[int] = []
        for day in range(start // DAY_S, end // DAY_S + 1):
            out.extend(day * DAY_S + t for t in self.times if start < day * DAY_S + t < end)
        return out


@dataclass(frozen=True, slots=True)
class Prices:
    """What work earns and energy costs, in one currency.

    Revenue (the paper's ``G_s * K1``): ``k1`` times the accounted resource use, priced per
    core-hour, GPU-hour, MIC-hour and GB-hour of memory (a centre's accounting; the defaults
    are examples of the order of magnitude of public HPC price lists). Cost (``K2``): the
    energy price per kWh, or the daily ``tariff`` when given.
    """

    core_hour: float = 0.02
    gpu_hour: float = 0.40
    mic_hour: float = 0.10
    mem_gb_hour: float = 0.0
    k1: float = 1.0
    energy_kwh: float = 0.15
    tariff: Tariff | None = None

    def __post_init__(self) -> None:
        for name in ("core_hour", "gpu_hour", "mic_hour", "mem_gb_hour", "k1", "energy_kwh"):
            v = getattr(self, name)
            if not (isinstance(v, int | float) and math.isfinite(v) and v >= 0):
                raise ProfitModelError(f"Prices: {name}={v!r} must be a number >= 0")

    def rate_per_s(self, cores: np.ndarray, mem_mb: np.ndarray, gpus: np.ndarray,
                   mics: np.ndarray) -> np.ndarray:  # fmt: skip
        """Accounted money per second of run of jobs using these resources (all units)."""
        per_h = (
            cores * self.core_hour
            + gpus * self.gpu_hour
            + mics * self.mic_hour
            + mem_mb / 1024.0 * self.mem_gb_hour
        )
        return np.asarray(per_h, dtype=float) * self.k1 / 3600.0

    def energy_price(self, t: int) -> float:
        """K2 at time ``t``."""
        return self.tariff.at(t) if self.tariff is not None else self.energy_kwh


@dataclass(frozen=True, slots=True)
class Executions:
    """Jobs as they run: start and end (s), IT power while running (W, all units), and the
    resources they hold (all units). Parallel numpy arrays, one entry a job."""

    start: np.ndarray
    end: np.ndarray
    power_w: np.ndarray
    cores: np.ndarray
    mem_mb: np.ndarray
    gpus: np.ndarray
    mics: np.ndarray

    @classmethod
    def of(
        cls,
        rows: Sequence[tuple[int, int, float, int, int, int, int]],
    ) -> Executions:
        """From ``(start, end, power_w, cores, mem_mb, gpus, mics)`` tuples."""
        a = np.asarray(rows, dtype=float).reshape(-1, 7)
        return cls(a[:, 0], a[:, 1], a[:, 2], a[:, 3], a[:, 4], a[:, 5], a[:, 6])

    def __len__(self) -> int:
        return int(self.start.shape[0])


@dataclass(frozen=True, slots=True)
class ProfitReport:
    """A schedule's profit and its parts over ``[start, end)``; per-segment figures too."""

    start: int
    end: int
    profit: float
    revenue: float
    energy_cost: float
    it_kwh: float
    cooling_kwh: float
    segments: tuple[Segment, ...] = ()
    segment_pue: tuple[float, ...] = ()
    segment_profit: tuple[float, ...] = field(default=())

    @property
    def mean_pue(self) -> float:
        """Energy-weighted PUE: (IT + cooling) / IT energy (1.0 with no IT energy)."""
        return 1.0 + self.cooling_kwh / self.it_kwh if self.it_kwh > 0 else 1.0

    def as_metrics(self) -> dict[str, float]:
        """The figures a replay's metrics JSON carries."""
        return {
            "profit": self.profit,
            "revenue": self.revenue,
            "energy_cost": self.energy_cost,
            "cooling_kwh": self.cooling_kwh,
            "mean_pue": self.mean_pue,
        }


def evaluate_profit(
    runs: Executions,
    cooling: CoolingModel,
    prices: Prices,
    *,
    start: int | None = None,
    end: int | None = None,
) -> ProfitReport:
    """Score a schedule: profit, revenue, energy cost, IT and cooling energy.

    Only what runs inside ``[start, end)`` counts (default: from the first start to the last
    end): a job running across the horizon earns and costs its share inside it.
    """
    n = len(runs)
    if n == 0 and (start is None or end is None):
        return ProfitReport(0, 0, 0.0, 0.0, 0.0, 0.0, 0.0)
    t0 = int(start if start is not None else runs.start.min())
    t1 = int(end if end is not None else runs.end.max())
    cuts = prices.tariff.changes(t0, t1) if prices.tariff is not None else []
    segs = temperature_segments(cooling.temperature, t0, t1, cuts=cuts)
    rate = prices.rate_per_s(runs.cores, runs.mem_mb, runs.gpus, runs.mics)
    revenue = cost = it_j = cool_j = 0.0
    seg_pue: list[float] = []
    seg_profit: list[float] = []
    for s in segs:
        overlap = np.clip(np.minimum(runs.end, s.end) - np.maximum(runs.start, s.start), 0, None)
        w_j = float(overlap @ runs.power_w)
        g = float(overlap @ rate)
        pue = float(cooling.pue.lookup(w_j / (s.end - s.start), s.celsius))
        j_j = w_j * (pue - 1.0)
        c = (w_j + j_j) / J_PER_KWH * prices.energy_price(s.start)
        revenue += g
        cost += c
        it_j += w_j
        cool_j += j_j
        seg_pue.append(pue)
        seg_profit.append(g - c)
    return ProfitReport(
        t0,
        t1,
        revenue - cost,
        revenue,
        cost,
        it_j / J_PER_KWH,
        cool_j / J_PER_KWH,
        tuple(segs),
        tuple(seg_pue),
        tuple(seg_profit),
    )
