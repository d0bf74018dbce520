"""What the cluster's cooling and work cost and earn now, for ``/status`` and the metrics.

From each cycle's snapshot: the outside temperature (the ``[cooling]`` table's season profile
or forecast file, read on the cluster clock; the built-in days are in UTC), the PUE at the
estimated IT power (the table of the cooling type), the cooling power ``IT x (PUE - 1)``, and
the profit rate: what the running jobs earn per hour at the prices less what the IT and
cooling energy cost per hour at the tariff of now.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from wattsched.scheduler.cooling import CoolingModel
from wattsched.scheduler.model import Snapshot
from wattsched.scheduler.profit import Prices


@dataclass(frozen=True, slots=True)
class CoolingNow:
    """The cooling and the money at one cycle."""

    celsius: float
    pue: float
    cooling_w: float
    revenue_per_h: float
    energy_cost_per_h: float

    @property
    def profit_per_h(self) -> float:
        """Revenue less the energy cost, per hour."""
        return self.revenue_per_h - self.energy_cost_per_h


@dataclass(frozen=True)
class CoolingReporter:
    """The cooling model and prices of the ``[cooling]`` table."""

    model: CoolingModel
    prices: Prices
    kind: str = "air"

    def now(self, snap: Snapshot, it_w: float) -> CoolingNow:
        """The cooling and the money of ``snap`` at IT power ``it_w``."""
        celsius = float(self.model.temperature.at(snap.time))
        pue = float(self.model.pue.lookup(it_w, celsius))
        cooling_w = it_w * (pue - 1.0)
        running = [rj.job for rj in snap.running]
        if running:
            units = np.array([j.units for j in running], dtype=float)
            res = np.array([j.unit.as_tuple() for j in running], dtype=float).reshape(-1, 4)
            rate = self.prices.rate_per_s(
                res[:, 0] * units, res[:, 1] * units, res[:, 2] * units, res[:, 3] * units
            )
            revenue = float(rate.sum()) * 3600.0
        else:
            revenue = 0.0
        cost = (it_w + cooling_w) / 1000.0 * self.prices.energy_price(snap.time)
        return CoolingNow(celsius, pue, cooling_w, revenue, cost)


def build_reporter(
    kind: str, season: str | None, temperature_file: str | None, prices_file: str | None
) -> CoolingReporter | None:
    """The reporter of a ``[cooling]`` table (None for ``kind = "none"``)."""
    if kind == "none":
        return None
    from wattsched.connectors.traces.cooling_files import (
        builtin_pue_table,
        read_prices,
        temperature_source,
    )

    model = CoolingModel(
        temperature_source(None if temperature_file else season, temperature_file),
        builtin_pue_table(kind),
    )
    return CoolingReporter(model, read_prices(prices_file) if prices_file else Prices(), kind)


def summary_fields(
    reporter: CoolingReporter | None, snap: Snapshot, it_w: float
) -> dict[str, float | None]:
    """The cycle summary's cooling fields (None without a ``[cooling]`` table)."""
    if reporter is None:
        return {}
    c = reporter.now(snap, it_w)
    return {
        "celsius": c.celsius,
        "pue": c.pue,
        "cooling_w": c.cooling_w,
        "profit_per_h": c.profit_per_h,
    }
