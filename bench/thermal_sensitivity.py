"""Sensitivity of the thermal paper benchmark to what the paper leaves open: the supply
temperature ``T_sup`` and the recirculation matrix ``D`` (the default two-row matrix scaled).

For each setting, the first ``--instances`` seeded instances of ``bench/thermal_paper.py``
(the same generator, the same MILP searches: :func:`milp_cp.search` for HPC,
:func:`cloud_search.search` for Cloud, ``--time-limit`` seconds each) and the ratios of the mean
makespans the paper publishes: MILP / balance lower bound (paper 1.359), Spatio-Temporal /
MILP (19 / 15), Coolest / MILP (21 / 15), Cloud / HPC (0.89).

Usage: ``.venv/bin/python bench/thermal_sensitivity.py [--instances 10] [--time-limit 8]
[--t-sup 10 15 20 25] [--d-scale 0 2] [--out bench/results]``
(``--d-scale`` values run at the benchmark's ``T_SUP``; ``--t-sup`` values with the default
``D``).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from thermal_paper import T_SUP, run_one  # the sibling script

PAPER = {"milp_lb": 15 / 11.04, "st_milp": 19 / 15, "coolest_milp": 21 / 15, "cloud_hpc": 0.89}


def summary(rows: list[dict[str, Any]]) -> dict[str, float]:
    """The ratios of mean makespans over the rows of one setting."""

    def mean(key: str) -> float:
        return statistics.fmean(
            r[key]["makespan"] if key in ("hpc", "cloud") else r[key] for r in rows
        )

    hpc = mean("hpc")
    cloud = "cloud" in rows[0]
    return {
        "milp_lb": hpc / mean("lb_paper"),
        "milp_lb_per_instance": statistics.fmean(
            r["hpc"]["makespan"] / r["lb_paper"] for r in rows
        ),
        "st_milp": mean("spatio_temporal") / hpc,
        "coolest_milp": mean("coolest") / hpc,
        "cloud_hpc": mean("cloud") / hpc if cloud else math.nan,
        "hpc": hpc,
        "hpc_optimal": sum(r["hpc"]["status"] == "optimal" for r in rows),
        "cloud_optimal": sum(r["cloud"]["status"] == "optimal" for r in rows) if cloud else 0,
        "valid": sum(r["hpc"]["valid"] and r.get("cloud", r["hpc"])["valid"] for r in rows),
    }


def report(meta: dict[str, Any], settings: list[dict[str, Any]]) -> str:
    """The markdown table, one line per setting."""
    lines = [
        "# Thermal paper benchmark: sensitivity to T_sup and D",
        "",
        f"- date {meta['date']}, commit {meta['commit']}",
        f"- command: `.venv/bin/python {meta['command']}` (wall {meta['wall_s']} s)",
        f"- {meta['instances']} instances (seeds 0-{meta['instances'] - 1}), "
        f"{meta['time_limit_s']} s per MILP search (HPC and Cloud), {meta['workers']} workers; "
        "ratios of the mean makespans (MILP / LB also as the mean of the per-instance "
        f"ratios); the rows with a D scale other than 1 run at T_sup = {T_SUP:g} C. The "
        "paper's row: MILP 15 at 35.9 % above the balance bound, Spatio-Temporal 19, "
        "Coolest 21, Cloud 11 % below HPC.",
    ]
    if meta.get("note"):
        lines.append(f"- {meta['note']}")
    lines += [
        "",
        "| T_sup (C) | D scale | MILP / LB | (per instance) | ST / MILP | Coolest / MILP "
        "| Cloud / HPC | mean MILP | HPC opt | Cloud opt | valid |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for s in settings:
        m = s["summary"]
        lines.append(
            f"| {s['t_sup']:g} | {s['d_scale']:g} | {m['milp_lb']:.3f} | "
            f"{m['milp_lb_per_instance']:.3f} | {m['st_milp']:.3f} | "
            f"{m['coolest_milp']:.3f} | {m['cloud_hpc']:.3f} | {m['hpc']:.2f} | "
            f"{m['hpc_optimal']} | {m['cloud_optimal']} | {m['valid']} |"
        )
    p = PAPER
    lines.append(
        f"| paper | - | {p['milp_lb']:.3f} | - | {p['st_milp']:.3f} | {p['coolest_milp']:.3f} | "
        f"{p['cloud_hpc']:.3f} | 15 | - | - | - |"
    )
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--instances", type=int, default=10)
    ap.add_argument("--time-limit", type=float, default=8.0)
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--t-sup", type=float, nargs="*", default=[10.0, 15.0, 20.0, 25.0])
    ap.add_argument("--d-scale", type=float, nargs="*", default=[0.0, 2.0])
    ap.add_argument("--hpc-only", action="store_true", help="no Cloud search (calibration)")
    ap.add_argument("--out", type=Path, default=Path("bench/results"))
    ap.add_argument("--name", default="thermal_sensitivity", help="output file stem")
    ap.add_argument("--report-only", action="store_true", help="rewrite the .md from the .json")
    args = ap.parse_args()
    if args.report_only:
        doc = json.loads((args.out / f"{args.name}.json").read_text())
        for s in doc["settings"]:
            s["summary"] = summary(s["rows"])
        (args.out / f"{args.name}.md").write_text(report(doc["meta"], doc["settings"]))
        return
    started = time.perf_counter()
    grid = [(t, 1.0) for t in args.t_sup] + [(T_SUP, d) for d in args.d_scale]
    settings = []
    for t_sup, d_scale in grid:
        rows = [
            run_one(k, args.time_limit, [], False, args.workers, t_sup, d_scale, not args.hpc_only)
            for k in range(args.instances)
        ]
        settings.append(
            {"t_sup": t_sup, "d_scale": d_scale, "rows": rows, "summary": summary(rows)}
        )
        print(t_sup, d_scale, settings[-1]["summary"], file=sys.stderr, flush=True)
    meta = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
        ).stdout.strip(),
        "command": "bench/thermal_sensitivity.py " + " ".join(sys.argv[1:]),
        "wall_s": round(time.perf_counter() - started, 1),
        "instances": args.instances,
        "time_limit_s": args.time_limit,
        "workers": args.workers,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    doc = {"meta": meta, "settings": settings}
    (args.out / f"{args.name}.json").write_text(json.dumps(doc, indent=1))
    (args.out / f"{args.name}.md").write_text(report(meta, settings))


if __name__ == "__main__":
    main()
