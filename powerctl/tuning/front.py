"""The Pareto front file, the administrator's pick, and the front's plot.

``front.json`` holds what the search found (each point's parameters and its objectives on
train and validation), the idle-timeout baselines on the same data, and how to rebuild the
workloads (trace, system, split) so that :func:`pick` can report the chosen point on the test
part, which neither the search nor the pick has seen.

Format ``wattsched-hgfs-front/2`` says which energy-saved measure the search maximised
(``"measure"``, a field of the objectives: :data:`~.measures.TUNED`, EECluster's equation
(4)) and holds both measures in every objective, the ceiling in that measure (``"ceiling"``)
and in the physical one (``"ceiling_physical"``). A ``/1`` file (before the paper's measure)
holds the physical measure only and was tuned on it: it is read with ``"measure":
"saved_fraction"``, so ``pick`` and the plot still work on it, in that measure.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from wattsched.powerctl.hgfs import HGFSParams
from wattsched.powerctl.tuning.encoding import decode
from wattsched.powerctl.tuning.evaluate import Objectives
from wattsched.powerctl.tuning.measures import LABELS, PHYSICAL, TUNED
from wattsched.powerctl.tuning.search import TuneResult

FORMAT = "wattsched-hgfs-front/2"
OLD_FORMAT = "wattsched-hgfs-front/1"
"""Fronts tuned on the physical measure, before the paper's (read with that measure)."""


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
        "measure": TUNED,
        "source": source,
        "n_sets": result.n_sets,
        "evaluations": result.evaluations,
        "ceiling": result.ceiling,
        "ceiling_physical": result.ceiling_physical,
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
    """A front file, with its ``"measure"`` (a ``/1`` file: the physical one);
    :class:`ValueError` naming the file when it is not one."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path}: not a readable front file: {exc}") from None
    if (
        not isinstance(data, dict)
        or data.get("format") not in (FORMAT, OLD_FORMAT)
        or not data.get("points")
    ):
        raise ValueError(f"{path}: not a wattsched tuning front (format {FORMAT!r} with points)")
    if data["format"] == OLD_FORMAT:
        data.setdefault("measure", PHYSICAL)
    if data.get("measure") not in LABELS:
        raise ValueError(f"{path}: unknown energy-saved measure {data.get('measure')!r}")
    return data


def measure_of(front: dict[str, Any]) -> str:
    """The energy-saved measure ``front`` was tuned on (the physical one for ``/1`` files)."""
    return str(front.get("measure", PHYSICAL if front.get("format") == OLD_FORMAT else TUNED))


def pick(front: dict[str, Any], qos: float, reconfig: float) -> dict[str, Any]:
    """The point with the most energy saved (in the front's measure) on validation whose
    validation QoS is at most ``qos`` and reconfigurations at most ``reconfig``;
    :class:`PickError` when none is."""
    m = measure_of(front)
    pts = [p for p in front["points"] if p.get("validation")]
    ok = [
        p
        for p in pts
        if p["validation"]["qos_p90"] <= qos and p["validation"]["reconfigurations"] <= reconfig
    ]
    if ok:
        return max(ok, key=lambda p: (p["validation"][m], -p["validation"]["qos_p90"]))

    def excess(p: dict[str, Any]) -> float:
        v = p["validation"]
        return max(0.0, v["qos_p90"] / max(qos, 1e-9) - 1) + max(
            0.0, v["reconfigurations"] / max(reconfig, 1e-9) - 1
        )

    close = sorted(pts, key=excess)[:3]
    lines = "; ".join(
        f"QoS {p['validation']['qos_p90']:.3g}, {p['validation']['reconfigurations']} "
        f"reconfigurations, {100 * p['validation'][m]:.1f} % saved ({m})"
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

    m = measure_of(front)
    pts = [p[part] for p in front["points"] if p.get(part)]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    sc = ax.scatter(
        [p["qos_p90"] for p in pts], [100 * p[m] for p in pts],
        c=[p["reconfigurations"] for p in pts], cmap="viridis", label="HGFS front", zorder=3,
    )  # fmt: skip
    fig.colorbar(sc, ax=ax, label="reconfigurations")
    for b in front.get("baselines", []):
        o = b[part]
        ax.scatter(o["qos_p90"], 100 * o[m], marker="x", color="red", zorder=4)
        ax.annotate(f"idle {b['idle_s'] // 60} min", (o["qos_p90"], 100 * o[m]),
                    fontsize=8, xytext=(4, 4), textcoords="offset points")  # fmt: skip
    ceiling = front.get("ceiling", {}).get(part)
    if ceiling is not None:
        ax.axhline(100 * ceiling, color="grey", linestyle="--", linewidth=1)
        ax.annotate("ceiling: every idle node off, for free, no job delayed", (0.01, 100 * ceiling),
                    xycoords=("axes fraction", "data"), fontsize=8, xytext=(0, -11),
                    textcoords="offset points", color="grey")  # fmt: skip
    ax.set_xlabel("QoS: 90th percentile of wait / runtime (lower is better)")
    ax.set_ylabel(LABELS[m], fontsize=8)
    ax.set_title(f"HGFS Pareto front on {part} ({front['source'].get('trace', '')})", fontsize=10)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def objectives_of(d: dict[str, Any]) -> Objectives:
    """An :class:`Objectives` from its JSON object (of a ``/2`` file: a ``/1`` file's lack the
    paper's measure, a :class:`ValueError` says so)."""
    try:
        return Objectives(**d)
    except TypeError as exc:
        raise ValueError(f"objectives {d}: not of a {FORMAT!r} file: {exc}") from None
