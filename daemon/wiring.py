"""The daemon built from its settings: store, connector (the simulated cluster restored from
the journal), dispatcher, cap."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable

from wattsched.connectors.base import Connector, ConnectorError
from wattsched.connectors.simulated import SimulatedCluster
from wattsched.daemon.config import Settings
from wattsched.daemon.cooling_report import build_reporter
from wattsched.daemon.loop import Service
from wattsched.daemon.power_cycle import PowerControl
from wattsched.daemon.runtime_history import seed_predictor
from wattsched.daemon.store import Store
from wattsched.daemon.store_schema import check_schema, make_engine
from wattsched.powerctl.build import build_driver, build_policy
from wattsched.powerctl.machine import PowerBook
from wattsched.powerctl.switching import Switcher
from wattsched.scheduler import dispatcher as dispatchers
from wattsched.scheduler.dispatcher import Dispatcher
from wattsched.scheduler.model import PowerCap

log = logging.getLogger(__name__)

Clock = Callable[[], float]


def read_cap(settings: Settings, origin: int) -> PowerCap:
    """The configured cap: constant, a profile file (offsets from ``origin``), or none."""
    if settings.power_cap_w is not None:
        return PowerCap.constant(settings.power_cap_w)
    if settings.power_cap_file is not None:
        from wattsched.connectors.traces.caps import read_power_cap

        return read_power_cap(settings.power_cap_file, origin=origin)
    return PowerCap.unlimited()


def build_simulated(settings: Settings) -> SimulatedCluster:
    """The simulated cluster of the ``[connector]`` table (Eurora or SWF workload)."""
    from wattsched.connectors.traces import eurora

    c = settings.connector
    if c.nodes_file is not None:
        nodes = eurora.read_eurora_nodes(c.nodes_file)
    else:
        from wattsched.connectors.traces import read_system_toml

        assert c.system_file is not None  # guaranteed by the settings' validator
        nodes = list(read_system_toml(c.system_file))
    assert c.trace_file is not None
    if c.trace_format == "eurora":
        queues = eurora.read_queues(c.queues_file) if c.queues_file else {}
        power = (
            eurora.read_power_predictions(c.power_predictions_file)
            if (c.power_predictions_file)
            else None
        )
        jobs = eurora.read_eurora_jobs(c.trace_file, queues=queues, power=power).jobs
    else:
        from wattsched.connectors.traces.swf import read_swf

        cores = max(n.capacity.cores for n in nodes)
        jobs = read_swf(c.trace_file, cores_per_node=cores, nodes=len(nodes)).jobs
    t0 = min((j.submit for j in jobs), default=0)
    return SimulatedCluster(nodes, jobs, read_cap(settings, t0), offline=c.offline)


def restore_simulation(cluster: SimulatedCluster, store: Store) -> int:
    """Replay the journal's successful starts on a fresh simulated cluster (after a restart).

    The simulated cluster lives in the daemon's memory; its state is rebuilt from the store,
    the one source of truth: each journaled start is carried out again at its cluster time,
    then the clock is set to the last cycle's. Returns how many starts were replayed.
    """
    n = 0
    for a in store.done_starts():
        if a.time > cluster.now:
            cluster.advance_to(a.time)
        try:
            cluster.start(str(a.job_id), (a.nodes or "").split(","))
            n += 1
        except ConnectorError as exc:
            log.error("could not replay the start of job %s: %s", a.job_id, exc)
    last = store.last_cycle_time()
    if last is not None and last > cluster.now:
        cluster.advance_to(last)
    return n


def build_power_control(settings: Settings, connector: Connector) -> PowerControl:
    """The ``[power]`` table's policy, driver, switcher and state book (checked now)."""
    p = settings.power
    nodes: list[str] = []
    if p.driver.startswith("ipmi") and not p.bmc.template:
        # Every node needs an address from the table: check them against the RMS now.
        nodes = [n.name for n in connector.snapshot().nodes]
    switcher = Switcher(
        build_driver(p, connector, nodes),
        max_parallel=p.max_parallel,
        attempts=p.attempts,
        backoff_s=p.retry_backoff_s,
    )
    book = PowerBook(p.boot_timeout_s, p.shutdown_timeout_s)
    return PowerControl(switcher, build_policy(p), book, backoff_s=p.backoff_s)


def thermal_guard(settings: Settings, inner: Dispatcher, connector: Connector) -> Dispatcher:
    """``inner`` behind the thermal guard, fed by the ``[thermal]`` readings and model."""
    from wattsched.connectors.traces.thermal_file import read_thermal_file
    from wattsched.daemon.thermal_readings import DaemonThermalGuard, NodeTemperatures

    t = settings.thermal
    assert t is not None
    names = [n.name for n in connector.snapshot().nodes]
    params = read_thermal_file(t.file, names)
    temps = NodeTemperatures(
        params,
        readings_file=t.readings_file,
        readings_command=t.readings_command,
        timeout_s=t.readings_timeout_s,
    )
    return DaemonThermalGuard(inner, temps)


def build_service(settings: Settings, *, check: bool = True, clock: Clock = time.time) -> Service:
    """The daemon from its settings: store (schema checked), connector, dispatcher, cap."""
    engine = make_engine(settings.database_url)
    if check:
        check_schema(engine)
    store = Store(engine, clock=clock)
    dispatcher = dispatchers.create(settings.dispatcher, **settings.dispatcher_params)
    learned = seed_predictor(dispatcher, store)
    if learned:
        log.info("runtime predictor: learned the runtimes of %d ended jobs from the store", learned)
    before: Callable[[], None] | None = None
    rebuild: Callable[[], Connector] | None = None
    connector: Connector
    if settings.connector.kind == "simulated":
        sim = [build_simulated(settings)]
        restore_simulation(sim[0], store)
        step = max(1, round(settings.cycle_seconds * settings.connector.speedup))
        first = [True]

        def advance() -> None:
            # Each cycle moves the virtual clock by cycle_seconds x speedup (the first none).
            if first[0]:
                first[0] = False
                return
            sim[0].advance_to(sim[0].now + step)

        def rebuild_simulation() -> Connector:
            # A standby taking over: the cluster lives in memory, rebuilt from the journal.
            sim[0] = build_simulated(settings)
            restore_simulation(sim[0], store)
            first[0] = True
            return sim[0]

        before = advance
        rebuild = rebuild_simulation
        connector = sim[0]
        origin = sim[0].start_time
    else:
        from wattsched.connectors import config as connector_config  # the connectors issue

        connector = connector_config.build_connector(settings.connector.rms_config())
        origin = int(clock())
    if settings.thermal is not None:
        dispatcher = thermal_guard(settings, dispatcher, connector)
    service = Service(
        connector,
        dispatcher,
        store,
        mode=settings.mode,
        cap=read_cap(settings, origin),
        cycle_seconds=settings.cycle_seconds,
        max_start_attempts=settings.max_start_attempts,
        requeue=settings.requeue,
        power=build_power_control(settings, connector),
        cooling=build_reporter(
            settings.cooling.kind,
            settings.cooling.season,
            str(settings.cooling.temperature_file) if settings.cooling.temperature_file else None,
            str(settings.cooling.prices_file) if settings.cooling.prices_file else None,
        ),
        before_cycle=before,
        clock=clock,
    )
    service.rebuild_connector = rebuild
    sources = setting_sources(settings)
    service.sources = dict(sources)
    service.configured_sources = dict(sources)
    service.apply_saved_settings()
    return service


SOURCED = ("mode", "power_cap_w", "cycle_seconds", "dispatcher", "database_url")
"""The settings whose origin ``/status`` shows."""


def setting_sources(settings: Settings) -> dict[str, str]:
    """Where each of :data:`SOURCED` comes from: ``environment`` (a ``WATTSCHED_`` variable),
    ``file`` (the TOML file), or ``default``. (``api`` once changed over the API.)"""
    out = {}
    for key in SOURCED:
        if os.environ.get(f"WATTSCHED_{key.upper()}") is not None:
            out[key] = "environment"
        elif key in settings.model_fields_set or (
            key == "power_cap_w" and settings.power_cap_file is not None
        ):
            out[key] = "file"
        else:
            out[key] = "default"
    return out
