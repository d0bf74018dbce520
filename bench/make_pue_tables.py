"""Write the built-in PUE tables (connectors/traces/data/pue_{air,hybrid}.csv).

How the defaults are made (also written in each file's header):
- The cooling overhead ``PUE - 1`` at the reference IT load is piecewise linear in the outside
  temperature. Its shape follows the public waterside-economised plant of Lei and Masanet
  (Energy 2020: PUE 1.088 up to 20 C, 1.167 at 25 C, 1.297 at 30 C, 1.343 at 35 C, 1.385 at 40 C)
  for hybrid cooling, and a compressor-bound air plant (a floor in the cold, growing steeply
  above 15 C) for air cooling.
- The knots below 12.5 C and above 17.5 C are then scaled so that the energy-weighted mean PUE
  over the built-in winter day (0..8 C) and summer day (20..34 C), at a constant reference load,
  equals the profit paper's measured means: air 1.11 / 1.43, hybrid 1.00 / 1.09.
- Below the reference load of 50 kW the overhead grows (fans and pumps run regardless of the
  load): times ``1 + 0.5 * (1 - P / 50 kW)``, up to 1.5 times at no load.

Run: ``.venv/bin/python bench/make_pue_tables.py`` (deterministic).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from wattsched.scheduler.cooling import SUMMER_DAY, WINTER_DAY

OUT = Path(__file__).resolve().parents[1] / "connectors" / "traces" / "data"
TEMPS = [-10, -5, 0, 5, 10, 15, 20, 25, 30, 35, 40, 45]
ROWS_KW = [0.5, 2, 5, 10, 20, 30, 50, 100, 200, 500, 1000]
REF_KW = 50.0
TARGETS = {"air": (0.11, 0.43), "hybrid": (0.00, 0.09)}
SHAPES = {
    "air": [0.09, 0.095, 0.10, 0.11, 0.13, 0.18, 0.26, 0.36, 0.44, 0.50, 0.56, 0.62],
    "hybrid": [0.0, 0.0, 0.0, 0.0, 0.0, 0.02, 0.045, 0.075, 0.10, 0.125, 0.15, 0.175],
}


def day_mean(overhead: np.ndarray, day: object) -> float:
    t = np.arange(0, 86400, 60)
    temps = day.at(t)  # type: ignore[attr-defined]
    return float(np.interp(temps, TEMPS, overhead).mean())


def calibrated(kind: str) -> np.ndarray:
    base = np.array(SHAPES[kind], dtype=float)
    cold = np.array([t <= 12.5 for t in TEMPS])
    hot = np.array([t >= 17.5 for t in TEMPS])
    winter, summer = TARGETS[kind]
    out = base.copy()
    w = day_mean(base, WINTER_DAY)
    if w > 0:
        out[cold] *= winter / w
    s = day_mean(base, SUMMER_DAY)
    out[hot] *= summer / s
    mid = ~cold & ~hot
    out[mid] = np.interp(np.array(TEMPS)[mid], np.array(TEMPS)[~mid], out[~mid])
    return out


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    for kind in ("air", "hybrid"):
        over = calibrated(kind)
        lines = [f"# PUE table for {kind} cooling: rows IT power (kW), columns outside C."]
        lines += ["# " + ln for ln in (__doc__ or "").strip().splitlines()[2:13]]
        lines.append(
            f"# Check: mean PUE winter day {1 + day_mean(over, WINTER_DAY):.3f}, "
            f"summer day {1 + day_mean(over, SUMMER_DAY):.3f} at >= {REF_KW:g} kW."
        )
        lines.append("it_kw," + ",".join(str(t) for t in TEMPS))
        for kw in ROWS_KW:
            factor = 1 + 0.5 * max(0.0, 1 - kw / REF_KW)
            lines.append(f"{kw:g}," + ",".join(f"{1 + o * factor:.4f}" for o in over))
        (OUT / f"pue_{kind}.csv").write_text("\n".join(lines) + "\n")
        print(kind, (OUT / f"pue_{kind}.csv"))


if __name__ == "__main__":
    main()
