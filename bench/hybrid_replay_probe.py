"""What the online hybrid did on one real-runtime row: its slip, refused starts and judged holds.

One Eurora 200-job instance, one cap of ``bench/hybrid_eurora.py``'s sweep, the real-runtime
protocol (every job queued at time 0, each running its real runtime): PRB and the hybrid in
``mode="online"`` (the bench's ``--real-mode online`` settings, plus the JSON parameters given)
are replayed, and for the hybrid's replay this prints

- both mean weighted queue times and their ratio (PRB / hybrid, > 1: the hybrid is better);
- the **slip**: each job's start in the first searched plan that held it against its real
  start, weighted as the objective: a start later than first planned is a later search
  reordering the queue, or a runtime longer than that plan assumed (it plans on the
  predictions where the predictor has them, on the walltimes elsewhere);
- the planned starts the dispatcher refused, by reason (over the cap, a reservation);
- every judged hold (:mod:`wattsched.scheduler.hybrid.holds`): the held job, its prediction
  and the predictor's level for it, and whether it paid.

Usage: ``.venv/bin/python bench/hybrid_replay_probe.py hist_200_20140402_220500 0
'{"twin_power": false}' --seed 1 --out probe.json`` (a few minutes a row; keep at most about
six at a time on two cores: the work-based search budget is cut by a wall cap under load).
Session 42 of ``bench/results/hybrid_eurora.md`` used the ad hoc scripts this gathers.
"""

from __future__ import annotations

import argparse
import json
import logging
import re
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hybrid_eurora import cap_sweep, instances, load, run_one, with_protocol
from hybrid_eurora_perclass import replay_starts, weighted_waits

import wattsched.scheduler.hybrid.dispatcher as hybrid_dispatcher
import wattsched.scheduler.hybrid.holds as holds
from wattsched.scheduler.dispatcher import create
from wattsched.scheduler.model import Job, PowerCap, Snapshot
from wattsched.scheduler.runtime_predictor import RuntimePredictor

ACCEL = {"foresight": 14400, "rollout_margin": 0.005, "rollout_by_class": True,
         "twin_power": False, "reserve_accel": True}  # fmt: skip
"""The bench's ``--real-mode online --real-by-class on --real-twin-power off --reserve-accel
on`` settings."""


class Refusals(logging.Handler):
    """Counts the dispatcher's "job X waits: <reason>" records by reason."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.reasons: Counter[str] = Counter()

    def emit(self, record: logging.LogRecord) -> None:
        m = re.search(r"waits: (.*)$", record.getMessage())
        if m:
            self.reasons[m.group(1)] += 1


def probe(instance: str, cap_idx: int, params: dict[str, Any], seed: int) -> dict[str, Any]:
    """Replay PRB and the hybrid on one row; what the module doc lists, as a dict."""
    nodes, jobs, _ = load(instances([instance])[0])
    base = run_one(nodes, with_protocol(jobs, "walltime"), PowerCap.unlimited(), "prb", {})
    caps = cap_sweep(nodes, jobs, base["peak_w"])
    if not 0 <= cap_idx < len(caps):
        raise ValueError(f"cap: {cap_idx} is not a cap index of the sweep (0-{len(caps) - 1})")
    cap = PowerCap.constant(caps[cap_idx])
    real = with_protocol(jobs, "real")
    prb = weighted_waits(nodes, real, cap, create("prb"))

    first: dict[str, int] = {}
    judged: list[dict[str, Any]] = []
    search, pays = hybrid_dispatcher.hybrid_search, holds.reservation_pays

    def first_plans(snap: Snapshot, *args: Any, **kw: Any) -> Any:
        out = search(snap, *args, **kw)
        for a in out.best.assignments:
            first.setdefault(a.job_id, a.start)
        return out

    def judged_pays(snap: Snapshot, head: Job, predictor: RuntimePredictor,
                    *args: Any) -> tuple[bool, float]:  # fmt: skip
        ok, gain = pays(snap, head, predictor, *args)
        judged.append({"time": snap.time, "job": head.id, "units": head.units,
                       "walltime": head.walltime, "predicted": predictor.predict(head),
                       "level": predictor.level(head), "pays": ok,
                       "prb_over_held": round(gain, 4)})  # fmt: skip
        return ok, gain

    refusals = Refusals()
    log = logging.getLogger("wattsched.scheduler.hybrid.dispatcher")
    level = log.level
    log.addHandler(refusals)
    log.setLevel(logging.INFO)
    hybrid_dispatcher.hybrid_search = first_plans
    holds.reservation_pays = judged_pays
    try:
        disp = create("hybrid", mode="online", seed=seed, **{**ACCEL, **params})
        t0, starts = replay_starts(nodes, real, cap, disp)
    finally:
        hybrid_dispatcher.hybrid_search, holds.reservation_pays = search, pays
        log.removeHandler(refusals)
        log.setLevel(level)

    top = max(j.ewt for j in real)
    weight = {j.id: top / j.ewt for j in real}
    hyb = {jid: (s - t0) * weight[jid] for jid, s in starts.items()}
    slip = sum(max(0, s - first[jid]) * weight[jid] for jid, s in starts.items() if jid in first)
    n = len(real)
    p, h = sum(prb.values()) / n, sum(hyb.values()) / n
    return {"instance": instance, "cap_idx": cap_idx, "seed": seed, "params": params,
            "prb": round(p), "hybrid": round(h), "ratio": round(p / h, 4),
            "slip": round(slip / n), "slip_share": round(slip / n / h, 4),
            "refused": dict(refusals.reasons), "holds": judged}  # fmt: skip


def report(out: dict[str, Any]) -> list[str]:
    """The probe's figures as lines of text."""
    lines = [f"{out['instance']} cap {out['cap_idx']} seed {out['seed']}: PRB {out['prb']}  "
             f"hybrid {out['hybrid']}  PRB / hybrid {out['ratio']:.3f}",
             f"slip behind the first plans: {out['slip']} ({out['slip_share']:.0%} of the "
             f"hybrid's objective)",
             f"planned starts refused: {out['refused'] or 'none'}"]  # fmt: skip
    verdicts = Counter((h["level"], h["pays"]) for h in out["holds"])
    counts = ", ".join(f"{k}: {v}" for k, v in sorted(verdicts.items()))
    lines.append(f"judged holds (level, pays): {counts or 'none'}")
    for h in out["holds"]:
        if h["pays"]:
            lines.append(f"  paid: {h['job']} units {h['units']} walltime {h['walltime']} "
                         f"predicted {h['predicted']} ({h['level']}) PRB / held "
                         f"{h['prb_over_held']:.3f}")  # fmt: skip
    return lines


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("instance", help="a substring of the instance's file name (the first match)")
    ap.add_argument("cap", type=int, help="the cap's index in the sweep (0: the tightest)")
    ap.add_argument(
        "params",
        nargs="?",
        default="{}",
        help="the hybrid's parameters over the bench's accel settings, JSON",
    )
    ap.add_argument("--seed", type=int, default=0, help="the hybrid's seed")
    ap.add_argument("--out", type=Path, help="also write the figures (and every hold) as JSON")
    args = ap.parse_args(argv)
    try:
        params = json.loads(args.params)
    except json.JSONDecodeError as e:
        ap.error(f"params: not JSON ({e}): {args.params!r}")
    if not isinstance(params, dict):
        ap.error(f"params: a JSON object is needed, not {args.params!r}")
    if not instances([args.instance]):
        ap.error(f"instance: no 200-job Eurora instance's name contains {args.instance!r}")
    try:
        out = probe(args.instance, args.cap, params, args.seed)
    except ValueError as e:
        ap.error(str(e))
    print("\n".join(report(out)))
    if args.out is not None:
        args.out.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
