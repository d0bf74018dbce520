"""The Pareto front file, the administrator's pick, and the front's plot.

``front.json`` holds what the search found (each point's parameters and its objectives on
train and validation), the idle-timeout baselines on the same data, and how to rebuild the
workloads (trace, system, split) so that :func:`pick` can report the chosen point on the test
part, which neither the search nor the pick has seen.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from wattsched.powerctl.hgfs import HGFSParams
from wattsched.powerctl.tuning.encoding import decode
from wattsched.powerctl.tuning.evaluate import Objectives
from wattsched.powerctl.tuning.search import TuneResult

FORMAT = "wattsched-hgfs-front/1"


class PickError(ValueError):
    """No point meets the bounds; the message lists the closest ones."""


def params_json(p: HGFSParams) -> dict[str, Any]:
    """HGFS parameters as a JSON object (the file the daemon's ``[power]`` table loads)."""
    d = asdict(p)
    d["centers"], d["weights"] = list(p.centers), list(p.weights)
    return d


def front_json(result: TuneResult, source: dict[str, Any]) -> dict[str, Any]:
    """The JSON document of a tuning run (``source``: trace, system, split, seed...)."""
    return {
        "format": FORMAT,
        "source": source,
        "n_sets": result.n_sets,
        "evaluations": result.evaluations,
        "ceiling": result.ceiling,
        "points": [
            {
                "x": p.x,
                "params": params_json(decode(p.x, result.n_sets)),
                "train": p.train.to_json(),
                "validation": p.validation.to_json() if p.validation else None,
            }
            for p in result.points
        ],
        "baselines": [
            {"idle_s": idle, "train": tr.to_json(), "validation": va.to_json()}
            for idle, (tr, va) in sorted(result.baselines.items())
        ],
    }


def load_front(path: Path) -> dict[str, Any]:
    """A front file; :class:`ValueError` naming the file when it is not one."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path}: not a readable front file: {exc}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT or not data.get("points"):
        raise ValueError(f"{path}: not a wattsched tuning front (format {FORMAT!r} with points)")
    return data


def pick(front: dict[str, Any], qos: float, reconfig: float) -> dict[str, Any]:
    """The point with the most energy saved on validation whose validation QoS is at most
    ``qos`` and reconfigurations at most ``reconfig``; :class:`PickError` when none is."""
    pts = [p for p in front["points"] if p.get("validation")]
    ok = [
        p
        for p in pts
        if p["validation"]["qos_p90"] <= qos and p["validation"]["reconfigurations"] <= reconfig
    ]
    if ok:
        return max(
            ok, key=lambda p: (p["validation"]["saved_fraction"], -p["validation"]["qos_p90"])
        )

    def excess(p: dict[str, Any]) -> float:
        v = p["validation"]
        return max(0.0, v["qos_p90"] / max(qos, 1e-9) - 1) + max(
            0.0, v["reconfigurations"] / max(reconfig, 1e-9) - 1
        )

    close = sorted(pts, key=excess)[:3]
    lines = "; ".join(
        f"QoS {p['validation']['qos_p90']:.3g}, {p['validation']['reconfigurations']} "
        f"reconfigurations, {100 * p['validation']['saved_fraction']:.1f} % saved"
        for p in close
    )
    raise PickError(
        f"no point of the front has validation QoS <= {qos:g} and reconfigurations <= "
        f"{reconfig:g}; the closest: {lines}"
    )


def plot_front(front: dict[str, Any], out: Path, part: str = "validation") -> None:
    """Energy saved against QoS, coloured by reconfigurations, with the idle-timeout
    baselines on the same axes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pts = [p[part] for p in front["points"] if p.get(part)]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    sc = ax.scatter(
        [p["qos_p90"] for p in pts], [100 * p["saved_fraction"] for p in pts],
        c=[p["reconfigurations"] for p in pts], cmap="viridis", label="HGFS front", zorder=3,
    )  # fmt: skip
    fig.colorbar(sc, ax=ax, label="reconfigurations")
    for b in front.get("baselines", []):
        o = b[part]
        ax.scatter(o["qos_p90"], 100 * o["saved_fraction"], marker="x", color="red", zorder=4)
        ax.annotate(f"idle {b['idle_s'] // 60} min", (o["qos_p90"], 100 * o["saved_fraction"]),
                    fontsize=8, xytext=(4, 4), textcoords="offset points")  # fmt: skip
    ceiling = front.get("ceiling", {}).get(part)
    if ceiling is not None:
        ax.axhline(100 * ceiling, color="grey", linestyle="--", linewidth=1)
        ax.annotate("ceiling: every idle node off, for free, no job delayed", (0.01, 100 * ceiling),
                    xycoords=("axes fraction", "data"), fontsize=8, xytext=(0, -11),
                    textcoords="offset points", color="grey")  # fmt: skip
    ax.set_xlabel("QoS: 90th percentile of wait / runtime (lower is better)")
    ax.set_ylabel("energy saved by switched-off nodes (%)")
    ax.set_title(f"HGFS Pareto front on {part} ({front['source'].get('trace', '')})", fontsize=10)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def objectives_of(d: dict[str, Any]) -> Objectives:
    """An :class:`Objectives` from its JSON object."""
    return Objectives(**d)
