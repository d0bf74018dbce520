"""Benchmark (issue 12): the profit paper's daily replay on the CEA Curie sample.

Runs `wattsched simulate-daily` (300 nodes x 32 cores x 128 GB, job power 7.8-11.11 W a
core, seed 1) per scenario (cooling x season) with the rule-based schedulers (non-strict and,
with --strict-rules, strict), MultiSearch, DelaySearch and RelaxationSearch, and records:
the profit over the horizon (the days of submissions; the paper's "profit at the time of the
last submission"), against the best rule (the paper's Table 1), the mean daily increment
(Table 2), the improvement per second of search (Table 3), the PUE, the cumulative profit by
day (a plot), MultiSearch's seconds a day, and the days DelaySearch/RelaxationSearch improved
on MultiSearch (never below it). ``--days`` stops each replay after that many days (the
horizon's profit needs no more); ``--complete-rules`` also runs the rules to the end (their
makespan). The machine's load is recorded before and after each run.

Usage: ``.venv/bin/python bench/profit_curie.py [--jobs N] [--days 24] [--scenario air:winter]``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
TRACE = REPO.parent / "shared" / "data" / "swf" / "CEA-Curie-2011-sample.swf"
RULES = ("rules-est", "rules-wt", "rules-profit")
SEARCHES = ("multisearch", "delaysearch", "relaxsearch")


def run(label: str, args: argparse.Namespace, cooling: str, season: str, out: Path,
        extra: list[str]) -> dict[str, Any] | None:  # fmt: skip
    scheduler = label.split(":")[0]
    metrics = out / f"{cooling}.{season}.{label.replace(':', '.')}.json"
    cmd = [
        sys.executable, "-m", "wattsched.daemon.cli", "simulate-daily", "--trace", str(TRACE),
        "--system", str(REPO / "deploy" / "systems" / "curie-300.toml"),
        "--core-watts", "7.8:11.11", "--seed", "1", "--scheduler", scheduler,
        "--cooling", cooling, "--season", season, "--metrics-out", str(metrics), "--no-progress",
        "--delay-time-s", str(args.delay_time_s), "--relax-time-s", str(args.relax_time_s),
        *extra,
    ]  # fmt: skip
    if args.jobs:
        cmd += ["--limit-jobs", str(args.jobs)]
    load0 = os.getloadavg()[0]
    t0 = time.monotonic()
    try:
        subprocess.run(cmd, check=True, capture_output=True, cwd=REPO, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        print(f"{cooling}:{season} {label}: timed out after {args.timeout} s", flush=True)
        return None
    m: dict[str, Any] = json.loads(metrics.read_text())
    m["wall_s"] = time.monotonic() - t0
    m["load"] = [load0, os.getloadavg()[0]]
    print(f"{cooling}:{season} {label}: profit {m['profit']:,.1f} in {m['wall_s']:.0f} s "
          f"(load {m['load'][0]:.1f} -> {m['load'][1]:.1f})", flush=True)  # fmt: skip
    return m


def _commit() -> str:
    return subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=REPO
    ).stdout.strip()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=None, help="first N jobs (default: all)")
    ap.add_argument("--days", type=int, default=24, help="days to replay (the horizon: 24)")
    ap.add_argument("--scenario", action="append", default=None, help="cooling:season")
    ap.add_argument("--searches", default=",".join(SEARCHES))
    ap.add_argument("--strict-rules", action="store_true")
    ap.add_argument("--complete-rules", action="store_true")
    ap.add_argument("--delay-time-s", type=float, default=10.0)
    ap.add_argument("--relax-time-s", type=float, default=10.0)
    ap.add_argument("--timeout", type=float, default=3000.0, help="seconds per run")
    ap.add_argument("--json", type=Path, default=REPO / "bench" / "results" / "profit_curie.json")
    args = ap.parse_args()
    scenarios = [tuple(s.split(":")) for s in (args.scenario or ["air:winter"])]
    labels = [*RULES, *(f"{r}:strict" for r in RULES if args.strict_rules)]
    searches = [s for s in args.searches.split(",") if s]
    results: dict[str, dict[str, Any]] = {}
    started = datetime.now(UTC)
    with tempfile.TemporaryDirectory() as tmp:
        for cooling, season in scenarios:
            key = f"{cooling}:{season}"
            res: dict[str, Any] = {}
            for label in [*labels, *searches]:
                extra = ["--days", str(args.days)] if args.days else []
                if label.endswith(":strict"):
                    extra.append("--strict")
                res[label] = run(label, args, cooling, season, Path(tmp), extra)
            if args.complete_rules:
                for label in labels:
                    extra = ["--strict"] if label.endswith(":strict") else []
                    res[f"{label}:complete"] = run(label, args, cooling, season, Path(tmp), extra)
            results[key] = res
            # Written after each scenario: a run cut short keeps what it measured.
            record = {
                "started": started.isoformat(), "machine": platform.node(),
                "cpus": os.cpu_count(), "python": platform.python_version(),
                "argv": sys.argv[1:], "commit": _commit(), "results": results,
            }  # fmt: skip
            args.json.write_text(json.dumps(record, indent=1) + "\n")
    print(f"wrote {args.json}; render with bench/profit_curie_report.py")


if __name__ == "__main__":
    main()
