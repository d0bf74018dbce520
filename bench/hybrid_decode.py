"""Benchmark: the cost of one decode (a priority list mapped by the real list scheduler) and
how many decodes one hybrid search makes (issue 16, "more search per second").

Per instance and cap (Eurora 200-job instances, 32 nodes, runtime = walltime, all jobs at 0):

- decodes per second of noisy priority lists (the local search's restarts), wall and CPU
  seconds: by :func:`~wattsched.scheduler.hybrid.mapping.map_schedule` (``mapper``), by the
  compiled :class:`~wattsched.scheduler.hybrid.decode.ListDecoder` (``compiled``: the same
  schedule; ``compiled_objective``: its objective only, as the local search decodes);
- one :func:`~wattsched.scheduler.hybrid.search.hybrid_search` at the first search's budget
  (offline: 60 % of the replay's), its counts: restarts and swaps tried, serial decodes and
  polish swaps, LNS moves, CP solves, mapped schedules, the winning source, the ratio PRB /
  best;
- ``--profile``: a pyinstrument profile of the decodes.

Usage: ``.venv/bin/python bench/hybrid_decode.py [--instances A,B] [--caps 0,1]
[--decodes 200] [--budget 3.6] [--profile] [--set local_search=0.8,...] [--out F.json]``;
``--budget 0`` measures the decodes only. Results: ``bench/results/hybrid_decode_rates.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

from hybrid_eurora import instances, time0_snapshots

from wattsched.scheduler.dispatcher import prb_order
from wattsched.scheduler.hybrid.decode import ListDecoder
from wattsched.scheduler.hybrid.mapping import map_schedule
from wattsched.scheduler.hybrid.search import SearchParams, hybrid_search
from wattsched.scheduler.mapper import StateCache
from wattsched.scheduler.model import Job, Snapshot

PARAMS = SearchParams(budget_s=3.6, workers=8, retry_on_timeout=True, lns=True,
                      lower_bound="none")  # fmt: skip
"""The offline dispatcher's first search (``lower_bound`` off: the bench has its own)."""


def decode_rate(snap: Snapshot, count: int, seed: int, profile: bool) -> dict[str, Any]:
    """Decodes of noisy PRB orders: per second (wall and CPU)."""
    cache = StateCache()
    order = prb_order(snap.queued)
    rng = np.random.default_rng(seed)
    n = len(order)
    lists = []
    for _ in range(count):
        keys = np.arange(n, 0, -1) * np.exp(rng.normal(0.0, 0.35, n))
        lists.append([order[i] for i in np.argsort(-keys, kind="stable")])
    decoder = ListDecoder(snap, cache)
    ways: dict[str, Callable[[list[Job]], object]] = {
        "mapper": lambda c: map_schedule(snap, cache, c, release=None, source="restart"),
        "compiled": lambda c: decoder.schedule(c, "restart"),
        "compiled_objective": decoder.objective,
    }
    out: dict[str, Any] = {"decodes": count, "compiled_path": decoder.compiled}
    for way, decode in ways.items():
        decode(order)  # warm
        prof = None
        if profile:
            from pyinstrument import Profiler

            prof = Profiler(interval=0.0005)
            prof.start()
        w0, c0 = time.perf_counter(), time.process_time()
        for cand in lists:
            decode(cand)
        wall, cpu = time.perf_counter() - w0, time.process_time() - c0
        if prof is not None:
            prof.stop()
            print(way, prof.output_text(unicode=False, color=False, show_all=False))
        out[way] = {"per_s_wall": round(count / wall, 1), "per_s_cpu": round(count / cpu, 1),
                    "ms_cpu": round(1000 * cpu / count, 3)}  # fmt: skip
    return out


def one_search(snap: Snapshot, params: SearchParams) -> dict[str, Any]:
    """One search from the snapshot: its counts and result."""
    c0 = time.process_time()
    out = hybrid_search(snap, StateCache(), params)
    sources = Counter(src.rstrip("0123456789-list").rstrip("0123456789") for src, _ in out.history)
    keep = ("ls_", "lns_moves", "lns_improvements", "solves", "mapped_schedules", "serial_",
            "polish_")  # fmt: skip
    return {
        "ratio": round(out.prb.objective / out.best.objective, 4) if out.best.objective else 1.0,
        "best_source": out.best.source,
        "cpu_s": round(time.process_time() - c0, 2),
        "wall_s": round(out.stats.seconds, 2),
        "counts": {k: v for k, v in out.stats.extra.items() if k.startswith(keep)},
        "sources": dict(sources),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument(
        "--instances", type=lambda s: s.split(","), default=["hist_200_20140331_112449"]
    )
    ap.add_argument("--caps", type=lambda s: [int(x) for x in s.split(",")], default=[0, 1])
    ap.add_argument("--decodes", type=int, default=200)
    ap.add_argument("--budget", type=float, default=3.6, help="first search s (0: none)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument(
        "--set",
        type=lambda s: [kv.split("=") for kv in s.split(",")],
        default=[],
        help="SearchParams overrides, key=value,... (numbers)",
    )
    ap.add_argument("--out", type=Path, default=None, help="JSON file for the rows")
    args = ap.parse_args()
    rows = []
    load0 = os.getloadavg()
    for f, k, cap_w, _, snap in time0_snapshots(instances(args.instances), args.caps):
        row: dict[str, Any] = {"instance": f.name, "cap_idx": k, "cap_w": cap_w}
        row["decode"] = decode_rate(snap, args.decodes, args.seed, args.profile)
        if args.budget > 0:
            over = {k: type(getattr(PARAMS, k))(v) for k, v in args.set}
            row["search"] = one_search(
                snap, replace(PARAMS, budget_s=args.budget, seed=args.seed, **over)
            )
        rows.append(row)
        print(json.dumps(row), flush=True)
    if args.out is not None:
        args.out.write_text(json.dumps({"rows": rows, "loadavg": [load0, os.getloadavg()],
                                        "command": " ".join(sys.argv)}, indent=1))  # fmt: skip


if __name__ == "__main__":
    main()
