"""Render bench/profit_curie.py's JSON records as the paper's tables and a plot.

Usage: ``.venv/bin/python bench/profit_curie_report.py A.json [B.json ...] --md OUT.md
--png OUT.png``. Records are merged by scenario (a later file's runs win). Writes the tables
(the paper's Table 1, 2, 3, the runs, per-day MultiSearch seconds, what DelaySearch and
RelaxationSearch changed) and the cumulative profit by day; the reading is added by hand.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any

CORES = 300 * 32
CORE_HOUR = 0.02  # the default Prices: the bench passes no --prices
SEARCHES = ("multisearch", "delaysearch", "relaxsearch")


def pct(a: float, b: float) -> str:
    return f"{100 * (a / b - 1):+.2f} %"


def best_rule(res: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    rules = {k: v for k, v in res.items() if k.startswith("rules") and v and "complete" not in k}
    name = max(rules, key=lambda k: rules[k]["profit"])
    return name, rules[name]


def improved_days(m: dict[str, Any]) -> tuple[int, int, float]:
    days = m.get("per_day", [])
    up = sum(1 for d in days if d["profit"] > d["multisearch_profit"] + 1e-9)
    worst = min((d["profit"] - d["multisearch_profit"] for d in days), default=0.0)
    return up, len(days), worst


def render(records: list[dict[str, Any]]) -> tuple[list[str], dict[str, dict[str, Any]]]:
    merged: dict[str, dict[str, Any]] = {}
    for rec in records:
        for key, res in rec["results"].items():
            merged.setdefault(key, {}).update({k: v for k, v in res.items() if v})
    out = ["| cooling:season | scheduler | profit (horizon) | vs best rule | revenue | "
           "mean PUE | jobs started | s a day (mean / max) | makespan s | load (start, end) |",
           "|---|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    t1 = ["| Cooling | Season | Profit (%) | Makespan (%) | PUE best search | PUE best RB |",
          "|---|---|---|---|---|---|"]  # fmt: skip
    t2 = [
        "| Cooling | Season | Average daily profit increment | best search |",
        "|---|---|---|---|",
    ]
    t3 = ["| Cooling | Season | Impr./s MultiSearch | Impr./s DelaySearch | Impr./s "
          "RelaxationSearch |", "|---|---|---|---|---|"]  # fmt: skip
    secs = ["| cooling:season | days | MultiSearch s a day: mean | median | max | days > 60 s |",
            "|---|---|---|---|---|---|"]  # fmt: skip
    extra = ["| cooling:season | search | days improved on MultiSearch | worst day vs MultiSearch "
             "|",
             "|---|---|---|---|"]  # fmt: skip
    bound = ["| cooling:season | best rule | revenue / full-machine revenue | profit bound "
             "(every core busy from the first submission) | bound vs best rule |",
             "|---|---|---|---|---|"]  # fmt: skip
    for key, res in merged.items():
        cooling, season = key.split(":")
        rb_name, rb = best_rule(res)
        for name, m in res.items():
            ms = m.get("makespan_s") if m.get("complete") else None
            out.append(
                f"| {key} | {name} | {m['profit']:,.1f} | {pct(m['profit'], rb['profit'])} | "
                f"{m['revenue']:,.1f} | {m['mean_pue']:.3f} | {m['jobs']:,} | "
                f"{m['day_seconds_mean']:.1f} / {m['day_seconds_max']:.1f} | "
                f"{f'{ms:,.0f}' if ms else 'n/m'} | "
                f"{m['load'][0]:.1f}, {m['load'][1]:.1f} |"
            )
        found = [s for s in SEARCHES if s in res]
        if found:
            bs = max(found, key=lambda s: res[s]["profit"])
            b = res[bs]
            rb_full = res.get(f"{rb_name}:complete")
            mk = "n/m (replays stop at the horizon)"
            if b.get("complete") and rb_full:
                mk = pct(rb_full["makespan_s"], b["makespan_s"])
            t1.append(f"| {cooling} | {season} | {100 * (b['profit'] / rb['profit'] - 1):.2f} | "
                      f"{mk} | {b['mean_pue']:.3f} | {rb['mean_pue']:.3f} |")  # fmt: skip
            inc = (b["profit"] - rb["profit"]) / b["horizon_days"]
            t2.append(f"| {cooling} | {season} | {inc:,.2f} | {bs} |")
            cells = []
            for s in SEARCHES:
                if s not in res:
                    cells.append("n/m")
                    continue
                imp = 100 * (res[s]["profit"] / rb["profit"] - 1)
                cells.append(f"{imp / max(res[s]['day_seconds_mean'], 1e-9):.4f}")
            t3.append(f"| {cooling} | {season} | " + " | ".join(cells) + " |")
        if "multisearch" in res:
            ds = [d["multisearch_s"] for d in res["multisearch"]["per_day"]]
            secs.append(f"| {key} | {len(ds)} | {statistics.mean(ds):.1f} | "
                        f"{statistics.median(ds):.1f} | {max(ds):.1f} | "
                        f"{sum(1 for x in ds if x > 60)} |")  # fmt: skip
        for s in ("delaysearch", "relaxsearch"):
            if s in res:
                up, n, worst = improved_days(res[s])
                extra.append(f"| {key} | {s} | {up} of {n} | {worst:+.4f} |")
        # Every core busy from the first submission to the horizon's end.
        span = rb["horizon_days"] * 86_400 - (rb["first_submit"] - rb["horizon_start"])
        full = CORES * CORE_HOUR * span / 3600
        cap = full * (1 - rb["energy_cost"] / rb["revenue"])
        bound.append(f"| {key} | {rb_name} | {100 * rb['revenue'] / full:.1f} % | "
                     f"{cap:,.1f} | {pct(cap, rb['profit'])} |")  # fmt: skip
    lines = [
        "## Runs", "", *out, "",
        "## Table 1: profit (at the horizon) and makespan against the best rule-based "
        "scheduler; PUE", "", *t1, "",
        "## Table 2: mean daily profit increment of the best search over the best rule", "", *t2,
        "", "## Table 3: improvement over the best rule (%) per second of search a day", "", *t3,
        "", "## MultiSearch seconds a day", "", *secs, "",
        "## DelaySearch and RelaxationSearch against MultiSearch on the same day", "", *extra,
        "", "## Headroom: the most any schedule can earn over the horizon", "", *bound, "",
    ]  # fmt: skip
    return lines, merged


def plot(merged: dict[str, dict[str, Any]], png: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(merged), figsize=(5 * len(merged), 4), squeeze=False)
    for ax, (key, res) in zip(axes[0], merged.items(), strict=True):
        rb_name, _ = best_rule(res)
        for name in (rb_name, *SEARCHES):
            if name in res and res[name].get("daily_profit"):
                days = res[name]["daily_profit"][: res[name]["horizon_days"]]
                acc, tot = [], 0.0
                for d in days:
                    tot += d
                    acc.append(tot)
                ax.plot(range(1, len(acc) + 1), acc, label=name)
        ax.set_title(key)
        ax.set_xlabel("day")
        ax.set_ylabel("cumulative profit")
        ax.legend()
    fig.tight_layout()
    fig.savefig(png, dpi=90)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("json", type=Path, nargs="+")
    ap.add_argument("--md", type=Path, required=True)
    ap.add_argument("--png", type=Path, default=None)
    args = ap.parse_args()
    records = [json.loads(p.read_text()) for p in args.json]
    lines, merged = render(records)
    args.md.write_text("\n".join(lines) + "\n")
    if args.png is not None:
        plot(merged, args.png)


if __name__ == "__main__":
    main()
