"""Where the online hybrid wins or loses against PRB on one real-runtime row, job class by class.

One Eurora 200-job instance, one cap of ``bench/hybrid_eurora.py``'s sweep, the real-runtime
protocol (every job queued at time 0, each running its real runtime): PRB and the hybrid in
``mode="online"`` (its defaults, plus the JSON parameters given) are replayed, and each job
class (queue, walltime, units, cores / memory / GPUs of a unit) gets its share of the mean
weighted queue time under each, the classes that differ most first.

Usage: ``.venv/bin/python bench/hybrid_eurora_perclass.py hist_200_20140402_220500 0
'{"rollout_by_class": true}'`` (a few minutes a row).
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict

from hybrid_eurora import cap_sweep, instances, load, run_one, with_protocol

from wattsched.connectors.simulated import SimulatedCluster
from wattsched.daemon.replay import replay
from wattsched.scheduler.dispatcher import Dispatcher, create
from wattsched.scheduler.model import Job, Node, PowerCap


def replay_starts(
    nodes: list[Node], jobs: list[Job], cap: PowerCap, disp: Dispatcher
) -> tuple[int, dict[str, int]]:
    """One replay by ``disp``: the simulated cluster's start time and each started job's start."""
    cluster = SimulatedCluster(nodes, jobs, cap, offline=True, record_power=False)
    replay(cluster, disp)
    starts = {jid: r.start for jid, r in cluster.records.items() if r.start is not None}
    return cluster.start_time, starts


def weighted_waits(
    nodes: list[Node], jobs: list[Job], cap: PowerCap, disp: Dispatcher
) -> dict[str, float]:
    """Each job's weighted wait (wait x the largest expected wait / its own) in one replay by
    ``disp``."""
    t0, starts = replay_starts(nodes, jobs, cap, disp)
    top = max(j.ewt for j in jobs)
    ewt = {j.id: j.ewt for j in jobs}
    return {jid: (start - t0) * top / ewt[jid] for jid, start in starts.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("instance", help="a substring of the instance's file name")
    ap.add_argument("cap", type=int, help="the cap's index in the sweep (0: the tightest)")
    ap.add_argument("params", nargs="?", default="{}", help="the hybrid's extra parameters, JSON")
    ap.add_argument("--top", type=int, default=14, help="how many classes to print")
    args = ap.parse_args()
    nodes, jobs, _ = load(instances([args.instance])[0])
    base = run_one(nodes, with_protocol(jobs, "walltime"), PowerCap.unlimited(), "prb", {})
    cap = PowerCap.constant(cap_sweep(nodes, jobs, base["peak_w"])[args.cap])
    real = with_protocol(jobs, "real")
    prb = weighted_waits(nodes, real, cap, create("prb"))
    hyb = weighted_waits(nodes, real, cap, create("hybrid", mode="online",
                                                  **json.loads(args.params)))  # fmt: skip
    rows: dict[tuple[object, ...], list[float]] = defaultdict(lambda: [0, 0.0, 0.0])
    for j in real:
        row = rows[(j.queue, j.walltime, j.units, j.unit.as_tuple()[:3])]
        row[0] += 1
        row[1] += prb[j.id]
        row[2] += hyb[j.id]
    n = len(real)
    p, h = sum(prb.values()), sum(hyb.values())
    print(f"{args.instance} cap {args.cap}: PRB {p / n:.0f}  hybrid {h / n:.0f}  "
          f"PRB / hybrid {p / h:.3f}")  # fmt: skip
    print("class (queue, walltime, units, unit cores/mem/GPUs): jobs, PRB, hybrid, difference")
    for key, (c, a, b) in sorted(rows.items(), key=lambda kv: -abs(kv[1][2] - kv[1][1]))[
        : args.top
    ]:
        print(f"  {key!s:55s} {c:3.0f} {a / n:9.0f} {b / n:9.0f} {(b - a) / n:+9.0f}")


if __name__ == "__main__":
    main()
