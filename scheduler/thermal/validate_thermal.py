"""An independent check of the temperatures of an executed schedule.

From what ran where and when (:class:`~wattsched.scheduler.validate.Executed`), the nodes'
power models (static power states, as :func:`~wattsched.scheduler.validate.validate_schedule`)
and the thermal parameters, it recomputes each node's power between events and its outlet
temperature with the model, and lists every time a node passed the threshold. Between two
events the power is constant and the temperature monotone, so checking at the events is exact.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np

from wattsched.scheduler.model import Node
from wattsched.scheduler.thermal.model import ThermalParams
from wattsched.scheduler.validate import Executed

TOL_C = 1e-6


def validate_thermal(
    nodes: Sequence[Node],
    runs: Sequence[Executed],
    params: ThermalParams,
    *,
    start: int | None = None,
    max_errors: int = 20,
    slowed: Sequence[tuple[str, int, int, float]] = (),
    tol_c: float = TOL_C,
) -> list[str]:
    """Every event time a node's outlet is above the threshold plus ``tol_c`` (empty: never).

    Starts at ``start`` (default: the first job start) with every node at the steady
    temperature of its idle draw. ``slowed``: the intervals jobs ran slowed (module docstring).
    """
    pos = params.index()
    static = np.zeros(params.n)
    first = np.zeros(params.n)
    for n in nodes:
        static[pos[n.name]] = n.power.state_watts(n.state)
        first[pos[n.name]] = n.power.first_core_w
    by_name = {n.name: n for n in nodes}
    # per time: (order, job, payload): 0 ends, 1 slow intervals close, 2 open, 3 starts
    events: dict[int, list[tuple[int, str, float, dict[int, float]]]] = {}
    for r in runs:
        watts: dict[int, float] = {}
        for name in r.nodes:
            node = by_name[name]
            w = r.job.unit_power_w
            watts[pos[name]] = watts.get(pos[name], 0.0) + (
                node.power.unit_watts(r.job.unit) if w is None else w
            )
        events.setdefault(r.start, []).append((3, r.job.id, 1.0, watts))
        events.setdefault(r.end, []).append((0, r.job.id, 1.0, {}))
    for job, a, b, x in slowed:
        events.setdefault(a, []).append((2, job, x, {}))
        events.setdefault(b, []).append((1, job, 1.0, {}))
    if not events:
        return []
    times = sorted(events)
    t_prev = times[0] if start is None else min(start, times[0])
    on_node: list[dict[str, float]] = [{} for _ in range(params.n)]  # job -> watts
    where: dict[str, tuple[int, ...]] = {}
    rate: dict[str, float] = {}
    power = static.copy()
    t_out = params.steady(power)
    errors: list[str] = []
    for t in times:
        t_out = params.step(t_out, power, float(t - t_prev))
        hot = np.nonzero(t_out > params.t_thresh + tol_c)[0]
        for k in hot.tolist():
            errors.append(
                f"node {params.names[k]} at {t_out[k]:.3f} C > {params.t_thresh} C at time {t}"
            )
            if len(errors) >= max_errors:
                return errors
        for kind, job, x, watts in sorted(events[t], key=lambda e: e[0]):
            if kind == 0:
                for k in where.pop(job, ()):
                    on_node[k].pop(job, None)
                rate.pop(job, None)
            elif kind in (1, 2):
                rate[job] = x
            else:
                for k, w in watts.items():
                    on_node[k][job] = w
                where[job] = tuple(watts)
        power = static.copy()
        for k, jobs in enumerate(on_node):
            if jobs:
                rates = [rate.get(j, 1.0) for j in jobs]
                power[k] += sum(w * x for w, x in zip(jobs.values(), rates, strict=True))
                if any(x > 0 for x in rates):
                    power[k] += first[k]
        t_prev = t
    return errors


def validate_stretch(
    runs: Sequence[Executed], slowed: Sequence[tuple[str, int, int, float]]
) -> list[str]:
    """Every job whose run, its ``slowed`` intervals counted at their rate, did not do exactly
    its work (its runtime cut at its walltime; the end falls on the next whole second, so up
    to one second more), or whose slowed intervals lie outside its run."""
    by_job: dict[str, list[tuple[int, int, float]]] = {}
    for job, a, b, r in slowed:
        by_job.setdefault(job, []).append((a, b, r))
    errors = []
    for run in runs:
        job = run.job
        want = float(min(job.runtime if job.runtime is not None else job.walltime, job.walltime))
        ivs = sorted(by_job.pop(job.id, []))
        if any(a < run.start or b > run.end or b < a for a, b, _ in ivs):
            errors.append(f"job {job.id}: slowed intervals {ivs} outside its run")
        if any(b1 > a2 for (_, b1, _), (a2, _, _) in itertools.pairwise(ivs)):
            errors.append(f"job {job.id}: slowed intervals {ivs} overlap")
        work = (run.end - run.start) - sum((1 - r) * (b - a) for a, b, r in ivs)
        if not want - 1e-6 <= work < want + 1:
            errors.append(
                f"job {job.id} did {work:g} s of work in [{run.start}, {run.end}], not {want:g}"
            )
    for job in by_job:
        errors.append(f"job {job}: slowed intervals but no run")
    return errors
