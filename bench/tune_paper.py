"""EECluster's Tables 2-6 beside ours, in the same energy-saved measure (its equation (4)).

Used by ``bench/tune_scenarios.py``. Each of the paper's rows is a preference ``Hybrid GFS (q,
r)``: the configuration with the most energy saved on validation at QoS <= q and at most r
reconfigurations, reported on test. We pick on our front with the paper's QoS bound ``q`` and
no reconfiguration bound (the paper's ``r`` counts switches of a cluster whose size and test
span, 6 months, are not ours), and report it on our test part beside the paper's row and the
best idle timeout at equal or better QoS. Scenarios 1-4 face the paper's Tables 2-5; KTH-SP2
and the Curie sample face its real trace (Table 6, the CMS cluster: another trace, for scale).
"""

from __future__ import annotations

import contextlib
from typing import Any

PaperRow = tuple[float, int, float, float, float, int]
"""(QoS bound, reconfiguration bound, QoS, energy saved %, MWh, reconfigurations) on test."""

PAPER_TABLES: dict[str, tuple[str, list[PaperRow]]] = {
    "s1": ("Table 2, scenario 1", [
        (0.0, 1000, 0.0, 28.62, 8.30, 487), (0.005, 1250, 4.25e-3, 33.19, 9.63, 945),
        (0.01, 1500, 9.32e-3, 35.63, 10.34, 1412), (0.015, 2000, 1.35e-2, 37.16, 10.78, 1921),
        (0.02, 3000, 1.92e-2, 38.50, 11.17, 2835),
    ]),
    "s2": ("Table 3, scenario 2", [
        (0.0, 500, 0.0, 60.07, 17.43, 218), (0.005, 500, 4.88e-3, 65.46, 18.99, 384),
        (0.01, 750, 9.45e-3, 69.50, 20.17, 635), (0.015, 1000, 1.43e-2, 71.61, 20.78, 838),
        (0.02, 1500, 1.84e-2, 73.44, 21.31, 1082),
    ]),
    "s3": ("Table 4, scenario 3", [
        (0.0, 500, 0.0, 27.99, 8.12, 194), (0.005, 500, 2.19e-3, 41.53, 12.05, 342),
        (0.01, 750, 8.12e-3, 50.73, 14.72, 671), (0.015, 1000, 1.17e-2, 56.02, 16.25, 1006),
        (0.02, 1500, 1.69e-2, 59.44, 17.25, 1334),
    ]),
    "s4": ("Table 5, scenario 4", [
        (0.0, 500, 0.0, 25.00, 7.25, 173), (0.005, 500, 2.48e-3, 46.09, 13.37, 367),
        (0.01, 750, 4.23e-3, 51.50, 14.94, 473), (0.015, 1000, 1.43e-2, 60.06, 17.42, 1010),
        (0.02, 1500, 1.92e-2, 63.51, 18.43, 1253),
    ]),
    "cms": ("Table 6, the CMS cluster's trace (not this one: for scale)", [
        (0.0, 100, 0.0, 46.67, 13.38, 42), (0.05, 500, 4.46e-2, 64.26, 18.42, 293),
        (0.10, 500, 6.82e-2, 68.60, 19.67, 361), (0.25, 750, 1.49e-1, 70.34, 20.17, 363),
        (0.50, 750, 1.95e-1, 75.54, 21.66, 590),
    ]),
}  # fmt: skip
"""The paper's Tables 2-6 (its test sets), as printed."""


def table_for(name: str) -> tuple[str, list[PaperRow]]:
    """The paper's table set beside workload ``name`` (the real traces face Table 6)."""
    return PAPER_TABLES.get(name, PAPER_TABLES["cms"])


def paper_rows(name: str, doc: dict[str, Any], test_of: Any) -> list[dict[str, Any]]:
    """For each of the paper's rows beside ``name``: our pick on front ``doc`` at its QoS
    bound (no reconfiguration bound), replayed on test by ``test_of(params_json)``."""
    from wattsched.powerctl.tuning.front import PickError, pick

    out = []
    for q, r, qos, saved, mwh, reconf in table_for(name)[1]:
        row: dict[str, Any] = {"paper": [q, r, qos, saved, mwh, reconf], "test": None}
        with contextlib.suppress(PickError):  # no point at that QoS: "test" stays None
            row["test"] = test_of(pick(doc, q, float("inf"))["params"])
        out.append(row)
    return out


def paper_table(res: dict[str, Any], best_idle_at: Any) -> list[str]:
    """The Markdown lines of the paper's rows beside ours on ``res``'s test part."""
    title, _ = table_for(res["name"])
    ceiling = 100 * res["ceiling_test"]["paper_saved_fraction"]
    lines = [
        f"The paper's {title} beside ours, the same measure (eq. (4)); ours picked at the "
        f"paper's QoS bound (no reconfiguration bound), on test. Our ceiling: {ceiling:.1f} %.",
        "",
        "| paper (q, r) | paper QoS | paper saved | paper reconf. | our QoS | our saved (eq. 4)"
        " | our physical | our reconf. | best idle timeout at our QoS | paper - our ceiling |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in res.get("paper_rows", []):
        q, r, qos, saved, _, reconf = row["paper"]
        head = f"| ({q:g}, {r}) | {qos:.3g} | {saved:.1f} % | {reconf} |"
        gap = f"{saved - ceiling:+.1f} pts"
        t = row["test"]
        if t is None:
            lines.append(f"{head} no point at QoS <= {q:g} on validation | | | | | {gap} |")
            continue
        best = best_idle_at(res, t["qos_p90"])
        idle = f"{best[0]}: {100 * best[1]['paper_saved_fraction']:.1f} %" if best else "none"
        lines.append(
            f"{head} {t['qos_p90']:.3g} | {100 * t['paper_saved_fraction']:.1f} % | "
            f"{100 * t['saved_fraction']:.1f} % ({t['saved_kwh']:.0f} kWh) | "
            f"{t['reconfigurations']} | {idle} | {gap} |"
        )
    return [*lines, ""]
