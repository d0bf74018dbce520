"""Real-runtime rows of several ``bench/hybrid_eurora.py`` runs side by side: PRB / hybrid per
instance and cap for each variant, a summary line per variant, and a plot.

Usage: ``.venv/bin/python bench/hybrid_real_variants.py online=a.json,b.json
by_class=c.json --png out.png`` (each NAME=FILES a variant; a row seen twice in a variant's
files keeps the last). ``--runs NAME=V1,V2,...``: one more column, PRB over the mean of the
hybrid's objectives in variants V1, V2, ... (runs of one dispatcher with other seeds; PRB is
the same in each), on the rows all of them have. Prints a markdown table.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

Key = tuple[str, int]


def ratios(files: list[Path]) -> dict[Key, float]:
    """(instance, cap index) -> PRB / hybrid of the real-runtime rows of ``files``."""
    out: dict[Key, float] = {}
    for f in files:
        for row in json.loads(f.read_text())["offline"]:
            if row["protocol"] == "real":
                out[(row["instance"].split(".")[0], row["cap_idx"])] = row["ratio"]
    return out


def summary(name: str, values: list[float]) -> str:
    gmean = statistics.geometric_mean(values)
    below = sum(v < 1 for v in values)
    return (f"- {name}: {len(values)} rows, median {statistics.median(values):.3f}, geometric "
            f"mean {gmean:.3f}, min {min(values):.3f}, rows < 1: {below}")  # fmt: skip


def over_runs(runs: list[dict[Key, float]]) -> dict[Key, float]:
    """PRB / the mean hybrid objective over ``runs`` (the harmonic mean of their ratios: PRB's
    objective is the same in each), on the rows every run has."""
    keys = set.intersection(*(set(r) for r in runs))
    return {k: len(runs) / sum(1 / r[k] for r in runs) for k in keys}


def plot(variants: dict[str, dict[Key, float]], keys: list[Key], png: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(max(8.0, 0.45 * len(keys)), 4.5))
    for k, (name, rows) in enumerate(variants.items()):
        xs = [i + (k - (len(variants) - 1) / 2) * 0.8 / len(variants)
              for i, key in enumerate(keys) if key in rows]  # fmt: skip
        ax.scatter(xs, [rows[key] for key in keys if key in rows], s=18, label=name)
    ax.axhline(1.0, color="black", lw=0.8)
    ax.axhline(1.3, color="grey", lw=0.8, ls="--")
    ax.set_xticks(range(len(keys)), [f"{i.replace('_200_', ' ')} c{c}" for i, c in keys],
                  rotation=70, fontsize=7)  # fmt: skip
    ax.set_ylabel("PRB / hybrid (mean weighted queue time)")
    ax.set_title("Real runtimes, tightest third of the caps (1.0: PRB; dashed: target 1.3)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(png, dpi=110)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("variants", nargs="+", help="NAME=FILE[,FILE...]")
    ap.add_argument("--png", type=Path, help="write the plot here")
    runs_help = "NAME=V1,V2,...: PRB / the mean hybrid objective of those runs"
    ap.add_argument("--runs", action="append", default=[], help=runs_help)
    args = ap.parse_args()
    variants: dict[str, dict[Key, float]] = {}
    for spec in args.variants:
        name, _, files = spec.partition("=")
        if not files:
            ap.error(f"{spec!r}: expected NAME=FILE[,FILE...]")
        variants[name] = ratios([Path(f) for f in files.split(",")])
    for spec in args.runs:
        name, _, of = spec.partition("=")
        missing = [v for v in of.split(",") if v not in variants]
        if not of or missing:
            ap.error(f"--runs {spec!r}: expected NAME=V1,V2,... of the variants given {missing}")
        variants[name] = over_runs([variants[v] for v in of.split(",")])
    keys = sorted(set().union(*variants.values()))
    print("| instance | cap | " + " | ".join(variants) + " |")
    print("|---|---|" + "---|" * len(variants))
    for key in keys:
        cells = [f"{rows[key]:.3f}" if key in rows else "-" for rows in variants.values()]
        print(f"| {key[0]} | {key[1]} | " + " | ".join(cells) + " |")
    for name, rows in variants.items():
        if rows:
            print(summary(name, list(rows.values())))
    if args.png is not None:
        plot(variants, keys, args.png)


if __name__ == "__main__":
    main()
