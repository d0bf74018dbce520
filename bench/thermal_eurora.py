"""Benchmark: thermal-guarded EASY and PRB on a Eurora trace.

A historical Eurora trace (real arrivals and runtimes, the per-job power predictions) on the
32-node machine, with the illustrative thermal parameters of ``bench/thermal_eurora.toml``.
Each dispatcher is replayed with temperatures recorded but no guard, then with the thermal
guard (:class:`~wattsched.scheduler.thermal.guard.ThermalGuard`): threshold violations, hottest
outlet, the independent thermal validator, and the cost in wait time.

Usage: ``.venv/bin/python bench/thermal_eurora.py [--trace PATH] [--out bench/results]``.
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

import numpy as np

from wattsched.connectors.traces.eurora import (
    read_eurora_jobs,
    read_eurora_nodes,
    read_power_predictions,
    read_queues,
)
from wattsched.daemon.replay import replay
from wattsched.daemon.thermal_sim import max_power_w, thermal_metrics, thermal_setup
from wattsched.scheduler.dispatcher import create
from wattsched.scheduler.model import PowerCap
from wattsched.scheduler.power import assign_power_table
from wattsched.scheduler.thermal.validate_thermal import validate_stretch, validate_thermal
from wattsched.scheduler.validate import Executed, validate_schedule

REPO = Path(__file__).resolve().parents[1]
EURORA = REPO.parent / "shared" / "data" / "eurora"
TRACE = EURORA / "historical_traces" / "400"
"""The first trace of this folder by name (or --trace FILE)."""


def run(trace: Path, dispatcher: str, guard: bool, mode: str) -> dict[str, Any]:
    nodes = read_eurora_nodes(EURORA / "system_configs" / "nodes_#32")
    wl = read_eurora_jobs(trace, queues=read_queues(EURORA / "system_configs" / "system_queues"))
    jobs, _ = assign_power_table(
        list(wl.jobs),
        read_power_predictions(EURORA / "eurora_power_predictions" / "power_predictions"),
    )
    cap = PowerCap.unlimited()
    thermal = Path(tempfile.mkdtemp()) / "thermal.toml"
    base = (REPO / "bench" / "thermal_eurora.toml").read_text()
    thermal.write_text(base + f'on_overheat = "{mode}"\n')
    cluster, disp = thermal_setup(thermal, nodes, jobs, cap, False, create(dispatcher), guard=guard)
    params = cluster.tracker.params if cluster.tracker is not None else None
    assert params is not None
    # what the hottest node can gain in the one second a check may lag (suspend's overshoot)
    hottest = float((params.steady(max_power_w(nodes, jobs, params)) - params.t_thresh).max())
    tol = max(0.0, hottest) * float((1 - np.exp(-1 / (params.r * params.c))).max())
    t0 = time.perf_counter()
    replay(cluster, disp)
    wall = time.perf_counter() - t0
    runs = [
        Executed(r.job, r.start, r.end, r.nodes)
        for r in cluster.records.values()
        if r.start is not None and r.end is not None
    ]
    wait_of = {jid: r.start - r.submit for jid, r in cluster.records.items() if r.start is not None}
    waits = list(wait_of.values())
    assert cluster.tracker is not None
    th = thermal_metrics(cluster, disp)
    return {
        "dispatcher": dispatcher,
        "guard": guard,
        "mode": mode,
        "jobs": len(runs),
        "unfinished": len(cluster.unfinished()),
        "mean_wait_s": sum(waits) / max(1, len(waits)),
        "makespan_s": max(r.end for r in runs) - min(r.submit for r in cluster.records.values()),
        "wall_s": round(wall, 2),
        "validator_errors": len(validate_schedule(nodes, runs, cap)),
        "thermal_validator_errors": len(
            validate_thermal(
                nodes, runs, cluster.tracker.params, slowed=cluster.slow_intervals(), tol_c=tol
            )
        ),
        "stretch_errors": len(validate_stretch(runs, cluster.slow_intervals())),
        "validator_tol_c": round(tol, 4),
        "waits_s": wait_of,
        **th,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--trace", type=Path, default=None)
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "results")
    ap.add_argument("--report-only", action="store_true", help="rewrite the .md from the .json")
    args = ap.parse_args()
    if args.report_only:
        doc = json.loads((args.out / "thermal_eurora.json").read_text())
        (args.out / "thermal_eurora.md").write_text(report(doc["meta"], doc["rows"]))
        return
    if args.trace is None:
        args.trace = sorted(TRACE.iterdir())[0]
    started = datetime.now(UTC)
    rows = []
    for d in ("easy", "prb"):
        for g, mode in (
            (False, "none"),
            (False, "suspend"),
            (False, "throttle"),
            (True, "suspend"),
        ):
            rows.append(run(args.trace, d, g, mode))
            print(rows[-1], file=sys.stderr, flush=True)
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()
    meta = {
        "date": started.strftime("%Y-%m-%d %H:%M UTC"),
        "commit": commit,
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs (shared), Python "
        f"{platform.python_version()}",
        "command": "bench/thermal_eurora.py " + " ".join(sys.argv[1:]),
        "trace": str(args.trace.relative_to(EURORA))
        if args.trace.is_relative_to(EURORA)
        else str(args.trace),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "thermal_eurora.json").write_text(
        json.dumps({"meta": meta, "rows": rows}, indent=1)
    )
    (args.out / "thermal_eurora.md").write_text(report(meta, rows))


def report(meta: dict[str, Any], rows: list[dict[str, Any]]) -> str:
    """The markdown report."""
    commit = meta["commit"]
    lines = [
        "# Thermal guard on a Eurora trace (EASY, PRB)",
        "",
        f"- date {meta['date']}, commit {commit}, {meta['machine']}",
        f"- command: `.venv/bin/python {meta['command']}`; trace `{meta['trace']}` (real "
        "arrivals and runtimes, power predictions), 32 nodes (`nodes_#32`), no power cap; "
        "thermal parameters `bench/thermal_eurora.toml` (illustrative, not measured: "
        "T_sup 20 C, threshold 60 C, R 0.45 C/W, C 2000 J/C, default two-row recirculation).",
        "",
        "| dispatcher | guard | on_overheat | jobs started | never started | mean wait (s) "
        "| makespan (s) | max outlet (C) "
        "| mean outlet (C) | violations | s above | thermal validator | slowed events "
        "| slowed node-s | dropped starts | replay wall (s) |",
        "|" + "---|" * 16,
    ]
    for r in rows:
        lines.append(
            f"| {r['dispatcher']} | {'yes' if r['guard'] else 'no'} | {r['mode']} | {r['jobs']} | "
            f"{r['unfinished']} | "
            f"{r['mean_wait_s']:.0f} | {r['makespan_s']} | {r['max_outlet_c']:.2f} | "
            f"{r['mean_outlet_c']:.2f} | {r['threshold_violations']} | "
            f"{r['seconds_above_threshold']:.0f} | {r['thermal_validator_errors']} errors | "
            f"{r['suspend_events'] + r['throttle_events']} | "
            f"{r['suspended_node_s'] + r['throttled_node_s']} | "
            f"{r.get('guard_dropped_starts', '-')} | {r['wall_s']} |"
        )
    for d in ("easy", "prb"):
        none, suspend, guarded = (
            next(r for r in rows if r["dispatcher"] == d and r["mode"] == m and r["guard"] == g)
            for m, g in (("none", False), ("suspend", False), ("suspend", True))
        )
        lines.append("")
        lines.append(
            f"- {d.upper()}: violations {none['threshold_violations']} unguarded -> "
            f"{guarded['threshold_violations']} with the guard; {guarded['unfinished']} jobs "
            "never start with the guard."
        )
        if "waits_s" in guarded:
            for ref, what in ((none, "no thermal control"), (suspend, "suspend at the threshold")):
                both = sorted(set(guarded["waits_s"]) & set(ref["waits_s"]))
                if not both:
                    continue
                g = sum(guarded["waits_s"][j] for j in both) / len(both)
                o = sum(ref["waits_s"][j] for j in both) / len(both)
                lines.append(
                    f"  - against {what}, over the {len(both)} jobs that started in both: mean "
                    f"wait {o:.0f} -> {g:.0f} s ({g - o:+.0f} s, "
                    f"{100 * (g / max(o, 1e-9) - 1):+.1f} %)."
                )
    lines += [
        "",
        "Read with care:",
        "",
        '- The thermal validator lists at most 20 errors per replay ("20 errors" = 20 or more).',
        "- With the guard, jobs whose own power would take a node over the threshold within their "
        "walltime never start (the guard's bound admits no such start: these parameters are "
        "harsh, the unguarded replays reach 135 C); the mean wait is over the jobs that "
        "started, so the table's mean waits are not over the same jobs: the lines above compare "
        "the guarded replay with the unguarded ones over the jobs that started in both.",
        '- "dropped starts" counts refusals over all cycles (the same job is refused again at '
        "each re-plan). The guarded replays took 63-181 s before the guard kept one pending "
        "re-check at a time (each blocked cycle used to ask for its own, a chain per event: "
        "22,227 cycles on EASY, now 589) and computed its per-node bound vectorised.",
        "- on_overheat (unguarded): `suspend` pauses a node's jobs at the threshold until it "
        "is 2 C under it (`hysteresis_c`); the thermal validator is given the pauses and a "
        f"tolerance of {rows[0]['validator_tol_c']} C (what the hottest node gains in the one "
        "second a check may lag); `s above` and `violations` count those brief overshoots. "
        "`throttle` halves the speed and dynamic power of a hot node's jobs, and pauses them "
        "where half power would still heat the node to its threshold: with these harsh "
        "parameters that is most of the time (paused "
        f"{', '.join(str(r.get('throttle_paused', 0)) for r in rows if r['mode'] == 'throttle')}"
        " times, EASY, PRB). The slowed replays are slower (thousands of suspend/resume "
        "events, each a cycle).",
        "- The validators accept every stretched schedule: `validate_schedule` unchanged, "
        "`validate_stretch` (each job did its work) "
        f"{sum(r['stretch_errors'] for r in rows)} errors in all.",
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
