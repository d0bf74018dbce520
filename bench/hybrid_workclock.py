"""Benchmark: how well the deterministic online search's work clock tracks wall time (issue 16).

The online hybrid with ``deterministic=True`` counts work instead of wall seconds
(:mod:`wattsched.scheduler.hybrid.workclock`): a fixed cost per read of the clock (one per
decoded list, growing with the queue) and CP-SAT's deterministic time. When the charges are
too low for some snapshots the search runs past its budget in wall time and, at 3 x the
budget, is cut by the wall cap (``work_capped``), which makes that replay not reproducible.

This script takes snapshots of a ``hist_400`` trace (a PRB replay; every ``--every``-th
cycle with at least ``--min-queued`` waiting jobs), plans each once with a fresh
deterministic hybrid (walltimes, 1-s cycle budget), and records per search: the queue, the
running jobs, wall seconds, CP-SAT wall seconds and deterministic time, the reads and work
charged, and whether the wall cap stopped it. It prints the wall time per read outside
CP-SAT and CP-SAT's wall seconds per deterministic unit, binned by queue length, and plots
wall against work. Run it alone: the figures are wall times.

Usage: ``.venv/bin/python bench/hybrid_workclock.py [--traces 13,4] [--every 5]
[--limit 60] [--out bench/results/hybrid_workclock.json]``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from hybrid_eurora import hist400_traces, machine_info

from wattsched.connectors.simulated import SimulatedCluster
from wattsched.daemon.replay import replay
from wattsched.scheduler.dispatcher import create
from wattsched.scheduler.hybrid.workclock import READ_BASE_S, READ_PER_JOB_S, cp_seconds_per_det
from wattsched.scheduler.model import Plan, PowerCap, Snapshot

BINS = (0, 25, 50, 100, 150, 200, 300, 10_000)


class Recorder:
    """A dispatcher that plans as ``inner`` and keeps every ``every``-th snapshot with at
    least ``min_queued`` waiting jobs."""

    def __init__(self, inner: Any, every: int, min_queued: int) -> None:
        self.inner = inner
        self.every = every
        self.min_queued = min_queued
        self.kept: list[Snapshot] = []
        self._seen = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def plan(self, snap: Snapshot) -> Plan:
        if len(snap.queued) >= self.min_queued:
            if self._seen % self.every == 0:
                self.kept.append(snap)
            self._seen += 1
        plan: Plan = self.inner.plan(snap)
        return plan


def measure(snap: Snapshot) -> dict[str, Any] | None:
    """One deterministic online search on ``snap``; None when it did not search."""
    dispatcher = create("hybrid", cycle_budget_s=1.0, deterministic=True, predictor=False)
    plan = dispatcher.plan(snap)
    extra = plan.stats.extra
    if "ls_tries" not in extra:
        return None
    reads = int(extra.get("work_reads", 0))
    queued = len(snap.queued)
    cp_s = float(extra.get("solver_seconds", 0.0))
    return {
        "queued": queued,
        "running": len(snap.running),
        "wall_s": round(plan.stats.seconds, 4),
        "cp_s": round(cp_s, 4),
        "cp_det": float(extra.get("cp_det", 0.0)),
        "work_s": float(extra.get("work_s", 0.0)),
        "reads": reads,
        "decode_steps": int(extra.get("decode_steps", 0)),
        "metered_s": float(extra.get("work_metered", 0.0)),
        "cp_intervals": queued + len(snap.running),
        "horizon": int(extra.get("horizon", 0)),
        "read_charge_s": round(reads * (READ_BASE_S + READ_PER_JOB_S * max(queued, 1)), 4),
        "ls_tries": int(extra["ls_tries"]),
        "capped": bool(extra.get("work_capped")),
        "source": str(extra.get("best_source")),
    }


def summary(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per queue-length bin: the searches' wall seconds, and wall over what was charged
    outside CP-SAT (reads and decode steps) and inside (deterministic time): 1 when the
    clock's constants fit this machine."""
    out = []
    for lo, hi in itertools.pairwise(BINS):
        sel = [r for r in rows if lo <= r["queued"] < hi]
        if not sel:
            continue
        outside = [(r["wall_s"] - r["cp_s"]) / (r["read_charge_s"] + r["metered_s"])
                   for r in sel if r["read_charge_s"] + r["metered_s"] > 0]  # fmt: skip
        inside = [r["cp_s"] / (r["cp_det"] * cp_seconds_per_det(r["cp_intervals"]))
                  for r in sel if r["cp_det"] > 0.01]  # fmt: skip
        out.append({
            "queued": f"{lo}-{hi}", "searches": len(sel),
            "wall_s_median": round(statistics.median(r["wall_s"] for r in sel), 3),
            "wall_s_max": round(max(r["wall_s"] for r in sel), 3),
            "work_s_median": round(statistics.median(r["work_s"] for r in sel), 3),
            "outside_cp_wall_per_charge": round(statistics.median(outside), 2) if outside else None,
            "cp_wall_per_charge": round(statistics.median(inside), 2) if inside else None,
            "capped": sum(r["capped"] for r in sel),
        })  # fmt: skip
    return out


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    """Wall seconds against the work charged, one point per search, coloured by queue."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    sc = ax.scatter([r["work_s"] for r in rows], [r["wall_s"] for r in rows],
                    c=[r["queued"] for r in rows], cmap="viridis", s=14)  # fmt: skip
    ax.axhline(3.0 * 0.9, color="red", lw=0.8, ls="--", label="wall cap (3 x budget)")
    ax.plot([0, 1], [0, 1], color="grey", lw=0.8, label="wall = work")
    ax.set_xlabel("work charged (budget seconds)")
    ax.set_ylabel("wall seconds")
    ax.set_title("Deterministic online search: wall time against work")
    fig.colorbar(sc, label="queued jobs")
    ax.legend(loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--traces", default="13,4", help="hist_400 trace indices")
    ap.add_argument("--every", type=int, default=5)
    ap.add_argument("--min-queued", type=int, default=2)
    ap.add_argument("--limit", type=int, default=60, help="snapshots per trace at most")
    ap.add_argument("--cap", type=float, default=1500.0, help="as --online-cap")
    ap.add_argument("--out", type=Path, default=Path("bench/results/hybrid_workclock.json"))
    args = ap.parse_args()
    rows: list[dict[str, Any]] = []
    for k in (int(x) for x in args.traces.split(",")):
        path, nodes, jobs, cap_w = next(hist400_traces(args.cap, k, 1))
        rec = Recorder(create("prb"), args.every, args.min_queued)
        replay(SimulatedCluster(nodes, jobs, PowerCap.constant(cap_w), record_power=False), rec)
        snaps = rec.kept[:: max(1, len(rec.kept) // args.limit)][: args.limit]
        print(f"{path.name}: {len(rec.kept)} snapshots kept, measuring {len(snaps)}", flush=True)
        for i, snap in enumerate(snaps):
            row = measure(snap)
            if row is not None:
                rows.append({"trace": path.name, **row})
                print(i, json.dumps(row), flush=True)
    table = summary(rows)
    for line in table:
        print(json.dumps(line))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    doc = {"machine": machine_info(), "date": datetime.now(UTC).isoformat(timespec="seconds"),
           "command": " ".join(sys.argv), "summary": table, "rows": rows}  # fmt: skip
    args.out.write_text(json.dumps(doc, indent=1) + "\n")
    plot(rows, args.out.with_suffix(".png"))
    print(f"written {args.out} and {args.out.with_suffix('.png')}")


if __name__ == "__main__":
    main()
