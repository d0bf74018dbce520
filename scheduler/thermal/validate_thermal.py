"""An independent check of the temperatures of an executed schedule.

From what ran where and when (:class:`~wattsched.scheduler.validate.Executed`), the nodes'
power models (static power states, as :func:`~wattsched.scheduler.validate.validate_schedule`)
and the thermal parameters, it recomputes each node's power between events and its outlet
temperature with the model, and lists every time a node passed the threshold. Between two
events the power is constant and the temperature monotone, so checking at the events is exact.
"""

from __future__ import annotations

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
) -> list[str]:
    """Every event time a node's outlet is above the threshold (empty: never).

    Starts at ``start`` (default: the first job start) with every node at the steady
    temperature of its idle draw.
    """
    pos = params.index()
    static = np.zeros(params.n)
    first = np.zeros(params.n)
    for n in nodes:
        static[pos[n.name]] = n.power.state_watts(n.state)
        first[pos[n.name]] = n.power.first_core_w
    by_name = {n.name: n for n in nodes}
    deltas: dict[int, list[tuple[int, float, int]]] = {}
    for r in runs:
        for name in r.nodes:
            k = pos[name]
            node = by_name[name]
            w = r.job.unit_power_w
            if w is None:
                w = node.power.unit_watts(r.job.unit)
            deltas.setdefault(r.start, []).append((k, w, 1))
            deltas.setdefault(r.end, []).append((k, -w, -1))
    if not deltas:
        return []
    times = sorted(deltas)
    t_prev = times[0] if start is None else min(start, times[0])
    units = np.zeros(params.n, dtype=np.int64)
    dyn = np.zeros(params.n)
    power = static.copy()
    t_out = params.steady(power)
    errors: list[str] = []
    for t in times:
        t_out = params.step(t_out, power, float(t - t_prev))
        hot = np.nonzero(t_out > params.t_thresh + TOL_C)[0]
        for k in hot.tolist():
            errors.append(
                f"node {params.names[k]} at {t_out[k]:.3f} C > {params.t_thresh} C at time {t}"
            )
            if len(errors) >= max_errors:
                return errors
        for k, w, u in deltas[t]:
            dyn[k] += w
            units[k] += u
        dyn[units == 0] = 0.0
        power = static + dyn + np.where(units > 0, first, 0.0)
        t_prev = t
    return errors
