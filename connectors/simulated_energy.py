"""The simulated cluster's power record: the IT power drawn now, the energy and cap
violations integrated between events, the peak and the power samples (:class:`PowerRecord`,
a base of :class:`~wattsched.connectors.simulated.SimulatedCluster`, which holds the state;
the thermal cluster lays its own draw and samples over it)."""

from __future__ import annotations

from collections.abc import Mapping

from wattsched.connectors.simulated_books import PowerSample, seconds_above
from wattsched.scheduler.model import Job, PowerCap, RunningJob


class PowerRecord:
    """The power, energy and samples of a simulated cluster."""

    now: int
    cap: PowerCap
    record_power: bool
    samples: list[PowerSample]
    energy_j: float
    power_saved_j: float
    peak_power_w: float
    cap_violation_s: int
    _static_w: float
    _busy_w: float
    _all_idle_w: float
    _nodes_on: int
    _last_t: int
    _queue: Mapping[str, Job]
    _running: Mapping[str, RunningJob]

    @property
    def power_now_w(self) -> float:
        """The IT power drawn now."""
        return self._static_w + self._busy_w

    def _account(self, t: int) -> None:
        """Integrate energy and cap violations from the last event time up to ``t``."""
        dt = t - self._last_t
        if dt > 0:
            p = self.power_now_w
            self.energy_j += p * dt
            self.power_saved_j += (self._all_idle_w - self._static_w) * dt
            if self.cap.limited:  # no draw is above an infinite cap
                self.cap_violation_s += seconds_above(self.cap, p, self._last_t, t)
        self._last_t = t

    def _sample(self) -> None:
        """Note the power drawn now in the peak and, with ``record_power``, in the samples."""
        p = self.power_now_w
        if p > self.peak_power_w:
            self.peak_power_w = p
        if not self.record_power:
            return
        now = self.now
        samples = self.samples
        if samples and (last := samples[-1]).time == now:
            # A later sample of the same instant (a start after the step's): updated in place.
            last.it_power_w = p  # its cap_w is the cap at ``now`` already
            last.nodes_on = self._nodes_on
            last.queued = len(self._queue)
            last.running = len(self._running)
        else:
            n_q, n_r = len(self._queue), len(self._running)
            samples.append(PowerSample(now, p, self.cap.at(now), self._nodes_on, n_q, n_r))
