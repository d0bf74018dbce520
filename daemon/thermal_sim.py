"""``wattsched simulate --thermal FILE``: the thermal simulated cluster, the guard around the
dispatcher, and the thermal outputs (metrics, a temperature column in the power CSV, a
temperature plot next to the replay plot)."""

from __future__ import annotations

import csv
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from wattsched.connectors.simulated_thermal import ThermalSimulatedCluster
from wattsched.connectors.traces.thermal_file import read_thermal_file
from wattsched.daemon.replay_output import POWER_HEADER
from wattsched.scheduler.dispatcher import Dispatcher
from wattsched.scheduler.model import Job, Node, PowerCap
from wattsched.scheduler.thermal.guard import ThermalGuard, full_power_w, recheck_default
from wattsched.scheduler.thermal.model import FloatArray, ThermalParams


def max_power_w(nodes: Sequence[Node], jobs: Sequence[Job], params: ThermalParams) -> FloatArray:
    """Each node's highest possible draw, in ``params`` order: its power model fully busy, or
    every core running the hungriest job's units (per core) when the jobs' own estimates are
    higher (assumes every unit uses at least one core)."""
    per_core = max(((j.unit_power_w or 0.0) / max(1, j.unit.cores) for j in jobs), default=0.0)
    out = np.zeros(params.n)
    pos = params.index()
    for n in nodes:
        m = n.power
        by_jobs = m.idle_w + m.first_core_w + n.capacity.cores * per_core
        out[pos[n.name]] = max(full_power_w(n), by_jobs)
    return out


def thermal_setup(
    path: Path,
    nodes: Sequence[Node],
    jobs: Sequence[Job],
    cap: PowerCap,
    offline: bool,
    dispatcher: Dispatcher,
    guard: bool = True,
) -> tuple[ThermalSimulatedCluster, Dispatcher]:
    """The thermal cluster for ``path`` (node order: the file's ``nodes`` or the system's) and
    the dispatcher wrapped in the guard (``guard=False``: temperatures recorded only)."""
    params = read_thermal_file(path, [n.name for n in nodes])
    cluster = ThermalSimulatedCluster(nodes, jobs, cap, thermal=params, offline=offline)
    if not guard:
        return cluster, dispatcher

    def temps() -> FloatArray:
        tr = cluster.tracker
        return tr.t_out if tr is not None else np.full(params.n, params.t_sup)

    wrapped = ThermalGuard(
        dispatcher,
        params,
        temps,
        max_power_w=max_power_w(nodes, jobs, params),
        wake=cluster.wake_at,
        recheck_s=recheck_default(params),
    )
    return cluster, wrapped


def thermal_metrics(cluster: ThermalSimulatedCluster, dispatcher: Dispatcher) -> dict[str, Any]:
    """The ``thermal`` entry of the metrics JSON."""
    if cluster.tracker is None:
        return {}
    out: dict[str, Any] = dict(cluster.tracker.summary())
    mode = cluster.mode
    out["on_overheat"] = mode
    out["suspend_events"] = cluster.slow_events if mode == "suspend" else 0
    out["suspended_node_s"] = cluster.slowed_s() if mode == "suspend" else 0
    out["throttle_events"] = cluster.slow_events if mode == "throttle" else 0
    out["throttled_node_s"] = cluster.slowed_s() if mode == "throttle" else 0
    out["throttle_paused"] = cluster.escalations
    out["guard"] = isinstance(dispatcher, ThermalGuard)
    if isinstance(dispatcher, ThermalGuard):
        out["guard_blocked_cycles"] = dispatcher.blocked_cycles
        out["guard_dropped_starts"] = dispatcher.dropped_starts
        out["never_admissible_jobs"] = dispatcher.never_admissible
    return out


def write_power_thermal(path: Path, cluster: ThermalSimulatedCluster) -> None:
    """The power CSV plus ``max_outlet_c`` (the hottest node's outlet at each sample),
    ``suspended_nodes`` and ``throttled_nodes`` (``on_overheat``)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow((*POWER_HEADER, "max_outlet_c", "suspended_nodes", "throttled_nodes"))
        rows = zip(cluster.samples, cluster.outlet_samples, cluster.slowed_samples, strict=False)
        for s, hot, (sus, thr) in rows:
            cap = "inf" if s.cap_w == float("inf") else f"{s.cap_w:.3f}"
            w.writerow(
                [
                    s.time,
                    f"{s.it_power_w:.3f}",
                    cap,
                    s.nodes_on,
                    s.queued,
                    s.running,
                    f"{hot:.3f}",
                    sus,
                    thr,
                ]
            )


def plot_thermal(path: Path, cluster: ThermalSimulatedCluster, title: str) -> None:
    """The hottest outlet temperature over time against the threshold, and the nodes suspended
    or throttled (PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if not cluster.samples or cluster.tracker is None:
        return
    n = min(len(cluster.samples), len(cluster.outlet_samples))
    t0 = cluster.samples[0].time
    hours = [(s.time - t0) / 3600 for s in cluster.samples[:n]]
    fig, ax = plt.subplots(figsize=(11, 3), constrained_layout=True)
    ax.step(hours, cluster.outlet_samples[:n], where="post", lw=0.8, label="hottest outlet")
    ax.axhline(cluster.tracker.params.t_thresh, color="red", lw=1.2, label="threshold")
    ax.set_ylabel("C")
    ax.set_xlabel("hours since start")
    ax.set_title(title)
    slowed = [a + b for a, b in cluster.slowed_samples[:n]]
    if any(slowed):
        ax2 = ax.twinx()
        label = "nodes suspended" if cluster.mode == "suspend" else "nodes throttled"
        ax2.fill_between(hours, slowed, step="post", color="orange", alpha=0.35, label=label)
        ax2.set_ylabel(label)
        ax2.set_ylim(bottom=0)
        ax2.legend(loc="upper left")
    ax.legend(loc="upper right")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
