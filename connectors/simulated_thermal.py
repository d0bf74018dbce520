"""The simulated cluster with node temperatures (``wattsched simulate --thermal FILE``).

A subclass, so that a replay without thermal pays nothing: it feeds a
:class:`~wattsched.scheduler.thermal.tracker.ThermalTracker` with each node's power whenever
the clock moves (before the events of the new time change the power), and keeps the hottest
outlet temperature at each power sample (for the power CSV and the plot).

A node whose outlet reaches its threshold is, by the thermal file's ``on_overheat``:

- ``suspend`` (the HPC setting, the default): its jobs pause (every unit of a paused job, on
  all its nodes, makes no progress and draws nothing; a node without running units draws its
  idle power), so their ends move later by the paused time;
- ``throttle`` (the Cloud setting): its jobs run at ``throttle_factor`` of their speed and
  dynamic power (on all their nodes: a job goes at its slowest node's pace), so their remaining
  runtime stretches by ``1 / throttle_factor``; where the throttled power would still heat the
  node to its threshold (checked at every event), its jobs pause as in ``suspend``;
- ``none``: nothing (temperatures recorded only).

Either way the node takes no new job (it is marked unavailable) until its outlet is back at
``t_thresh - hysteresis_c``, when it resumes. Between events the power is constant, so the
times a node reaches the threshold or cools to the resume temperature have a closed form: the
cluster checks at those times (rounded up to the next second: a node passes its threshold by
at most one second of heating). The job's end is kept in one place (``_end_at``), the end event
of the heap that does not match it is stale and ignored, and the job's record and running
entry (its end estimate) follow. ``slow_log`` lists every interval a job ran slowed or paused,
for :func:`~wattsched.scheduler.thermal.validate_thermal.validate_thermal`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import TypeVar

import numpy as np

from wattsched.connectors.base import StartResult
from wattsched.connectors.simulated import _CAP, _END, SimulatedCluster
from wattsched.scheduler.model import Job, Node, PowerCap
from wattsched.scheduler.thermal.model import FloatArray, ThermalModelError, ThermalParams
from wattsched.scheduler.thermal.tracker import ThermalTracker

T = TypeVar("T")

_THERMAL = 5
"""The kind a thermal check reports when it suspended, throttled or resumed a node."""
TOL_C = 1e-9


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
        self.slowed_samples: list[tuple[int, int]] = []
        """(suspended nodes, throttled nodes) at each power sample."""
        self.tracker: ThermalTracker | None = None
        self.mode = thermal.on_overheat
        self._speed = 0.0 if self.mode == "suspend" else thermal.throttle_factor
        self._slowed: dict[int, tuple[int, bool]] = {}  # node index -> (since, was available)
        self._paused: set[int] = set()  # throttle: slowed nodes paused (half power still heats)
        self.escalations = 0
        """Throttle: times a throttled node was paused because its throttled power would
        still heat it past the threshold."""
        self._rate: dict[str, float] = {}  # running jobs not at full speed
        self._work: dict[str, tuple[float, int]] = {}  # job -> (work left at full speed, since)
        self._end_at: dict[str, int | None] = {}  # job -> its end now (None: paused)
        self._check_at: int | None = None
        self._drop_w = 0.0
        self.slow_log: list[tuple[str, int, int, float]] = []
        """Every interval a job ran slowed: ``(job, from, to, rate)`` (rate 0: paused)."""
        self.slow_events = 0
        """Times a node was suspended or throttled."""
        self.slow_node_s = 0
        """Node-seconds spent suspended or throttled (closed intervals; see :meth:`slowed_s`)."""
        super().__init__(
            nodes, jobs, cap, offline=offline, start_time=start_time, record_power=record_power
        )
        self._books.track_jobs()
        if self.mode != "none":
            idle = np.zeros(thermal.n)
            for k, n in enumerate(self._nodes):
                idle[self._thermal_pos[k]] = n.power.idle_w
            cool = thermal.steady(idle)
            resume = thermal.t_thresh - thermal.hysteresis_c
            if np.any(cool >= resume):
                k = int(np.argmax(cool))
                raise ThermalModelError(
                    thermal.source,
                    "hysteresis_c",
                    thermal.hysteresis_c,
                    f"node {thermal.names[k]} idles at {cool[k]:.2f} C, not under the resume "
                    f"temperature t_thresh - hysteresis_c = {resume} C: it would never resume",
                )
        self.tracker = ThermalTracker(thermal, self.node_powers(), self.now)
        self._sample()

    # -- power ---------------------------------------------------------------------------------

    def _node_watts(self, i: int) -> float:
        node, books = self._nodes[i], self._books
        w = node.power.state_watts(node.state)
        if not books.busy[i]:
            return w
        assert books.node_jobs is not None
        jobs = books.node_jobs[i]
        if not self._rate or not any(j in self._rate for j in jobs):
            return w + books.unit_w[i] + node.power.first_core_w
        active = False
        for jid, k in jobs.items():
            rate = self._rate.get(jid, 1.0)
            if rate > 0:
                active = True
                job = self._running[jid].job
                uw = job.unit_power_w
                w += (node.power.unit_watts(job.unit) if uw is None else uw) * k * rate
        return w + (node.power.first_core_w if active else 0.0)

    def node_powers(self) -> FloatArray:
        """Power per node now, in the thermal file's node order (slowed jobs included)."""
        out = np.zeros(len(self._thermal_pos))
        for k in range(len(self._nodes)):
            out[self._thermal_pos[k]] = self._node_watts(k)
        return out

    @property
    def power_now_w(self) -> float:
        """The IT power drawn now (paused and throttled jobs draw less)."""
        return self._static_w + self._busy_w - self._drop_w

    def _refresh_drop(self) -> None:
        if not self._rate:
            self._drop_w = 0.0
            return
        nodes = {self._index[n] for j in self._rate for n in self._running[j].nodes}
        full = 0.0
        real = 0.0
        for i in nodes:
            node, books = self._nodes[i], self._books
            full += books.unit_w[i] + (node.power.first_core_w if books.busy[i] else 0.0)
            real += self._node_watts(i) - node.power.state_watts(node.state)
        self._drop_w = full - real

    def outlet_by_name(self) -> dict[str, float]:
        """Outlet temperature per node name now."""
        if self.tracker is None:
            return {}
        return {
            n.name: float(self.tracker.t_out[self._thermal_pos[k]])
            for k, n in enumerate(self._nodes)
        }

    # -- the connector -------------------------------------------------------------------------

    def start(self, job_id: str, nodes: Sequence[str]) -> StartResult:
        res = super().start(job_id, nodes)
        rec = self.records[job_id]
        if rec.start is not None and rec.end is not None and job_id not in self._end_at:
            self._end_at[job_id] = rec.end
            self._work[job_id] = (float(rec.end - rec.start), rec.start)
        return res

    def power(self, node: str, on: bool) -> None:
        super().power(node, on)
        if self.tracker is not None:
            self.tracker.advance(self.now, self.node_powers())

    def _finish(self, job_id: str) -> None:
        if job_id not in self._running:
            return
        end = self._end_at.get(job_id, self.now)
        if end != self.now:
            return  # a stale end: the job was paused or slowed since
        rate = self._rate.pop(job_id, None)
        if rate is not None and self.now > self._work[job_id][1]:
            self.slow_log.append((job_id, self._work[job_id][1], self.now, rate))
        self._end_at.pop(job_id, None)
        self._work.pop(job_id, None)
        self.records[job_id].end = self.now
        super()._finish(job_id)

    # -- the clock -----------------------------------------------------------------------------

    def next_event_time(self) -> int | None:
        t = super().next_event_time()
        c = self._check_at
        if c is not None and c > self.now and (t is None or c < t):
            return c
        return t

    def _step(self, t: int) -> tuple[bool, set[int]]:
        due = (self._events and self._events[0][0] <= t) or (
            self._next_arrival < len(self._arrivals)
            and self._arrivals[self._next_arrival].submit <= t
        )
        if due or t != self._check_at:
            return super()._step(t)
        # only a thermal check is due
        self._account(t)
        self.now = t
        self._check_at = None
        if self._overheat_check():
            self._sample()
            return False, {_THERMAL}
        self._plan_check()
        return False, set()

    def _is_event(self, arrived: bool, kinds: set[int]) -> bool:
        """As in :class:`SimulatedCluster`, but a thermal check that changed nothing (no
        event kinds) is no event: no cycle for it."""
        return bool(arrived or kinds - {_CAP} or (self._queue and kinds))

    def _account(self, t: int) -> None:
        if self.tracker is not None and t > self.tracker.time:
            self.tracker.advance(t)
        super()._account(t)

    def _sample(self) -> None:
        if self.tracker is None:
            super()._sample()
            return
        self._refresh_drop()
        # the power changes at every sample point (a start, an end, a switch): take it now
        self.tracker.advance(self.now, self.node_powers())
        if self._overheat_check():
            self._refresh_drop()
            self.tracker.advance(self.now, self.node_powers())
        self._plan_check()
        super()._sample()
        if not self.record_power:
            return
        n = len(self.samples)
        _put(self.outlet_samples, n, float(self.tracker.t_out.max()))
        sus = len(self._slowed) if self.mode == "suspend" else len(self._paused)
        _put(self.slowed_samples, n, (sus, len(self._slowed) - sus))

    # -- suspension and throttling -------------------------------------------------------------

    def _overheat_check(self) -> bool:
        """Suspend or throttle the nodes at their threshold, resume those cooled enough; True
        when something changed."""
        if self.mode == "none" or self.tracker is None:
            return False
        p = self.tracker.params
        t_out = self.tracker.t_out
        hot = t_out[self._thermal_pos] >= p.t_thresh - TOL_C
        cool = t_out[self._thermal_pos] <= p.t_thresh - p.hysteresis_c + TOL_C
        changed: list[int] = []
        for i in np.nonzero(hot)[0].tolist():
            if i not in self._slowed:
                node = self._nodes[i]
                self._slowed[i] = (self.now, node.available)
                self.slow_events += 1
                if node.available:
                    self._set_node(i, replace(node, available=False))
                changed.append(i)
        for i in [i for i in self._slowed if cool[i]]:
            since, was = self._slowed.pop(i)
            self._paused.discard(i)
            self.slow_node_s += self.now - since
            if was and not self._nodes[i].available:
                self._set_node(i, replace(self._nodes[i], available=True))
            changed.append(i)
        self._apply_rates(changed)
        if self.mode == "throttle" and len(self._paused) < len(self._slowed):
            # a throttled node whose throttled power still heats it to its threshold: paused
            pw = self.node_powers()
            target = (p.r * pw + p.inlet(pw))[self._thermal_pos]
            worse = [
                i for i in self._slowed if i not in self._paused and target[i] >= p.t_thresh - TOL_C
            ]
            self._paused.update(worse)
            self.escalations += len(worse)
            self._apply_rates(worse)
            changed += worse
        if not changed:
            return False
        self.changes += 1
        return True

    def _apply_rates(self, nodes: list[int]) -> None:
        """New rates for the jobs on ``nodes``: their slowest node's speed."""
        assert self._books.node_jobs is not None
        jobs = {j for i in nodes for j in self._books.node_jobs[i]}
        for j in sorted(jobs):
            speed = 1.0
            for n in self._running[j].nodes:
                i = self._index[n]
                if i in self._slowed:
                    speed = min(speed, 0.0 if i in self._paused else self._speed)
            self._set_rate(j, speed)

    def _set_rate(self, job_id: str, rate: float) -> None:
        """Bank the job's progress at its old rate and go on at ``rate`` (a new end)."""
        old = self._rate.get(job_id, 1.0)
        if rate == old or job_id not in self._work:
            return
        left, since = self._work[job_id]
        if self.now > since:
            left = max(0.0, round(left - old * (self.now - since), 6))
            if old != 1.0:
                self.slow_log.append((job_id, since, self.now, old))
        self._work[job_id] = (left, self.now)
        if rate == 1.0:
            self._rate.pop(job_id)
        else:
            self._rate[job_id] = rate
        rj = self._running[job_id]
        done = self._total_work(job_id) - left
        if rate > 0:
            end = self.now + math.ceil(left / rate - 1e-9)
            self._end_at[job_id] = end
            self.records[job_id].end = end
            self._push(end, _END, job_id)
            estimate = self.now + math.ceil((rj.job.walltime - done) / rate - 1e-9)
        else:
            self._end_at[job_id] = None
            estimate = self.now + max(0, math.ceil(rj.job.walltime - done))
        self._running[job_id] = replace(rj, end_estimate=max(estimate, self.now))
        self._running_tuple = None

    def _total_work(self, job_id: str) -> float:
        """The job's whole work at full speed (its runtime, cut at its walltime)."""
        job = self._running[job_id].job
        runtime = job.runtime if job.runtime is not None else job.walltime
        return float(min(runtime, job.walltime))

    def _plan_check(self) -> None:
        """The next time a node reaches its threshold or cools to its resume temperature."""
        if self.mode == "none" or self.tracker is None:
            return
        tr = self.tracker
        p = tr.params
        pos = self._thermal_pos
        t0 = tr.t_out[pos]
        target = (p.r * tr.power + tr.t_in)[pos]
        tau = (p.r * p.c)[pos]
        slowed = np.zeros(len(pos), dtype=bool)
        slowed[list(self._slowed)] = True
        goal = np.where(slowed, p.t_thresh - p.hysteresis_c, p.t_thresh)
        moving = np.where(slowed, (target < goal) & (t0 > goal), (target > goal) & (t0 < goal))
        if not moving.any():
            self._check_at = None
            return
        with np.errstate(divide="ignore", invalid="ignore"):
            dt = tau[moving] * np.log(
                (t0[moving] - target[moving]) / (goal[moving] - target[moving])
            )
        self._check_at = self.now + max(1, math.ceil(float(dt.min())))

    def slowed_s(self) -> int:
        """Node-seconds spent suspended or throttled, the open intervals up to now included."""
        return self.slow_node_s + sum(self.now - since for since, _ in self._slowed.values())

    def slow_intervals(self) -> list[tuple[str, int, int, float]]:
        """:attr:`slow_log` plus the intervals still open now."""
        out = list(self.slow_log)
        for j, rate in self._rate.items():
            _, since = self._work[j]
            if self.now > since:
                out.append((j, since, self.now, rate))
        return out


def _put(series: list[T], n: int, value: T) -> None:
    """Make ``series`` as long as the ``n`` power samples, ``value`` at the last one (samples
    at the same time replace each other)."""
    while len(series) < n - 1:
        series.append(series[-1] if series else value)
    if len(series) == n:
        series[-1] = value
    else:
        series.append(value)
