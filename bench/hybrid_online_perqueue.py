"""Where an online run of the hybrid gains or loses against PRB: per kind of job.

Reads ``bench/hybrid_eurora.py`` JSON results whose online runs kept their per-job starts
(since session 19) and, per trace and run, splits PRB's and the hybrid's mean weighted queue
time over kinds of job: queue, one node or several, short (runtime under ``--short`` s) or
long. The kinds sum to the objective; the rows are sorted by what the hybrid loses.

Usage: ``.venv/bin/python bench/hybrid_online_perqueue.py RESULT.json [...] [--short 600]
[--out FILE.md]``.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from hybrid_eurora import DATA, hist400_traces

from wattsched.scheduler.model import Job


def _kind(job: Job, short_s: int) -> tuple[str, str, str]:
    return (job.queue, "multi-node" if job.units > 1 else "one node",
            "short" if job.runtime < short_s else "long")  # fmt: skip


def split(jobs: list[Job], prb: dict[str, int], hyb: dict[str, int],
          short_s: int) -> dict[tuple[str, str, str], list[float]]:  # fmt: skip
    """Kind -> [jobs, PRB's share of its mean weighted queue time, the hybrid's share]."""
    max_ewt = max(j.ewt for j in jobs)
    out: dict[tuple[str, str, str], list[float]] = defaultdict(lambda: [0, 0.0, 0.0])
    for j in jobs:
        w = max_ewt / j.ewt / len(jobs)
        row = out[_kind(j, short_s)]
        row[0] += 1
        row[1] += w * (prb[j.id] - j.submit)
        row[2] += w * (hyb[j.id] - j.submit)
    return dict(out)


def _loss(item: tuple[tuple[str, str, str], list[float]]) -> float:
    return item[1][1] - item[1][2]


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("results", nargs="+", type=Path)
    ap.add_argument("--short", type=int, default=600, help="a short job runs under this, s")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    names = [p.name for p in sorted((DATA / "historical_traces" / "400").glob("*.log_crypt"))]
    lines: list[str] = []
    for f in args.results:
        data: dict[str, Any] = json.loads(f.read_text())
        for row in data.get("online") or []:
            k = names.index(row["instance"])
            ((_, _, jobs, _),) = list(hist400_traces(row["cap_w"], k, 1, row["protocol"]))
            prb = row["prb"][0]
            for run in row["hybrid"]:
                if "starts" not in prb or "starts" not in run:
                    continue
                parts = split(jobs, prb["starts"], run["starts"], args.short)
                lines += [f"### {row['instance']}, seed {run.get('seed', 0)} (`{f.name}`)", "",
                          "| queue | nodes | runtime | jobs | PRB | hybrid | hybrid - PRB |",
                          "|---|---|---|---|---|---|---|"]  # fmt: skip
                for (q, n, s), (cnt, p, h) in sorted(parts.items(), key=_loss):
                    lines.append(
                        f"| {q} | {n} | {s} | {cnt:.0f} | {p:,.0f} | {h:,.0f} | {h - p:+,.0f} |"
                    )
                p_all = sum(v[1] for v in parts.values())
                h_all = sum(v[2] for v in parts.values())
                lines += [f"| all | | | {len(jobs)} | {p_all:,.0f} | {h_all:,.0f} | "
                          f"{h_all - p_all:+,.0f} |", ""]  # fmt: skip
    text = "\n".join(lines)
    if args.out:
        args.out.write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
