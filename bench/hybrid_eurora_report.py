"""The markdown summary and plots of ``bench/hybrid_eurora.py``'s JSON results.

Usage: ``.venv/bin/python bench/hybrid_eurora_report.py RESULT.json [MORE.json ...]
[--before OLD.json,...] [--name STEM] [--only FILE.json:PROTOCOL,...]``: the rows of every
file together (e.g. a run per protocol or cap range, made on a shared machine in parts),
written as ``<STEM>.md`` and ``<STEM>_ratios.png`` beside the first (default: its stem).
``--before``: results of an earlier search, compared row by row (same instance, protocol and
cap) with these. ``--only``: take one protocol's rows from a file (another file re-ran the
other).
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from pathlib import Path
from typing import Any


def _med(xs: list[float | None]) -> float:
    v = [x for x in xs if x is not None and math.isfinite(x)]
    return statistics.median(v) if v else math.nan


def _source(r: dict[str, Any]) -> str:
    src = str(r["hybrid"].get("best_source") or "prb")
    return "".join(ch for ch in src if not ch.isdigit()) or "prb"


def _before(rows: list[dict[str, Any]], before: list[Path]) -> list[str]:
    """Ratios of these rows against the same rows (instance, protocol, cap) in ``before``."""
    import json

    def key(r: dict[str, Any]) -> tuple[str, str, int]:
        return (r["instance"], r["protocol"], r["cap_idx"])

    old = {key(r): r for p in before for r in json.loads(p.read_text())["offline"]}
    lines = ["", "## Against the previous search (same rows)", "",
             "| protocol | rows | median ratio before | median ratio now | better now | "
             "worse now | rows < 1 before | rows < 1 now |",
             "|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for proto in sorted({r["protocol"] for r in rows}):
        pairs = [(old[key(r)]["ratio"], r["ratio"]) for r in rows
                 if r["protocol"] == proto and key(r) in old]  # fmt: skip
        if not pairs:
            continue
        lines.append(
            f"| {proto} | {len(pairs)} | {_med([a for a, _ in pairs]):.3f} | "
            f"{_med([b for _, b in pairs]):.3f} | {sum(b > a + 1e-9 for a, b in pairs)} | "
            f"{sum(b < a - 1e-9 for a, b in pairs)} | {sum(a < 1 - 1e-9 for a, _ in pairs)} | "
            f"{sum(b < 1 - 1e-9 for _, b in pairs)} |"
        )
    return lines


def _kinds_variant(path: Path) -> list[str]:
    """One line on a real-runtime run with other kinds of runtime scenario."""
    import json

    d = json.loads(path.read_text())
    rows = d["offline"]
    kept = sum(r["hybrid"].get("solver", {}).get("robust", {}).get("kept", 0) for r in rows)
    below = sorted(r["ratio"] for r in rows if r["ratio"] < 1 - 1e-9)
    return [
        "",
        f"- `{path.name}` (scenario kinds {d['params'].get('scenario_kinds') or 'all six'}, load "
        f"{d['machine']['loadavg_start'][0]:.1f}): {len(rows)} real-runtime rows, plans kept "
        f"{kept}, median ratio {_med([r['ratio'] for r in rows]):.3f}, best "
        f"{max(r['ratio'] for r in rows):.3f}, below 1.0: {len(below)} "
        f"({', '.join(f'{b:.3f}' for b in below)}).",
    ]


def _ablation(path: Path) -> list[str]:
    """The variants of ``bench/hybrid_search_ablation.py``: one search each, same budget."""
    import json

    d = json.loads(path.read_text())
    rows = d["rows"]
    names = [k for k in rows[0] if isinstance(rows[0][k], dict) and "ratio" in rows[0][k]]
    lines = ["", f"## Search ablation (`{path.name}`: one time-0 search per row, runtime = "
             f"walltime, same budget; load {d['loadavg'][0]:.1f}; `{d['command']}`)", "",
             "| variant | rows | median ratio | mean ratio | better than the first | worse | "
             "won by the CP or LNS |", "|---|---|---|---|---|---|---|"]  # fmt: skip
    first = names[0]
    for n in names:
        rs = [r[n]["ratio"] for r in rows]
        lines.append(
            f"| {n} | {len(rs)} | {_med(rs):.3f} | {statistics.fmean(rs):.3f} | "
            f"{sum(r[n]['ratio'] > r[first]['ratio'] + 1e-9 for r in rows)} | "
            f"{sum(r[n]['ratio'] < r[first]['ratio'] - 1e-9 for r in rows)} | "
            f"{sum(str(r[n]['source']).startswith(('cp', 'lns')) for r in rows)} |"
        )
    return lines


def report(
    path: Path,
    *more: Path,
    before: list[Path] | None = None,
    name: str | None = None,
    only: dict[str, str] | None = None,
) -> str:
    """The report of ``path`` and ``more`` together; ``only`` maps a file name to the one
    protocol whose rows are taken from it (e.g. when a later file re-ran the other)."""
    import json

    only = only or {}
    files = (path, *more)
    parts = [json.loads(p.read_text()) for p in files]
    data = parts[0]
    rows: list[dict[str, Any]] = [
        r
        for p, d in zip(files, parts, strict=True)
        for r in d["offline"]
        if r["protocol"] == only.get(p.name, r["protocol"])
    ]
    data["online"] = [o for d in parts for o in (d.get("online") or [])]
    lines = [
        "# Hybrid dispatcher on the Eurora 200-job instances (power-capping paper, section 6)",
        "",
    ]
    for p, d in zip((path, *more), parts, strict=True):
        m = d["machine"]
        taken = f" (only its `{only[p.name]}` rows here)" if p.name in only else ""
        lines.append(
            f"- `{p.name}`{taken}: run {m['date']} on `{m['uname']}`, {m['nproc']} cores "
            f"shared with other agents (load average {m['loadavg_start'][0]:.1f} at the start, "
            f"{m.get('loadavg_end', [math.nan])[0]:.1f} at the end), {d['total_s']} s; "
            f"command `{m['command']}`; parameters {d['params']}."
        )
    lines += [
        "",
        "Ratio = PRB's mean weighted queue time / the hybrid's (> 1: the hybrid is better), "
        "from the simulated cluster's records. Gap = objective / a valid lower bound (the "
        "better of the fluid and time-indexed LP bounds of `scheduler/hybrid/bound.py`, with "
        "the protocol's durations). Cap index 0 = the tightest feasible cap, "
        f"{data['params']['n_caps'] - 1} = the uncapped PRB peak.",
        "",
        "| protocol | cap idx | rows | median ratio | min ratio | rows < 1 | median PRB gap | "
        "median hybrid gap | max plan s | winning sources |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    groups: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["protocol"], r["cap_idx"]), []).append(r)
    for (proto, k), rs in sorted(groups.items()):
        src = Counter(_source(r) for r in rs)
        lines.append(
            f"| {proto} | {k} | {len(rs)} | {_med([r['ratio'] for r in rs]):.3f} | "
            f"{min(r['ratio'] for r in rs):.3f} | {sum(r['ratio'] < 1 - 1e-9 for r in rs)} | "
            f"{_med([r['gap_prb'] for r in rs]):.3f} | {_med([r['gap_hybrid'] for r in rs]):.3f}"
            f" | {max(r['hybrid']['plan_s_max'] for r in rs):.1f} | "
            + ", ".join(f"{s} {c}" for s, c in src.most_common())
            + " |"
        )
    n_caps = data["params"]["n_caps"]
    third = max(1, n_caps // 3)
    lines += ["", "## Targets", ""]
    for proto in sorted({r["protocol"] for r in rows}):
        tight = [r for r in rows if r["protocol"] == proto and r["cap_idx"] < third]
        below = [r for r in rows if r["protocol"] == proto and r["ratio"] < 1 - 1e-9]
        best_possible = _med([r["gap_prb"] for r in tight])
        lines.append(
            f"- {proto}: median ratio at the tightest third of the caps (idx < {third}, "
            f"{len(tight)} rows): **{_med([r['ratio'] for r in tight]):.3f}** (target >= 1.3); "
            f"rows below 1.0: **{len(below)}** of "
            f"{sum(r['protocol'] == proto for r in rows)} (target 0); the most any schedule "
            f"could gain there, PRB / bound: median {best_possible:.3f}."
        )
    viol = sum(r[n]["cap_violation_s"] + r[n]["start_errors"] for r in rows for n in ("prb",
               "hybrid"))  # fmt: skip
    src = Counter(_source(r) for r in rows)
    cp = sum(c for k, c in src.items() if k.startswith(("cp", "lns")))
    lines += [
        f"- the CP (a whole-model solve or an LNS move on it) is the winning source in {cp} "
        f"of {len(rows)} first searches (target: most).",
        f"- planning time per plan (max over every cycle of every replay): "
        f"{max((r['hybrid']['plan_s_max'] for r in rows), default=0):.1f} s (target <= 10 s).",
        f"- seconds above the cap + refused starts over all replays: {viol}.",
        "- winning source of the first search: "
        + ", ".join(f"{s} {c}" for s, c in src.most_common())
        + " (`prb`; `wspt`/`wsdf`/`wsef` orderings; `restart`/`swap` the priority-list local "
        "search; `cpN-mapper`/`cpN-list` a CP solution; `lnscN` an LNS move on the CP from a "
        "conflict set, `lnswN` from a window; `-list` decoded as a priority list).",
    ]
    real = [r for r in rows if "prior" in r]
    if real:
        robust: Counter[str] = Counter()
        for r in real:
            robust.update(r["hybrid"].get("solver", {}).get("robust", {}))
        priors = Counter(r["prior"] for r in real)
        lines.append(
            f"- robust choice ({len(real)} real-runtime rows, `scheduler/hybrid/robust.py`): "
            f"plans kept {robust['kept']}, replaced by PRB's {robust['prb']}; runtime prior: "
            + ", ".join(f"{k} {c} rows" for k, c in sorted(priors.items()))
            + " (`bench/hybrid_runtime_prior.py`)."
        )
    onl = data.get("online") or []
    if onl:
        lines += ["", "## Online (real arrivals and runtimes, 1 s cycle budget)", ""]
        lines.append("| trace | jobs | cap W | PRB | hybrid runs | better than PRB | p99 cycle s |")
        lines.append("|---|---|---|---|---|---|---|")
        for o in onl:
            p = o["prb"][0]["objective"]
            hs = [h["objective"] for h in o["hybrid"]]
            better = sum(1 for h in hs if h is not None and p is not None and h < p)
            lines.append(
                f"| {o['instance']} | {o['jobs']} | {o['cap_w']:.0f} | "
                + ("-" if p is None else f"{p:.0f}")  # some job never started under the cap
                + " | "
                + ", ".join(f"{h:.0f}" if h is not None else "-" for h in hs)
                + f" | {better}/{len(hs)} | "
                f"{max(h['cycle_p99_s'] for h in o['hybrid']):.2f} |"
            )
    lines += [
        "",
        "## Notes",
        "",
        "- The runs were split to fit a shared 2-core machine (see each file's load above): "
        "12 instances (4 per set) at the tightest third of the caps in both protocols, the "
        "other 200-job instances there with runtime = walltime, 3 instances across the looser "
        "caps; the real-runtime rows of a later file (`--only` above) replace an earlier "
        "file's. The walltime rows run no robust choice (no prior), so the code they measure "
        "is unchanged by it. Offline budget 6 s a replay (the first search 60 % of it): a "
        "busy machine buys less search than an idle one.",
        "- The 'PRB / bound' figure is an upper limit on any schedule's gain: the bounds are "
        "relaxations (fluid, time-indexed LP) and the hybrid's own gap says they are loose; "
        "how much better is possible is unknown.",
        "- Real runtimes: each replay searches once, at time 0, on walltimes; from the first "
        "early end on the hybrid can only follow PRB (before: re-timed in PRB's order or a "
        "plan PRB's order does not beat), so it differs from PRB only by what it starts "
        "before that end. With a runtime prior (`runtime_ratios`, the real-protocol rows "
        "that have one) the search's plan is weighed against PRB under runtime scenarios and "
        "kept only if it wins by 2 % in all of them; else PRB's rule runs the replay. The "
        "prior is the runtime/walltime ratios of the historical jobs that ended before the "
        "instance (>= 50 of them), else a uniform one: the instance's own runtimes are never "
        "used.",
    ]
    online_rows = sum(1 for r in rows if r.get("real_mode") == "online")
    if online_rows:
        lines.append(
            f'- {online_rows} real-runtime rows here ran the hybrid in `mode="online"` '
            "(`--real-mode online`), so the note above is not theirs: a 1-s deterministic "
            "search at every event, the predictor learning the jobs seen to end, the rollout "
            "judging each search's starts against PRB's rule (none before 20 jobs have ended, "
            "unless `cold_prior`; PRB's plan then with `cold_prb`)."
        )
    if before:
        lines += _before(rows, before)
        lines += [
            "",
            "Rows compared with the files given as `--before` (see the command in the "
            "commit or the notes); runs on a shared machine at different loads buy "
            "different amounts of search.",
        ]
    alts = sorted(path.parent.glob("hybrid_eurora_robust*_real.json"))
    if alts:
        lines += ["", "## Kinds of runtime scenario (real runtimes, 12 instances x caps 0-1)"]
    for alt in alts:
        lines += _kinds_variant(alt)
    abl = path.with_name("hybrid_search_ablation.json")
    if abl.exists():
        lines += _ablation(abl)
    text = "\n".join(lines) + "\n"
    out = path.with_name(name or path.stem)
    out.with_suffix(".md").write_text(text)
    _plots(rows, out)
    return text


def _plots(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    protos = sorted({r["protocol"] for r in rows})
    if not protos:
        return
    fig, axes = plt.subplots(1, len(protos), figsize=(5 * len(protos), 3.6), squeeze=False)
    for ax, proto in zip(axes[0], protos, strict=True):
        ks = sorted({r["cap_idx"] for r in rows if r["protocol"] == proto})
        ratios = [[r["ratio"] for r in rows if r["protocol"] == proto and r["cap_idx"] == k]
                  for k in ks]  # fmt: skip
        gaps = [[r["gap_prb"] or math.nan for r in rows if r["protocol"] == proto
                 and r["cap_idx"] == k] for k in ks]  # fmt: skip
        ax.boxplot(ratios, positions=ks, widths=0.35)
        ax.plot(ks, [_med(g) for g in gaps], "r^--", label="median PRB / bound (most possible)")
        ax.axhline(1.0, color="grey", lw=0.8)
        ax.axhline(1.3, color="green", lw=0.8, ls=":")
        ax.set_xlabel("cap index (0 = tightest feasible)")
        ax.set_ylabel("PRB / hybrid")
        ax.set_title(f"runtime = {proto}")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path.with_name(path.stem + "_ratios.png"), dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("results", nargs="+", type=Path)
    ap.add_argument("--before", type=lambda s: [Path(x) for x in s.split(",")], default=[])
    ap.add_argument("--name", default=None)
    ap.add_argument(
        "--only",
        type=lambda s: dict(x.split(":") for x in s.split(",")),
        default={},
        help="FILE.json:PROTOCOL,...: take only that protocol's rows",
    )
    a = ap.parse_args()
    print(report(*a.results, before=a.before, name=a.name, only=a.only))
