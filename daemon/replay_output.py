"""What a replay writes: metrics JSON, the schedule CSV, the power CSV and a plot."""

from __future__ import annotations

import csv
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from wattsched.connectors.simulated import SimulatedCluster
from wattsched.daemon.replay import ReplayResult
from wattsched.scheduler.metrics import JobOutcome, schedule_metrics, timing_metrics
from wattsched.scheduler.model import Node

SCHEDULE_HEADER = ("job_id", "submit", "start", "end", "units", "power_w")
POWER_HEADER = ("time", "it_power_w", "cap_w", "nodes_on", "queued", "running")


def outcomes(cluster: SimulatedCluster) -> list[JobOutcome]:
    """The started jobs of a replay as metric inputs."""
    return [
        JobOutcome(r.job.id, r.submit, r.start, r.end, r.job.ewt)
        for r in cluster.records.values()
        if r.start is not None and r.end is not None
    ]


def replay_metrics(
    result: ReplayResult,
    *,
    skipped_jobs: int = 0,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The metrics of a replay, under the names ``wattsched simulate`` documents."""
    cluster = result.cluster
    out: dict[str, Any] = {}
    out.update(schedule_metrics(outcomes(cluster)))
    out.update(
        {
            "energy_it_kwh": cluster.energy_j / 3.6e6,
            "peak_power_w": cluster.peak_power_w,
            "cap_violation_s": cluster.cap_violation_s,
        }
    )
    out.update(timing_metrics(result.plan_seconds))
    out.update(
        {
            "wall_seconds": result.wall_seconds,
            "jobs": sum(1 for r in cluster.records.values() if r.start is not None),
            "skipped_jobs": skipped_jobs,
            "unfinished_jobs": len(cluster.unfinished()) + cluster.pending_arrivals,
            "killed_at_walltime": sum(1 for r in cluster.records.values() if r.killed),
            "start_errors": result.start_errors,
        }
    )
    if extra:
        out.update(extra)
    return out


def node_power_models(nodes: list[Node]) -> list[dict[str, Any]]:
    """The distinct node power models of a system, with how many nodes use each."""
    seen: dict[tuple[float, ...], int] = {}
    models: dict[tuple[float, ...], dict[str, Any]] = {}
    for n in nodes:
        p = n.power
        key = (p.idle_w, p.first_core_w, p.core_w, p.gpu_w, p.mic_w, p.transition_w, p.off_w)
        seen[key] = seen.get(key, 0) + 1
        models[key] = {
            "idle_w": p.idle_w,
            "first_core_w": p.first_core_w,
            "core_w": p.core_w,
            "gpu_w": p.gpu_w,
            "mic_w": p.mic_w,
            "transition_w": p.transition_w,
            "off_w": p.off_w,
        }
    return [{"nodes": seen[k], **models[k]} for k in models]


def write_metrics(path: Path, metrics: Mapping[str, Any]) -> None:
    """Metrics as indented JSON."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(metrics, indent=2, sort_keys=True, default=float) + "\n")


def write_schedule(path: Path, cluster: SimulatedCluster) -> None:
    """One row per started job: ``job_id,submit,start,end,units,power_w``.

    ``units`` is ``node:cores:gpus:mics:mem_mb`` for each unit, joined by ``;``.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(SCHEDULE_HEADER)
        for r in sorted(
            cluster.records.values(), key=lambda r: r.start if r.start is not None else -1
        ):
            if r.start is None:
                continue
            u = r.job.unit
            units = ";".join(f"{n}:{u.cores}:{u.gpus}:{u.mics}:{u.mem_mb}" for n in r.nodes)
            w.writerow([r.job.id, r.submit, r.start, r.end, units, f"{r.power_w:.3f}"])


def write_power(path: Path, cluster: SimulatedCluster) -> None:
    """The power samples: ``time,it_power_w,cap_w,nodes_on,queued,running``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(POWER_HEADER)
        for s in cluster.samples:
            cap = "inf" if s.cap_w == float("inf") else f"{s.cap_w:.3f}"
            w.writerow([s.time, f"{s.it_power_w:.3f}", cap, s.nodes_on, s.queued, s.running])


def plot_replay(path: Path, cluster: SimulatedCluster, title: str) -> None:
    """Power against the cap, queue length and nodes on, over time (PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    samples = cluster.samples
    if not samples:
        return
    t0 = samples[0].time
    hours = np.array([(s.time - t0) / 3600 for s in samples])
    power = np.array([s.it_power_w for s in samples]) / 1000
    cap = np.array([s.cap_w for s in samples]) / 1000
    fig, axes = plt.subplots(3, 1, figsize=(11, 8), sharex=True, constrained_layout=True)
    ax = axes[0]
    ax.step(hours, power, where="post", lw=0.8, label="IT power")
    if np.isfinite(cap).any():
        ax.step(
            hours,
            np.where(np.isfinite(cap), cap, np.nan),
            where="post",
            color="red",
            lw=1.2,
            label="power cap",
        )
    ax.set_ylabel("kW")
    ax.legend(loc="upper right")
    ax.set_title(title)
    axes[1].step(
        hours, [s.queued for s in samples], where="post", lw=0.8, color="tab:orange", label="queued"
    )
    axes[1].step(
        hours,
        [s.running for s in samples],
        where="post",
        lw=0.8,
        color="tab:green",
        label="running",
    )
    axes[1].set_ylabel("jobs")
    axes[1].legend(loc="upper right")
    axes[2].step(hours, [s.nodes_on for s in samples], where="post", lw=0.8, color="tab:purple")
    axes[2].set_ylabel("nodes on")
    axes[2].set_xlabel("hours since start")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def profit_metrics(cluster: SimulatedCluster, model: Any, prices: Any) -> dict[str, float]:
    """The profit evaluator's figures of a replay (every started job, over the whole run)."""
    from wattsched.scheduler.profit import Executions, evaluate_profit

    rows = [
        (
            r.start,
            r.end,
            r.power_w,
            r.job.unit.cores * r.job.units,
            r.job.unit.mem_mb * r.job.units,
            r.job.unit.gpus * r.job.units,
            r.job.unit.mics * r.job.units,
        )
        for r in cluster.records.values()
        if r.start is not None and r.end is not None
    ]
    if not rows:
        return {}
    return evaluate_profit(Executions.of(rows), model, prices).as_metrics()
