"""How well the runtime predictor (:mod:`wattsched.scheduler.runtime_predictor`) knows the
runtimes of an Eurora instance's jobs, against their walltimes.

For each instance: the predictor learns the historical jobs that ended before it
(:func:`hybrid_runtime_prior.ended_before`, the bench's cutoff rule), then each job's
prediction at time 0 is compared with its runtime (mean |log(runtime / prediction)|), and
the same for the walltime. ``online``: the jobs learned one by one in the order of their
runtimes (all are submitted at 0: a shorter job can end first), each predicted just before
it is learned; an optimistic view of what a replay learns (jobs start later than 0).

Usage: ``.venv/bin/python bench/hybrid_predictor_accuracy.py --instances SUBSTR,...
[--out FILE]``.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
from pathlib import Path

from hybrid_eurora import DATA, first_arrival, instances, load
from hybrid_runtime_prior import ended_before

from wattsched.scheduler.runtime_predictor import RuntimePredictor


def _err(run: int, guess: int) -> float:
    return abs(math.log(max(run, 1) / max(guess, 1)))


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--instances", type=lambda s: s.split(","), default=[])
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    historical = [f for f in instances([]) if "historical" in str(f)]
    earliest = min(historical, key=first_arrival)
    rows = []
    for f in instances(args.instances):
        _, jobs, _ = load(f)
        history = ended_before(DATA, f, earliest)
        pred = RuntimePredictor()
        pred.learn_all(history)
        levels = [pred.level(j) for j in jobs]
        online = RuntimePredictor()
        online.learn_all(history)
        errs = []
        for j in sorted(jobs, key=lambda j: (j.runtime or j.walltime, j.id)):
            errs.append(_err(j.runtime or j.walltime, online.predict(j)))
            online.learn(j, j.runtime or j.walltime)
        row = {
            "instance": f.name,
            "history_jobs": len(history),
            "levels": {lv: levels.count(lv) for lv in sorted(set(levels))},
            "mae_log_walltime": statistics.mean(_err(j.runtime or j.walltime, j.walltime)
                                                for j in jobs),
            "mae_log_predicted": statistics.mean(_err(j.runtime or j.walltime, pred.predict(j))
                                                 for j in jobs),
            "mae_log_online": statistics.mean(errs),
        }  # fmt: skip
        rows.append(row)
        print(json.dumps(row), flush=True)
    if args.out is not None:
        args.out.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
