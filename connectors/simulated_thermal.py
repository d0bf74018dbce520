"""The simulated cluster with node temperatures (``wattsched simulate --thermal FILE``).

A subclass, so that a replay without thermal pays nothing: it feeds a
:class:`~wattsched.scheduler.thermal.tracker.ThermalTracker` with each node's power whenever
the clock moves (before the events of the new time change the power), and keeps the hottest
outlet temperature at each power sample (for the power CSV and the plot).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from wattsched.connectors.simulated import SimulatedCluster
from wattsched.scheduler.model import Job, Node, PowerCap
from wattsched.scheduler.thermal.model import FloatArray, ThermalModelError, ThermalParams
from wattsched.scheduler.thermal.tracker import ThermalTracker


class ThermalSimulatedCluster(SimulatedCluster):
    """:class:`SimulatedCluster` whose nodes heat and cool by the RC + recirculation model."""

    def __init__(
        self,
        nodes: Sequence[Node],
        jobs: Sequence[Job],
        cap: PowerCap | None = None,
        *,
        thermal: ThermalParams,
        offline: bool = False,
        start_time: int | None = None,
        record_power: bool = True,
    ) -> None:
        missing = [n.name for n in nodes if n.name not in thermal.index()]
        if missing:
            raise ThermalModelError(
                thermal.source, "nodes", missing[:5], "nodes of the system missing from the file"
            )
        order = thermal.index()
        self._thermal_pos = np.array([order[n.name] for n in nodes])
        self.outlet_samples: list[float] = []
        self.tracker: ThermalTracker | None = None
        super().__init__(
            nodes, jobs, cap, offline=offline, start_time=start_time, record_power=record_power
        )
        self.tracker = ThermalTracker(thermal, self.node_powers(), self.now)
        self._sample()

    def node_powers(self) -> FloatArray:
        """Power per node now, in the thermal file's node order."""
        out = np.zeros(len(self._thermal_pos))
        for k, (node, book) in enumerate(zip(self._nodes, self._books, strict=True)):
            w = node.power.state_watts(node.state) + book.unit_watts
            if book.busy_units:
                w += node.power.first_core_w
            out[self._thermal_pos[k]] = w
        return out

    def outlet_by_name(self) -> dict[str, float]:
        """Outlet temperature per node name now."""
        if self.tracker is None:
            return {}
        return {
            n.name: float(self.tracker.t_out[self._thermal_pos[k]])
            for k, n in enumerate(self._nodes)
        }

    def power(self, node: str, on: bool) -> None:
        super().power(node, on)
        if self.tracker is not None:
            self.tracker.advance(self.now, self.node_powers())

    def _account(self, t: int) -> None:
        if self.tracker is not None and t > self.tracker.time:
            self.tracker.advance(t)
        super()._account(t)

    def _sample(self) -> None:
        super()._sample()
        if self.tracker is None:
            return
        # the power changes at every sample point (a start, an end, a switch): take it now
        self.tracker.advance(self.now, self.node_powers())
        if not self.record_power:
            return
        hot = float(self.tracker.t_out.max())
        while len(self.outlet_samples) < len(self.samples) - 1:
            self.outlet_samples.append(hot)
        if len(self.outlet_samples) == len(self.samples):
            self.outlet_samples[-1] = hot
        else:
            self.outlet_samples.append(hot)
