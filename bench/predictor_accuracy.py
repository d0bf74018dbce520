"""How close the online runtime predictor comes to the runtimes, on every ``hist_400`` trace.

Replays each Eurora ``hist_400`` trace (real arrivals and runtimes, the online cap of
``bench/hybrid_eurora.py``) with PRB, a cycle at every event, and beside it a
:class:`~wattsched.scheduler.runtime_predictor.RuntimePredictor` fed as the online hybrid
feeds its own (each snapshot observed, each start told): each job learned is compared, with
the prediction made when it started, to its runtime. Per ``--min-runs`` variant and trace:

- ``area``: sum over the jobs learned of units x |runtime - prediction|, over the same with
  the walltime for the prediction (< 1: closer than the walltimes);
- ``under``: the same numerator counting only the jobs that ran *longer* than predicted (a
  plan counts on their nodes too early: the error that makes other jobs wait);
- ``log``: the gate's measure (mean |log runtime/prediction| over mean |log
  runtime/walltime|), and ``open``: the share of cycles the gate let the plan use predictions.

Deterministic (PRB, no search), about two seconds a trace and variant.

Usage: ``.venv/bin/python bench/predictor_accuracy.py [--min-runs 1,2] [--out bench/results]
[--name predictor_accuracy]``.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
from pathlib import Path
from typing import Any

from hybrid_eurora import hist400_traces, machine_info

from wattsched.connectors.simulated import SimulatedCluster
from wattsched.daemon.replay import replay
from wattsched.scheduler.dispatcher import Dispatcher, create
from wattsched.scheduler.model import Job, Plan, PowerCap, Snapshot
from wattsched.scheduler.runtime_predictor import RuntimePredictor


class RecordingPredictor(RuntimePredictor):
    """A predictor that keeps ``(job, runtime, prediction)`` of each job it learns."""

    def __post_init__(self) -> None:
        super().__post_init__()
        self.record: list[tuple[Job, int, int]] = []

    def learn(self, job: Job, runtime: int, predicted: int | None = None) -> None:
        guess = self.predict(job) if predicted is None else max(1, predicted)
        self.record.append((job, max(1, min(int(runtime), job.walltime)), guess))
        super().learn(job, runtime, predicted)


class Watched(Dispatcher):
    """PRB, with a predictor fed as the online hybrid feeds its own (not a skipping
    dispatcher: a cycle at every event, as the hybrid's)."""

    name = "prb-watched"

    def __init__(self, predictor: RuntimePredictor) -> None:
        super().__init__()
        self.inner, self.predictor = create("prb"), predictor
        self.open = self.cycles = 0

    def plan(self, snap: Snapshot) -> Plan:
        self.predictor.observe(snap)
        self.cycles += 1
        self.open += self.predictor.better_than_walltimes()
        plan = self.inner.plan(snap)
        self.predictor.plan_started(snap, plan)
        return plan


def measure(record: list[tuple[Job, int, int]]) -> dict[str, float]:
    """The error measures of the module doc over one replay's learned jobs."""
    wall = sum(abs(r - j.walltime) * j.units for j, r, _ in record) or 1
    log_wall = sum(abs(math.log(r / j.walltime)) for j, r, _ in record) or 1.0
    return {
        "learned": len(record),
        "area": sum(abs(r - g) * j.units for j, r, g in record) / wall,
        "under": sum(max(0, r - g) * j.units for j, r, g in record) / wall,
        "log": sum(abs(math.log(r / g)) for j, r, g in record) / log_wall,
    }


def run(online_cap: float, variants: list[int]) -> list[dict[str, Any]]:
    """One row per trace, a measure per ``min_runs`` variant."""
    rows = []
    for path, nodes, jobs, cap_w in hist400_traces(online_cap):
        row: dict[str, Any] = {"instance": path.name, "jobs": len(jobs), "cap_w": cap_w}
        for k in variants:
            predictor = RecordingPredictor(min_runs=k)
            watched = Watched(predictor)
            cluster = SimulatedCluster(nodes, jobs, PowerCap.constant(cap_w), record_power=False)
            replay(cluster, watched)
            row[str(k)] = {**measure(predictor.record), "open": watched.open / watched.cycles}
        print(path.name, {k: round(v["under"], 3) for k, v in row.items() if k.isdigit()},
              flush=True)  # fmt: skip
        rows.append(row)
    return rows


def report(rows: list[dict[str, Any]], variants: list[int], info: dict[str, Any]) -> str:
    """The Markdown table and its medians."""
    head = " | ".join(f"{m} ({k})" for k in variants for m in ("area", "under", "log", "open"))
    lines = [
        "# The online runtime predictor's accuracy along PRB's path, hist_400",
        "",
        f"- run {info['date']} on `{info['uname']}` ({info['nproc']} cores), commit "
        f"`{info['commit']}`, command `{info['command']}`; deterministic.",
        "- (k) = `min_runs`, the ended jobs a class needs before it predicts. area, under: "
        "units x seconds of error (under: jobs that ran longer than predicted) over the "
        "walltimes' error; log: the gate's measure; open: share of cycles the gate opened "
        "(see `bench/predictor_accuracy.py`). Lower is better but for open.",
        "",
        f"| trace | {head} |",
        "|---|" + "---|" * 4 * len(variants),
    ]
    for row in rows:
        cells = " | ".join(f"{row[str(k)][m]:.2f}" for k in variants
                           for m in ("area", "under", "log", "open"))  # fmt: skip
        lines.append(f"| {row['instance'].removesuffix('.log_crypt')} | {cells} |")
    lines.append("")
    for k in variants:
        med = {m: statistics.median(r[str(k)][m] for r in rows) for m in ("area", "under", "log")}
        lines.append(f"- min_runs {k}: median area {med['area']:.3f}, under {med['under']:.3f}, "
                     f"log {med['log']:.3f}")  # fmt: skip
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--min-runs", default="1,2", help="comma-separated variants")
    ap.add_argument("--online-cap", type=float, default=1500.0)
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    ap.add_argument("--name", default="predictor_accuracy")
    args = ap.parse_args()
    variants = [int(k) for k in args.min_runs.split(",")]
    info = machine_info()
    rows = run(args.online_cap, variants)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{args.name}.json").write_text(json.dumps({"info": info, "rows": rows},
                                                           indent=1) + "\n")  # fmt: skip
    (args.out / f"{args.name}.md").write_text(report(rows, variants, info))
    print(f"wrote {args.out / args.name}.md")


if __name__ == "__main__":
    main()
