"""Replay benchmark (foundation issue): whole KTH-SP2 with EASY, whole Curie sample with PRB.

Each case runs in a fresh subprocess (so that its peak memory is its own) through the same
code path as ``wattsched simulate``; results go to ``bench/results/replay_traces.{md,json}``
with the machine, the date and the command, and a plot per case.

    .venv/bin/python bench/replay_traces.py [--repeat N] [--only kth|curie]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data"
RESULTS = REPO / "bench" / "results"

CASES = {
    "kth": {
        "title": "KTH-SP2 (28,489 jobs, 100 nodes x 1 core), EASY",
        "trace": DATA / "swf" / "KTH-SP2-1996.swf",
        "system": REPO / "deploy" / "systems" / "kth-sp2.toml",
        "dispatcher": "easy",
        "core_watts": None,
        "target_s": 3.0,
    },
    "curie": {
        "title": "CEA Curie sample (29,998 jobs, 300 nodes x 32 cores), PRB",
        "trace": DATA / "swf" / "CEA-Curie-2011-sample.swf",
        "system": REPO / "deploy" / "systems" / "curie-300.toml",
        "dispatcher": "prb",
        "core_watts": "7.8:11.11",
        "target_s": 20.0,
    },
}


def run_case(name: str) -> dict[str, object]:
    """Run one case in this process (called in the child)."""
    from wattsched.daemon.simulate_cli import (
        TraceFormat,
        _assign_power,
        _load_jobs,
        load_system,
        run_simulation,
    )

    case = CASES[name]
    t0 = time.perf_counter()
    nodes = load_system(Path(str(case["system"])), None, None, None, TraceFormat.SWF)
    jobs, skipped, report = _load_jobs(Path(str(case["trace"])), TraceFormat.SWF, nodes, None, None)
    jobs = _assign_power(jobs, None, case["core_watts"], 0)  # type: ignore[arg-type]
    read_s = time.perf_counter() - t0
    from wattsched.scheduler.model import PowerCap

    out = RESULTS / f"replay_{name}"
    metrics = run_simulation(
        nodes,
        jobs,
        PowerCap.unlimited(),
        dispatcher_name=str(case["dispatcher"]),
        params={},
        offline=False,
        metrics_out=out.with_suffix(".metrics.json"),
        schedule_out=Path(f"/tmp/wattsched-bench-{name}-schedule.csv"),
        power_out=None,
        plot=out.with_suffix(".png"),
        skipped=skipped,
        report=report,
        title=str(case["title"]),
        progress=False,
    )
    metrics["read_seconds"] = read_s
    metrics["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return metrics


def machine() -> dict[str, object]:
    """What this machine is."""
    return {
        "nproc": os.cpu_count(),
        "uname": " ".join(platform.uname()),
        "python": platform.python_version(),
        "loadavg_at_start": os.getloadavg(),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--only", choices=sorted(CASES))
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(run_case(args.child), default=float))
        return
    RESULTS.mkdir(parents=True, exist_ok=True)
    info = machine()
    results: dict[str, list[dict[str, object]]] = {}
    for name in [args.only] if args.only else list(CASES):
        if not Path(str(CASES[name]["trace"])).exists():
            print(f"skip {name}: {CASES[name]['trace']} not found", file=sys.stderr)
            continue
        for _ in range(args.repeat):
            proc = subprocess.run(
                [sys.executable, __file__, "--child", name],
                check=True,
                capture_output=True,
                text=True,
            )
            results.setdefault(name, []).append(json.loads(proc.stdout.strip().splitlines()[-1]))
    stamp = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    cmd = "bench/replay_traces.py " + " ".join(sys.argv[1:])
    (RESULTS / "replay_traces.json").write_text(
        json.dumps({"date": stamp, "command": cmd, "machine": info, "results": results},
                   indent=2, default=float) + "\n"
    )  # fmt: skip
    lines = [
        "# Replay benchmark: whole traces through the control cycle",
        "",
        f"- date: {stamp}",
        f"- command: `.venv/bin/python {cmd.strip()}`",
        f"- machine: {info['nproc']} cores, `{info['uname']}`, Python {info['python']}, "
        f"load average at start {info['loadavg_at_start']}",
        "",
        "| case | replay wall s (best of runs) | target s | met | cycles | plan s mean | "
        "plan s p99 | peak RSS MB | jobs | mean wait s | mean bsld | makespan days |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, runs in results.items():
        best = min(runs, key=lambda r: float(r["wall_seconds"]))  # type: ignore[arg-type]
        target = float(CASES[name]["target_s"])  # type: ignore[arg-type]
        wall = float(best["wall_seconds"])  # type: ignore[arg-type]
        lines.append(
            f"| {CASES[name]['title']} | {wall:.2f} | {target:g} | "
            f"{'yes' if wall <= target else 'no'} | {best['cycles']} | "
            f"{float(best['plan_seconds_mean']) * 1e3:.3f} ms | "  # type: ignore[arg-type]
            f"{float(best['plan_seconds_p99']) * 1e3:.3f} ms | "  # type: ignore[arg-type]
            f"{float(best['peak_rss_mb']):.0f} | {best['jobs']} | "  # type: ignore[arg-type]
            f"{float(best['mean_wait_s']):.0f} | "  # type: ignore[arg-type]
            f"{float(best['mean_bounded_slowdown']):.1f} | "  # type: ignore[arg-type]
            f"{float(best['makespan_s']) / 86400:.1f} |"  # type: ignore[arg-type]
        )
    lines += [
        "",
        "Replay wall time is the control-cycle loop only (trace reading excluded; it is in the",
        "JSON as `read_seconds`). Plots: `replay_kth.png`, `replay_curie.png`.",
        "",
    ]
    (RESULTS / "replay_traces.md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
