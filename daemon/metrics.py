"""Prometheus metrics: a custom collector serving the loop's last snapshot and counters.

``collect()`` only reads what the loop already has (:attr:`Service.last`, the counters); it
never calls the resource manager nor the database, so a scrape costs microseconds and cannot
disturb the cluster.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CollectorRegistry
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from wattsched.daemon.cycle_state import CYCLE_BUCKETS, SWITCH_BUCKETS
from wattsched.daemon.loop import Service


def build_version() -> str:
    """The installed wattsched version ("unknown" outside an install)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("wattsched")
    except PackageNotFoundError:
        return "unknown"


def disjoint_job_states(by_state: dict[str, int], planned: int) -> dict[str, int]:
    """Jobs by state with no overlap, so that a sum over states counts each job once.

    The queued jobs are split into ``planned`` (the current plan places them) and ``waiting``
    (it does not); every other state (``running``...) is passed through.
    """
    out = {k: v for k, v in by_state.items() if k != "queued"}
    queued = by_state.get("queued", 0)
    planned = min(planned, queued)
    out["planned"] = planned
    out["waiting"] = queued - planned
    return out


SOLVER_STATUSES: tuple[str, ...] = (
    "heuristic",
    "optimal",
    "feasible",
    "infeasible",
    "timeout",
    "unknown",
)
"""Solver statuses always exported (0 or 1), plus whatever the last plan reported."""


class ServiceCollector(Collector):
    """Exports the state of one :class:`Service`."""

    def __init__(self, service: Service) -> None:
        self.service = service

    def collect(self) -> Iterator[Metric]:
        """The metric families of the last cycle."""
        last = self.service.last
        counters = self.service.counters.copy()

        power = GaugeMetricFamily(
            "wattsched_power_estimate_watts",
            "IT power at the last cycle, estimated from the node and job power models",
        )
        cap = GaugeMetricFamily(
            "wattsched_power_cap_watts", "power cap in force (absent when no cap)"
        )
        nodes = GaugeMetricFamily("wattsched_nodes", "nodes by power state", labels=["power_state"])
        jobs = GaugeMetricFamily(
            "wattsched_jobs",
            "jobs by state (disjoint: running, planned, waiting: a sum counts each job once)",
            labels=["state"],
        )
        wait = GaugeMetricFamily(
            "wattsched_planned_mean_wait_seconds", "mean planned wait of the planned jobs"
        )
        solver = GaugeMetricFamily(
            "wattsched_solver_status", "status of the last plan (1 = this one)", labels=["status"]
        )
        up = GaugeMetricFamily("wattsched_last_cycle_ok", "1 when the last cycle succeeded")
        last_ts = GaugeMetricFamily(
            "wattsched_last_cycle_timestamp_seconds", "wall clock of the last cycle"
        )
        mode = GaugeMetricFamily("wattsched_enforce_mode", "1 in enforce mode, 0 in advise")
        mode.add_metric([], 1.0 if self.service.mode == "enforce" else 0.0)
        leader = GaugeMetricFamily(
            "wattsched_leader", "1 when this daemon leads (acts), 0 on a standby"
        )
        leader.add_metric([], 1.0 if self.service.role == "leader" else 0.0)
        yield leader
        if last is not None:
            if last.power_w is not None:
                power.add_metric([], last.power_w)
            if last.cap_w is not None:
                cap.add_metric([], last.cap_w)
            for state, n in sorted(last.nodes_by_state.items()):
                nodes.add_metric([state], n)
            for state, n in sorted(disjoint_job_states(last.jobs_by_state, last.planned).items()):
                jobs.add_metric([state], n)
            if last.planned_mean_wait_s is not None:
                wait.add_metric([], last.planned_mean_wait_s)
            statuses = set(SOLVER_STATUSES)
            if last.solver_status:
                statuses.add(last.solver_status)
            for st in sorted(statuses):
                solver.add_metric([st], 1.0 if st == last.solver_status else 0.0)
            up.add_metric([], 1.0 if last.ok else 0.0)
            last_ts.add_metric([], last.started_at)
        build = GaugeMetricFamily(
            "wattsched_build_info", "the running wattsched version (always 1)", labels=["version"]
        )
        build.add_metric([build_version()], 1.0)
        yield from (power, cap, nodes, jobs, wait, solver, up, last_ts, mode, build)
        if last is not None and last.pue is not None:
            for name, doc, value in (
                ("wattsched_pue_ratio", "PUE at the estimated IT power and outside temperature",
                 last.pue),
                ("wattsched_cooling_power_estimate_watts", "cooling power: IT power x (PUE - 1)",
                 last.cooling_w),
                ("wattsched_outside_temperature_celsius", "outside temperature (the [cooling] "
                 "profile or forecast)", last.celsius),
                ("wattsched_profit_rate_per_hour", "revenue of the running jobs less the IT and "
                 "cooling energy cost, in the prices' currency per hour", last.profit_per_h),
            ):  # fmt: skip
                g = GaugeMetricFamily(name, doc)
                g.add_metric([], float(value or 0.0))
                yield g

        temps = getattr(self.service.dispatcher, "temps", None)
        if temps is not None:
            outlet = GaugeMetricFamily(
                "wattsched_node_outlet_celsius",
                "node outlet temperature at the last cycle ([thermal]: a reading, else the model)",
                labels=["node"],
            )
            read = GaugeMetricFamily(
                "wattsched_node_outlet_read",
                "1 when the node's outlet temperature is a reading, 0 when the model's",
                labels=["node"],
            )
            for node, (celsius, source) in sorted(temps.by_node().items()):
                outlet.add_metric([node], celsius)
                read.add_metric([node], 1.0 if source == "reading" else 0.0)
            yield from (outlet, read)
        yield histogram(
            "wattsched_cycle_duration_seconds", "duration of a control cycle",
            CYCLE_BUCKETS, counters["cycle_buckets"], counters["cycle_count"],
            counters["cycle_sum"],
        )  # fmt: skip

        actions = CounterMetricFamily(
            "wattsched_actions", "RMS actions by kind and result", labels=["kind", "result"]
        )
        for (kind, result), n in sorted(counters["actions"].items()):
            actions.add_metric([kind, result], n)
        yield actions
        errors = CounterMetricFamily("wattsched_errors", "errors by kind", labels=["kind"])
        for kind, n in sorted(counters["errors"].items()):
            errors.add_metric([kind], n)
        yield errors
        energy = CounterMetricFamily(
            "wattsched_energy_joules", "IT energy integrated over the cluster clock"
        )
        energy.add_metric([], counters["energy_j"])
        yield energy
        saved = CounterMetricFamily(
            "wattsched_energy_saved_joules",
            "energy not drawn by switched-off nodes (against on and idle), over the cluster clock",
        )
        saved.add_metric([], counters["saved_j"])
        yield saved
        commands = CounterMetricFamily(
            "wattsched_power_commands",
            "node power commands by driver, command and result",
            labels=["driver", "command", "result"],
        )
        for (driver, command, result), n in sorted(counters["power_commands"].items()):
            commands.add_metric([driver, command, result], n)
        yield commands
        yield histogram(
            "wattsched_power_switch_seconds", "duration of a node power command, retries included",
            SWITCH_BUCKETS, counters["switch_buckets"], counters["switch_count"],
            counters["switch_sum"],
        )  # fmt: skip


def histogram(
    name: str, doc: str, bounds: tuple[float, ...], counts: list[int], count: int, total: float
) -> HistogramMetricFamily:
    """A histogram family from cumulative bucket counts (the counters' own)."""
    hist = HistogramMetricFamily(name, doc)
    buckets = [(f"{b:g}", float(c)) for b, c in zip(bounds, counts, strict=True)]
    buckets.append(("+Inf", float(count)))
    hist.add_metric([], buckets, sum_value=total)
    return hist


def make_registry(service: Service) -> CollectorRegistry:
    """A fresh registry holding only the service's collector (no global registry)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(ServiceCollector(service))
    return registry
