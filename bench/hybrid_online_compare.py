"""The hybrid online in several variants side by side, PRB / hybrid per trace and run.

Each variant is a label and a list of ``bench/hybrid_eurora.py`` JSON results (gathered as
``hybrid_online_report.gather`` does: a trace's runs of other seeds in a later file join
them, else the last file that has the trace wins); the table has
a row per trace of any variant, PRB's objective, then per variant its first run's
ratio and every run's.

Usage: ``.venv/bin/python bench/hybrid_online_compare.py LABEL=GLOB[,GLOB...] ...
[--out FILE.md]``, e.g. ``walltimes='bench/results/hybrid_eurora_online*.json'``.
"""

from __future__ import annotations

import argparse
import glob
import statistics
from pathlib import Path

from hybrid_online_report import gather, ratios


def _variant(text: str) -> tuple[str, list[Path]]:
    label, _, globs = text.partition("=")
    files = [Path(f) for g in globs.split(",") for f in sorted(glob.glob(g))]
    if not label or not files:
        raise argparse.ArgumentTypeError(f"{text!r}: LABEL=GLOB[,GLOB...] matching files")
    return label, files


def _fmt(r: float | None) -> str:
    return "-" if r is None else f"{r:.3f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("variants", nargs="+", type=_variant)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    found = [(label, gather(files)) for label, files in args.variants]
    head = "| trace | PRB | " + " | ".join(f"{lb}, run 0 | {lb}, runs" for lb, _ in found)
    lines = [head + " |", "|---|---|" + "---|---|" * len(found)]
    for name in sorted({name for _, traces in found for name in traces}):
        row = next(traces[name][0] for _, traces in found if name in traces)
        cells = [name.split(".")[0], f"{row['prb'][0]['objective']:,.0f}"]
        for _, traces in found:
            rs = ratios(traces[name][0]) if name in traces else []
            cells += [_fmt(rs[0]) if rs else "-", ", ".join(_fmt(r) for r in rs) or "-"]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    for label, traces in found:
        first = [rs[0] for row, _ in traces.values() if (rs := ratios(row)) and rs[0] is not None]
        every = [r for row, _ in traces.values() for r in ratios(row) if r is not None]
        if first:
            lines.append(
                f"- {label}: {len(traces)} traces; run 0 median {statistics.median(first):.3f}, "
                f"mean {statistics.mean(first):.3f}, geometric mean "
                f"{statistics.geometric_mean(first):.3f}, worst {min(first):.3f}, below PRB "
                f"{sum(r < 1 for r in first)}; every run ({len(every)}) below PRB "
                f"{sum(r < 1 for r in every)}, worst {min(every):.3f}"
            )
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if args.out is not None:
        args.out.write_text(text)


if __name__ == "__main__":
    main()
