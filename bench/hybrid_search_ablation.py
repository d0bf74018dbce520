"""Ablation of the hybrid's search on Eurora 200-job instances (issue 16, findings 3, 5, 6).

One search (``hybrid_search``) from the time-0 snapshot (runtime = walltime, 32 nodes) per
(instance, cap, variant); the best real objective, its source, the CP status and the gap to
the valid bound. Variants: the search without LNS (its CP solves take what the local search
leaves: the search of the previous bench), with LNS on rolling windows only, with LNS from
conflict sets (:mod:`wattsched.scheduler.hybrid.lns`, the default), and the local search
alone; each within the same 5 s budget.

Usage: ``.venv/bin/python bench/hybrid_search_ablation.py [--instances A,B] [--caps 0,1]``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from hybrid_eurora import instances, time0_snapshots

from wattsched.scheduler.hybrid.bound import fluid_bound, lp_bound
from wattsched.scheduler.hybrid.search import SearchParams, hybrid_search
from wattsched.scheduler.mapper import StateCache

NEW = SearchParams(budget_s=5.0, time_limit_s=5.0, workers=8, iterations=6,
                   retry_on_timeout=False, lns=True, lower_bound="none")  # fmt: skip
VARIANTS = {
    "no-lns": replace(NEW, lns=False),
    "lns-window": replace(NEW, lns_conflicts=False),
    "lns-conflict": NEW,
    "ls-only": replace(NEW, local_search=0.99, lns=False),
}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--instances", type=lambda s: s.split(","), default=[])
    ap.add_argument("--caps", type=lambda s: [int(x) for x in s.split(",")], default=[0, 1])
    ap.add_argument("--count", type=int, default=4)
    ap.add_argument("--budget", type=float, default=5.0)
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    args = ap.parse_args()
    rows = []
    files = instances(args.instances)[: args.count]
    for f, k, cap_w, jobs, snap in time0_snapshots(files, args.caps):
        span = sum(j.walltime for j in jobs) // 4 + max(j.walltime for j in jobs)
        lb = max(fluid_bound(snap), lp_bound(snap, slots=120, horizon=span) or 0.0)
        row = {"instance": f.name, "cap_idx": k, "cap_w": cap_w, "bound": lb}
        for name, params in VARIANTS.items():
            params = replace(params, budget_s=args.budget, time_limit_s=args.budget)
            out = hybrid_search(snap, StateCache(), params)
            row[name] = {
                "objective": out.best.objective,
                "ratio": out.prb.objective / out.best.objective,
                "gap": out.best.objective / lb if lb > 0 else None,
                "source": out.best.source,
                "status": out.stats.status,
                "seconds": round(out.stats.seconds, 2),
                "cp": {k2: v for k2, v in out.stats.extra.items()
                       if k2.startswith(("cp_", "ls_", "lns", "solves"))},
            }  # fmt: skip
        row["prb"] = out.prb.objective
        rows.append(row)
        print(
            f.name[:26],
            k,
            f"LB {lb:.0f} PRB {row['prb']:.0f}",
            " ".join(f"{n}={row[n]['ratio']:.3f}/{row[n]['source']}" for n in VARIANTS),
            flush=True,
        )
    args.out.mkdir(parents=True, exist_ok=True)
    out_path = args.out / "hybrid_search_ablation.json"
    out_path.write_text(json.dumps({"rows": rows, "loadavg": os.getloadavg(),
                                    "command": " ".join(sys.argv)}, indent=1))  # fmt: skip


if __name__ == "__main__":
    main()
