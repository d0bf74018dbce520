"""Schedule metrics: waits, slowdowns, weighted queue time, energy, power, planning time.

Pure functions over job outcomes and power samples, so that a replay, the daemon's store and
the benchmarks compute the same figures the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

BSLD_BOUND_S = 10
"""The runtime floor of the bounded slowdown (seconds), as is usual in the literature."""


@dataclass(frozen=True, slots=True)
class JobOutcome:
    """One finished (or at least started) job."""

    job_id: str
    submit: int
    start: int
    end: int
    ewt: int


def percentile(values: Sequence[float] | np.ndarray, q: float) -> float:
    """The q-th percentile (0-100), 0.0 for no values."""
    arr = np.asarray(values, dtype=float)
    return float(np.percentile(arr, q)) if arr.size else 0.0


def schedule_metrics(outcomes: Sequence[JobOutcome]) -> dict[str, float]:
    """Makespan, waits, weighted queue time, bounded slowdown and EECluster's QoS.

    ``mean_weighted_wait`` is the power-capping paper's objective divided by the number of
    jobs: the mean of ``(max EWT / EWT_i) * wait_i`` in seconds; ``mean_wait_ewt`` is the mean
    of ``wait_i / EWT_i`` (the paper's "EWT units": 1 means a job waited as long as its queue
    promised). ``qos_p90`` is the 90th percentile of ``wait / runtime`` (runtime floored at 1 s).
    """
    if not outcomes:
        return {
            "makespan_s": 0.0,
            "mean_wait_s": 0.0,
            "max_wait_s": 0.0,
            "mean_weighted_wait": 0.0,
            "mean_wait_ewt": 0.0,
            "mean_bounded_slowdown": 0.0,
            "qos_p90": 0.0,
        }
    submit = np.fromiter((o.submit for o in outcomes), dtype=float, count=len(outcomes))
    start = np.fromiter((o.start for o in outcomes), dtype=float, count=len(outcomes))
    end = np.fromiter((o.end for o in outcomes), dtype=float, count=len(outcomes))
    ewt = np.fromiter((o.ewt for o in outcomes), dtype=float, count=len(outcomes))
    wait = start - submit
    run = end - start
    max_ewt = float(ewt.max())
    bsld = np.maximum(1.0, (wait + run) / np.maximum(run, BSLD_BOUND_S))
    return {
        "makespan_s": float(end.max() - submit.min()),
        "mean_wait_s": float(wait.mean()),
        "max_wait_s": float(wait.max()),
        "mean_weighted_wait": float(((max_ewt / ewt) * wait).mean()),
        "mean_wait_ewt": float((wait / ewt).mean()),
        "mean_bounded_slowdown": float(bsld.mean()),
        "qos_p90": percentile(wait / np.maximum(run, 1.0), 90),
    }


def weighted_queue_time(
    submits: Sequence[int], starts: Sequence[int], ewts: Sequence[int]
) -> float:
    """The power-capping paper's objective: sum of ``(max EWT / EWT_i) * (start_i - submit_i)``."""
    if not ewts:
        return 0.0
    max_ewt = max(ewts)
    return float(
        sum((max_ewt / e) * (s - q) for q, s, e in zip(submits, starts, ewts, strict=True))
    )


def timing_metrics(plan_seconds: Sequence[float]) -> dict[str, float]:
    """Per-cycle planning time: mean, 99th percentile and maximum."""
    arr = np.asarray(plan_seconds, dtype=float)
    return {
        "plan_seconds_mean": float(arr.mean()) if arr.size else 0.0,
        "plan_seconds_p99": percentile(arr, 99),
        "plan_seconds_max": float(arr.max()) if arr.size else 0.0,
        "cycles": int(arr.size),
    }
