"""What the online hybrid's searches promise over PRB's plan, search by search (issue 16).

Runs ``bench/hybrid_eurora.py`` (its flags after ``--``) with each online choice
(:func:`wattsched.scheduler.hybrid.rollout.online_choice`) logged as a JSON line: the time,
the queue's length, the queue's wait so far (:func:`~wattsched.scheduler.hybrid.rollout.
sunk_wait`), PRB's plan's and the searched plan's mean weighted queue time, the search's
source, whether the two start different jobs now, and the verdict (the margin's or the
rollout's, and the rollout's gain; from session 30 on). Then prints the deciles of the gain
the search promises on the weighted wait from now on (relative and absolute), of the queue's
length and wait so far, and the verdicts. The choices themselves are unchanged (the runs
give the bench's own figures).

Usage: ``.venv/bin/python bench/hybrid_online_choices.py --log FILE.jsonl -- --skip-offline
--online-from 13 --online-traces 1 --online-runs 1 --online-deterministic on --name ch_13
--out DIR``; ``--summary FILE.jsonl ...`` prints the deciles of logs already written.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any, TextIO

import wattsched.scheduler.hybrid.dispatcher as hybrid_dispatcher
from wattsched.scheduler.hybrid import rollout
from wattsched.scheduler.hybrid.mapping import MappedSchedule
from wattsched.scheduler.model import Snapshot


def _logged(out: TextIO) -> Any:
    def choice(real: Snapshot, best: MappedSchedule, prb: MappedSchedule, **kw: Any) -> Any:
        def now(s: MappedSchedule) -> list[str]:
            return sorted(a.job_id for a in s.assignments if a.start <= real.time)

        row = [real.time, len(real.queued), rollout.sunk_wait(real, prb), prb.objective,
               best.objective, best.source, now(best) != now(prb)]  # fmt: skip
        chosen, extra = rollout.online_choice(real, best, prb, **kw)
        row += [extra.get("margin") or extra.get("rollout") or "", extra.get("rollout_gain")]
        out.write(json.dumps(row) + "\n")
        return chosen, extra

    return choice


def deciles(path: Path) -> str:
    """The deciles of one log (see the module doc), as Markdown lines."""
    rows = [json.loads(line) for line in path.read_text().splitlines() if line]
    rel, gain = [], []
    for _, _, sunk, prb, best, *_ in rows:
        ahead = prb - sunk
        rel.append((prb - best) / ahead if ahead > 0 else 0.0)
        gain.append(prb - best)

    def q(xs: list[float], fmt: str) -> str:
        return ", ".join(format(x, fmt) for x in statistics.quantiles(xs, n=10))

    return "\n".join([
        f"- `{path.name}`: {len(rows)} searches, {sum(r[6] for r in rows)} start other jobs "
        "now than PRB's plan",
        f"  - promised gain on the wait from now on, deciles: {q(rel, '.3f')}",
        f"  - the same in weighted seconds per job: {q(gain, ',.0f')}",
        f"  - queue length: {q([float(r[1]) for r in rows], '.0f')}; wait so far (weighted, "
        f"per job): {q([r[2] for r in rows], ',.0f')}",
        *_verdicts(rows),
    ])  # fmt: skip


def _verdicts(rows: list[list[Any]]) -> list[str]:
    """The margin's and the rollout's verdicts (logs of session 30 on: rows of 9 fields),
    and the deciles of the rollout's gain (PRB's rollout / the plan's) where it judged."""
    if not rows or len(rows[0]) < 9:
        return []
    count = {v: sum(r[7] == v for r in rows) for v in ("prb", "kept")}
    gains = [float(r[8]) for r in rows if r[8] is not None]
    out = [f"  - verdicts: margin or rollout gave way to PRB {count['prb']}, rollout kept "
           f"{count['kept']}"]  # fmt: skip
    if len(gains) >= 2:
        out.append("  - rollout gain (PRB's rollout / the plan's), deciles: "
                   + ", ".join(f"{x:.3f}" for x in statistics.quantiles(gains, n=10)))  # fmt: skip
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--log", type=Path, help="write the choices here and run the bench")
    ap.add_argument("--summary", type=Path, nargs="*", default=[], help="logs to summarise")
    ap.add_argument("bench", nargs=argparse.REMAINDER, help="-- then hybrid_eurora.py's flags")
    args = ap.parse_args()
    if args.log is not None:
        flags = [f for f in args.bench if f != "--"]
        with args.log.open("w") as out:
            hybrid_dispatcher.online_choice = _logged(out)  # type: ignore[attr-defined]
            sys.path.insert(0, str(Path(__file__).parent))
            import hybrid_eurora

            sys.argv = ["hybrid_eurora.py", *flags]
            hybrid_eurora.main()
        print(deciles(args.log))
    for path in args.summary:
        print(deciles(path))


if __name__ == "__main__":
    main()
