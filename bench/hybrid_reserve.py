"""PRB with and without a reservation for starving wide jobs, online on every ``hist_400`` trace.

Replays each Eurora ``hist_400`` trace (real arrivals and runtimes, the online cap of
``bench/hybrid_eurora.py``: the tightest feasible one where 1,500 W leaves a job no room)
through the control cycle with ``prb``, ``prb-reserve`` (``scheduler/reservation.py``) and
``easy`` (submit order, walltime reservations), and records the mean weighted queue time of
each and the ratios PRB / other (> 1: better than PRB). Deterministic (no search budget): one
run a trace. Seconds a trace: well under one.

Usage: ``.venv/bin/python bench/hybrid_reserve.py [--out bench/results] [--name hybrid_reserve]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any

from hybrid_eurora import hist400_traces, machine_info

from wattsched.connectors.simulated import SimulatedCluster
from wattsched.daemon.replay import replay
from wattsched.scheduler.dispatcher import create
from wattsched.scheduler.hybrid.problem import weighted_queue_time
from wattsched.scheduler.model import PowerCap

DISPATCHERS = ("prb", "prb-reserve", "easy")


def run(online_cap: float) -> list[dict[str, Any]]:
    """One row per trace: each dispatcher's objective, seconds, and the reservations made."""
    rows = []
    for path, nodes, jobs, cap_w in hist400_traces(online_cap):
        row: dict[str, Any] = {"instance": path.name, "jobs": len(jobs), "cap_w": cap_w}
        for name in DISPATCHERS:
            cluster = SimulatedCluster(nodes, jobs, PowerCap.constant(cap_w), record_power=False)
            t0 = time.perf_counter()
            res = replay(cluster, create(name), keep_stats=name == "prb-reserve")
            starts = {j: r.start for j, r in cluster.records.items() if r.start is not None}
            row[name] = {
                "objective": weighted_queue_time(jobs, starts, max(j.ewt for j in jobs))
                if len(starts) == len(jobs) else None,
                "seconds": round(time.perf_counter() - t0, 3),
                "cap_violation_s": cluster.cap_violation_s,
                "start_errors": res.start_errors,
            }  # fmt: skip
            if name == "prb-reserve":
                row[name]["reserving_cycles"] = sum("reserved" in s.extra for s in res.solver_stats)
                row[name]["heads"] = len({s.extra["reserved"] for s in res.solver_stats
                                          if "reserved" in s.extra})  # fmt: skip
        print(path.name, {n: round(row[n]["objective"] or 0) for n in DISPATCHERS}, flush=True)
        rows.append(row)
    return rows


def report(rows: list[dict[str, Any]], info: dict[str, Any]) -> str:
    """The Markdown table and summary."""

    def ratio(row: dict[str, Any], name: str) -> float:
        return float(row["prb"]["objective"]) / float(row[name]["objective"])

    lines = [
        "# PRB with a reservation for starving wide jobs (`prb-reserve`), online on hist_400",
        "",
        f"- run {info['date']} on `{info['uname']}` ({info['nproc']} cores, load "
        f"{info['loadavg_start'][0]:.1f} at the start), commit `{info['commit']}`, command "
        f"`{info['command']}`; deterministic, one run a trace.",
        "- ratio = PRB's mean weighted queue time / the other's (> 1: better than PRB); "
        "real arrivals and runtimes, the online cap of `bench/hybrid_eurora.py`.",
        "",
        "| trace | cap W | PRB | prb-reserve | PRB / prb-reserve | heads reserved | easy | "
        "PRB / easy |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row['instance'].removesuffix('.log_crypt')} | {row['cap_w']:.0f} | "
            f"{row['prb']['objective']:,.0f} | {row['prb-reserve']['objective']:,.0f} | "
            f"**{ratio(row, 'prb-reserve'):.3f}** | {row['prb-reserve']['heads']} | "
            f"{row['easy']['objective']:,.0f} | {ratio(row, 'easy'):.3f} |"
        )
    rs = [ratio(r, "prb-reserve") for r in rows]
    es = [ratio(r, "easy") for r in rows]
    bad = sum(r[n]["cap_violation_s"] + r[n]["start_errors"] for r in rows for n in DISPATCHERS)
    lines += [
        "",
        f"- prb-reserve: median {statistics.median(rs):.3f}, min {min(rs):.3f}, max "
        f"{max(rs):.3f}, below PRB on {sum(r < 1 for r in rs)} of {len(rs)} traces.",
        f"- easy (submit order): median {statistics.median(es):.3f}, min {min(es):.3f}.",
        f"- seconds above the cap + refused starts over all replays: {bad}.",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--online-cap", type=float, default=1500.0)
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    ap.add_argument("--name", default="hybrid_reserve")
    args = ap.parse_args()
    info = machine_info()
    rows = run(args.online_cap)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{args.name}.json").write_text(json.dumps({"info": info, "rows": rows},
                                                           indent=1) + "\n")  # fmt: skip
    (args.out / f"{args.name}.md").write_text(report(rows, info))
    print(f"wrote {args.out / args.name}.md")


if __name__ == "__main__":
    main()
