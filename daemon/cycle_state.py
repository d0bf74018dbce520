"""What the daemon keeps between cycles: the power estimate, the cycle summary the API and
metrics read, and the counters.
"""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from wattsched.scheduler.model import Plan, PowerState, Snapshot

CYCLE_BUCKETS: tuple[float, ...] = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0)
"""Upper bounds (seconds) of the cycle-duration histogram."""

SWITCH_BUCKETS: tuple[float, ...] = (0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0)
"""Upper bounds (seconds) of the power-command histogram (retries included)."""


def saved_power(snap: Snapshot) -> float:
    """Watts not drawn now by nodes switched off, against every node on and idle."""
    return sum(
        n.power.idle_w - n.power.state_watts(n.state)
        for n in snap.nodes
        if n.state is PowerState.OFF
    )


def estimate_power(snap: Snapshot) -> tuple[float, int]:
    """The IT power of the snapshot from the node power models, and the number of nodes on."""
    nodes = {n.name: n for n in snap.nodes}
    watts = sum(n.power.state_watts(n.state) for n in snap.nodes)
    busy: set[str] = set()
    for rj in snap.running:
        for name in rj.nodes:
            node = nodes.get(name)
            if node is None:
                continue
            busy.add(name)
            unit_w = rj.job.unit_power_w
            watts += unit_w if unit_w is not None else node.power.unit_watts(rj.job.unit)
    watts += sum(nodes[n].power.first_core_w for n in busy)
    on = sum(1 for n in snap.nodes if n.state is PowerState.ON)
    return watts, on


def planned_mean_wait(snap: Snapshot, plan: Plan) -> float | None:
    """Mean of (planned start - submit) over the queued jobs the plan places (None: none)."""
    submit = {j.id: j.submit for j in snap.queued}
    waits = [a.start - submit[a.job_id] for a in plan.assignments if a.job_id in submit]
    return sum(waits) / len(waits) if waits else None


@dataclass(frozen=True, slots=True)
class CycleSummary:
    """The last cycle as the API and the metrics serve it (replaced whole, never mutated)."""

    cycle_id: int | None
    ok: bool
    started_at: float
    duration_s: float
    time: int | None = None
    error: str | None = None
    power_w: float | None = None
    cap_w: float | None = None
    nodes_by_state: dict[str, int] = field(default_factory=dict)
    jobs_by_state: dict[str, int] = field(default_factory=dict)
    planned: int = 0
    planned_mean_wait_s: float | None = None
    solver_status: str | None = None
    started: int = 0
    celsius: float | None = None
    """Outside temperature (with a ``[cooling]`` table), then the PUE at the IT power, the
    cooling power and the profit rate (revenue less energy cost, per hour)."""
    pue: float | None = None
    cooling_w: float | None = None
    profit_per_h: float | None = None


class Counters:
    """The loop's counters (actions, errors, energy, cycle durations), read by the metrics."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.actions: Counter[tuple[str, str]] = Counter()
        self.errors: Counter[str] = Counter()
        self.energy_j = 0.0
        self.saved_j = 0.0
        self._prev: tuple[int, float, float] | None = None
        """(cluster time, IT watts, watts saved) at the last :meth:`integrate`."""
        self.cycle_buckets = [0] * len(CYCLE_BUCKETS)
        self.cycle_count = 0
        self.cycle_sum = 0.0
        self.cycles_total = 0
        self.power_commands: Counter[tuple[str, str, str]] = Counter()
        self.switch_buckets = [0] * len(SWITCH_BUCKETS)
        self.switch_count = 0
        self.switch_sum = 0.0

    def action(self, kind: str, result: str) -> None:
        """Count an action outcome."""
        with self._lock:
            self.actions[(kind, result)] += 1

    def error(self, kind: str) -> None:
        """Count an error."""
        with self._lock:
            self.errors[kind] += 1

    def cycle(self, seconds: float) -> None:
        """Observe one cycle's duration."""
        with self._lock:
            self.cycle_count += 1
            self.cycle_sum += seconds
            for i, bound in enumerate(CYCLE_BUCKETS):
                if seconds <= bound:
                    self.cycle_buckets[i] += 1

    def switched(self, driver: str, command: str, result: str, seconds: float) -> None:
        """Count one power command (``driver``, ``on``/``off``, ``done``/``failed``)."""
        with self._lock:
            self.power_commands[(driver, command, result)] += 1
            self.switch_count += 1
            self.switch_sum += seconds
            for i, bound in enumerate(SWITCH_BUCKETS):
                if seconds <= bound:
                    self.switch_buckets[i] += 1

    def integrate(self, t: int, watts: float, saved_w: float) -> None:
        """Add the energy drawn (and saved by switched-off nodes) since the last call, at the
        power levels of the last call (the cluster clock; a clock that goes back is ignored)."""
        with self._lock:
            if self._prev is not None and t > self._prev[0]:
                dt = t - self._prev[0]
                self.energy_j += self._prev[1] * dt
                self.saved_j += self._prev[2] * dt
            self._prev = (t, watts, saved_w)

    def copy(self) -> dict[str, Any]:
        """A consistent copy of every counter."""
        with self._lock:
            return {
                "actions": dict(self.actions),
                "errors": dict(self.errors),
                "energy_j": self.energy_j,
                "saved_j": self.saved_j,
                "cycle_buckets": list(self.cycle_buckets),
                "cycle_count": self.cycle_count,
                "cycle_sum": self.cycle_sum,
                "power_commands": dict(self.power_commands),
                "switch_buckets": list(self.switch_buckets),
                "switch_count": self.switch_count,
                "switch_sum": self.switch_sum,
            }
