"""Benchmark (issue 12, partial): the profit paper's daily replay on the CEA Curie sample.

Runs `wattsched simulate-daily` (300 nodes x 32 cores x 128 GB, job power 7.8-11.11 W a
core, seed 1) with the rule-based schedulers and MultiSearch, per scenario, and records the
profit over the horizon (the days of submissions: work past it earns nothing, as the paper),
the whole-run profit, makespan, mean PUE and MultiSearch's seconds a day.

Usage: ``.venv/bin/python bench/profit_curie.py [--jobs 4000] [--scenario air:summer ...]``.
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TRACE = REPO.parent / "shared" / "data" / "swf" / "CEA-Curie-2011-sample.swf"
SCHEDULERS = ("rules-est", "rules-wt", "rules-profit", "multisearch")


def run(scheduler: str, cooling: str, season: str, jobs: int, out: Path) -> dict:
    metrics = out / f"{cooling}.{season}.{scheduler}.json"
    cmd = [
        sys.executable, "-m", "wattsched.daemon.cli", "simulate-daily", "--trace", str(TRACE),
        "--system", str(REPO / "deploy" / "systems" / "curie-300.toml"),
        "--core-watts", "7.8:11.11", "--seed", "1", "--scheduler", scheduler,
        "--cooling", cooling, "--season", season, "--limit-jobs", str(jobs),
        "--metrics-out", str(metrics), "--no-progress",
    ]  # fmt: skip
    subprocess.run(cmd, check=True, capture_output=True, cwd=REPO)
    return json.loads(metrics.read_text())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=4000)
    ap.add_argument("--scenario", action="append", default=None, help="cooling:season")
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "results")
    args = ap.parse_args()
    scenarios = [s.split(":") for s in (args.scenario or ["air:summer"])]
    lines = [
        f"# Profit and cooling: Curie sample, first {args.jobs} jobs (issue 12, partial)",
        "",
        f"Machine: {platform.node()}, Python {platform.python_version()}; "
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC; commit "
        + subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=REPO
        ).stdout.strip()
        + f". Command: `.venv/bin/python bench/profit_curie.py --jobs {args.jobs}"
        + "".join(f" --scenario {c}:{s}" for c, s in scenarios)
        + "`.",
        "",
        "| cooling | season | scheduler | profit (horizon) | vs best rule | profit (whole run) |"
        " makespan s | mean PUE | s a day (mean / max) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    with tempfile.TemporaryDirectory() as tmp:
        for cooling, season in scenarios:
            res = {s: run(s, cooling, season, args.jobs, Path(tmp)) for s in SCHEDULERS}
            best = max(res[s]["profit"] for s in SCHEDULERS if s.startswith("rules"))
            for s, m in res.items():
                lines.append(
                    f"| {cooling} | {season} | {s} | {m['profit']:,.1f} | "
                    f"{100 * (m['profit'] / best - 1):+.2f} % | {m['profit_whole_run']:,.1f} | "
                    f"{m['makespan_s']:,.0f} | {m['mean_pue']:.3f} | "
                    f"{m['day_seconds_mean']:.1f} / {m['day_seconds_max']:.1f} |"
                )
                print(lines[-1], flush=True)
    lines += [
        "",
        "Target (issue 12): at least +8 % profit over the best rule-based scheduler in every "
        "scenario; MultiSearch at most 60 s a day. Partial run: one scenario, a slice of the "
        "trace; DelaySearch and RelaxationSearch not measured.",
    ]
    (args.out / "profit_curie.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
