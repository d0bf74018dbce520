"""Node outlet temperatures over a replay (or from a model in the daemon): numpy state
advanced exactly between events at constant power, with the threshold statistics."""

from __future__ import annotations

import numpy as np

from wattsched.scheduler.thermal.model import FloatArray, ThermalParams


class ThermalTracker:
    """Outlet temperatures of ``params.names`` nodes, advanced by :meth:`advance`.

    Starts at the steady state of ``initial_power_w`` (the nodes have been drawing it for a
    long time). Between two times the power is constant, so the RC step is exact and the
    temperature moves monotonically: the maximum over an interval is at one of its ends, and
    the time above the threshold has a closed form.
    """

    def __init__(self, params: ThermalParams, initial_power_w: FloatArray, t0: int = 0) -> None:
        self.params = params
        self.time = t0
        self.power = np.asarray(initial_power_w, dtype=float).copy()
        self.t_out = params.steady(self.power)
        self.t_in = params.inlet(self.power)
        self.max_t = self.t_out.copy()
        self._integral = np.zeros(params.n)
        self._elapsed = 0.0
        self.violation_s = np.zeros(params.n)
        """Seconds each node spent above the threshold."""
        self.violations = 0
        """Times a node went from under to above the threshold."""
        self._tau = params.r * params.c

    def advance(self, t: int, power_w: FloatArray | None = None) -> None:
        """Move to time ``t`` with the power held since the last call, then set the new
        power (``power_w``; None: unchanged)."""
        dt = float(t - self.time)
        if dt > 0:
            p = self.params
            target = p.r * self.power + self.t_in
            decay = np.exp(-dt / self._tau)
            new = target + (self.t_out - target) * decay
            # integral of T over the interval, for the time-weighted mean
            self._integral += target * dt + (self.t_out - target) * self._tau * (1 - decay)
            self._elapsed += dt
            thr = p.t_thresh
            above_end = new > thr
            was = self.t_out > thr
            # crossing time when it goes from under to above: T0 < thr < T_inf
            with np.errstate(divide="ignore", invalid="ignore"):
                cross = -self._tau * np.log((thr - target) / (self.t_out - target))
            self.violation_s += np.where(
                was & above_end,
                dt,
                np.where(~was & above_end, np.clip(dt - cross, 0.0, dt), 0.0),
            )
            self.violations += int(np.count_nonzero(~was & above_end))
            self.t_out = new
            self.max_t = np.maximum(self.max_t, new)
            self.time = t
        if power_w is not None:
            self.power = np.asarray(power_w, dtype=float).copy()
            self.t_in = self.params.inlet(self.power)

    def mean_outlet(self) -> FloatArray:
        """Time-weighted mean outlet temperature per node (the current one before any time)."""
        if self._elapsed <= 0:
            return self.t_out.copy()
        return self._integral / self._elapsed

    def summary(self) -> dict[str, float | int]:
        """The figures the replay metrics carry."""
        return {
            "max_outlet_c": float(self.max_t.max()),
            "mean_outlet_c": float(self.mean_outlet().mean()),
            "threshold_c": self.params.t_thresh,
            "threshold_violations": self.violations,
            "seconds_above_threshold": float(self.violation_s.sum()),
            "nodes_above_threshold": int(np.count_nonzero(self.violation_s > 0)),
        }
