"""Node power models and job power estimates (pure: no I/O, no global state).

Two documented node models, and the ways a workload gets its per-unit power figures:
from a table of predictions (Eurora), or drawn per job from a per-core range (the profit
paper's 7.8-11.11 W per busy core).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping

import numpy as np

from wattsched.scheduler.model import Job, NodePowerModel

BATSIM_NODE_POWER = NodePowerModel(
    idle_w=95.0,
    first_core_w=0.0,
    core_w=95.7 / 32,
    gpu_w=0.0,
    mic_w=0.0,
    transition_w=95.0,
    off_w=9.75,
)
"""Batsim's homogeneous energy platform (shared data README): 95 W idle, 190.7 W at full load,
9.75 W asleep; boot about 150 s and shutdown about 6 s are :class:`Node`'s defaults.

Batsim's power grows linearly from idle to full load, so ``first_core_w`` is 0 and the 95.7 W
between idle and full load are spread over 32 cores (the profit paper's Curie-like node):
``core_w = 95.7 / 32 = 2.99 W``, full load ``95 + 32 x 2.99 = 190.7 W``. The README gives no draw
while switching: ``transition_w`` is the idle draw. Jobs that carry their own estimate (e.g.
:func:`assign_core_watts`) replace ``core_w`` for their units.
"""

EURORA_NODE_POWER = NodePowerModel(
    idle_w=15.0,
    first_core_w=5.0,
    core_w=4.0,
    gpu_w=10.0,
    mic_w=6.0,
    transition_w=15.0,
    off_w=0.0,
)
"""A Eurora-like node (16 cores, 2 GPUs or 2 MICs) scaled to the shared Eurora instances.

The power-capping paper counts the predicted power of the running jobs against its caps
(``variable_power_caps``: 1,150 to 7,000 W for the 32-node instances, 300 to 1,200 W for the
few-jobs ones) and the predictions are small (median 25 W a job, 0 to 2,582 W). A realistic
idle draw (100+ W a node) would put 32 idle nodes above every cap, so the baseline is kept
small: 15 W idle (480 W for 32 nodes, below the lowest 1,150 W cap; 120 W for 8 nodes), plus
5 W when the first core wakes up. ``core_w``, ``gpu_w`` and ``mic_w`` only serve jobs without a
prediction (a third of the jobs of the shared instances); they come from a least-squares fit of
per-unit predicted watts on the unit's cores, GPUs and MICs over the 11,218 distinct jobs of
the shared instances that have a prediction: 4.2 W a core, 10.1 W a GPU, 5.9 W a MIC
(``docs/traces.md``).
"""


def assign_power_table(
    jobs: Iterable[Job],
    table: Mapping[str, float],
    *,
    fallback: Callable[[Job], float | None] | None = None,
) -> tuple[list[Job], int]:
    """Set each job's per-unit power from a table of whole-job watts keyed by job id.

    ``unit_power_w = table[job.id] / job.units``. A job missing from the table gets
    ``fallback(job)`` (a per-unit figure, or None to leave it to the node model) when a fallback
    is given, else keeps its current value. Returns the jobs and how many used the fallback.
    """
    out: list[Job] = []
    used_fallback = 0
    for job in jobs:
        watts = table.get(job.id)
        if watts is not None:
            out.append(dataclasses.replace(job, unit_power_w=watts / job.units))
        elif fallback is not None:
            used_fallback += 1
            out.append(dataclasses.replace(job, unit_power_w=fallback(job)))
        else:
            out.append(job)
    return out, used_fallback


def assign_core_watts(jobs: Iterable[Job], lo: float, hi: float, seed: int) -> list[Job]:
    """Draw a per-core figure uniform in ``[lo, hi]`` for each job; ``unit_power_w = cores x w``.

    The draws come from ``numpy.random.default_rng(seed)`` in job order, so the same jobs and
    seed give the same figures (no global RNG).
    """
    if not 0 <= lo <= hi:
        raise ValueError(f"assign_core_watts: range {lo}:{hi}: need 0 <= lo <= hi")
    job_list = list(jobs)
    rng = np.random.default_rng(seed)
    draws = rng.uniform(lo, hi, size=len(job_list))
    return [
        dataclasses.replace(job, unit_power_w=job.unit.cores * float(w))
        for job, w in zip(job_list, draws, strict=True)
    ]


def parse_range(text: str) -> tuple[float, float]:
    """``"7.8:11.11"`` -> ``(7.8, 11.11)``; a single number ``"9"`` -> ``(9.0, 9.0)``.

    Raises ValueError naming the text when it is not ``lo:hi`` with ``0 <= lo <= hi``.
    """
    lo_s, sep, hi_s = text.partition(":")
    try:
        lo = float(lo_s)
        hi = float(hi_s) if sep else lo
    except ValueError:
        raise ValueError(f"range {text!r}: expected 'lo:hi' in numbers, e.g. '7.8:11.11'") from None
    if not (0 <= lo <= hi < float("inf")):
        raise ValueError(f"range {text!r}: need 0 <= lo <= hi (finite)")
    return lo, hi
