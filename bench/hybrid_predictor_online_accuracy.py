"""How well the runtime predictor knows the runtimes of the ``hist_400`` traces online, and
how often its gate lets the hybrid plan on it.

Each trace is replayed under PRB at its online cap (``--online-cap``, raised to the tightest
feasible one as in ``hybrid_eurora.py``); the predictor (:mod:`wattsched.scheduler.
runtime_predictor`) learns each job at its end in that schedule, with the prediction made at
its start, as the online hybrid's does. Per trace: mean |log(runtime / guess)| of the
walltimes and of the predictions at the starts, the share of starts predicted from the job's
class, and the share of starts at which the predictions had beaten the walltimes over the
last ``window`` jobs (``RuntimePredictor.better_than_walltimes``: the hybrid plans on them).

Usage: ``.venv/bin/python bench/hybrid_predictor_online_accuracy.py [--out FILE.md]``.
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from hybrid_eurora import hist400_traces
from hybrid_predictor_accuracy import _err

from wattsched.connectors.simulated import SimulatedCluster
from wattsched.daemon.replay import replay
from wattsched.scheduler.dispatcher import create
from wattsched.scheduler.model import PowerCap
from wattsched.scheduler.runtime_predictor import RuntimePredictor


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--online-cap", type=float, default=1500.0)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    lines = [
        "| trace | runtime / walltime, median | walltime error | prediction error "
        "| class-predicted starts | starts with the gate on |",
        "|---|---|---|---|---|---|",
    ]
    for path, nodes, jobs, cap in hist400_traces(args.online_cap):
        cluster = SimulatedCluster(nodes, jobs, PowerCap.constant(cap), record_power=False)
        replay(cluster, create("prb"))
        events = []
        for r in cluster.records.values():
            assert r.start is not None and r.end is not None
            events += [(r.end, 0, r.job), (r.start, 1, r.job)]  # ends before starts
        pred, guess = RuntimePredictor(), {}
        wall_err, pred_err, level, gate = [], [], [], []
        for _, kind, job in sorted(events, key=lambda e: (e[0], e[1], e[2].id)):
            run = job.runtime or job.walltime
            if kind == 0:
                pred.learn(job, run, guess[job.id])
                continue
            guess[job.id] = pred.predict(job)
            wall_err.append(_err(run, job.walltime))
            pred_err.append(_err(run, guess[job.id]))
            level.append(pred.level(job) == "class")
            gate.append(pred.better_than_walltimes())
        ratio = statistics.median((j.runtime or j.walltime) / j.walltime for j in jobs)
        row = (
            f"| {path.name.split('.')[0]} | {ratio:.3f} | {statistics.mean(wall_err):.2f} | "
            f"{statistics.mean(pred_err):.2f} | {sum(level) / len(level):.0%} | "
            f"{sum(gate) / len(gate):.0%} |"
        )
        lines.append(row)
        print(row, flush=True)
    if args.out is not None:
        args.out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
