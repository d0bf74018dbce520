"""Replay: the control cycle on the simulated cluster's virtual clock.

The cycle runs once at the start and again after every event time (arrivals, job ends,
node power transitions, cap steps) until nothing is left to happen. With a node power policy,
its decision is carried out after each cycle's starts, and the time it wants to be asked again
(an idle timeout expiring) becomes a wake-up of the virtual clock.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from wattsched.connectors.simulated import SimulatedCluster
from wattsched.daemon.acting import MemoryJournal
from wattsched.daemon.controller import run_cycle
from wattsched.daemon.job_records import StartRecord
from wattsched.daemon.power_cycle import PowerControl, apply_power_policy
from wattsched.powerctl.policy import PowerPolicy
from wattsched.scheduler.dispatcher import Dispatcher
from wattsched.scheduler.model import SolverStats

log = logging.getLogger(__name__)

Progress = Callable[[int, int], None]
"""Called as ``progress(jobs_done, jobs_total)`` after each cycle."""


@dataclass(slots=True)
class ReplayResult:
    """The outcome of a replay: the cluster's records plus per-cycle planning times."""

    cluster: SimulatedCluster
    plan_seconds: list[float] = field(default_factory=list)
    cycles: int = 0
    start_errors: int = 0
    wall_seconds: float = 0.0
    last_stats: SolverStats | None = None
    solver_stats: list[SolverStats] = field(default_factory=list)
    power_errors: int = 0
    """Power commands of the policy refused by a safety rule or by the cluster."""


def replay(
    cluster: SimulatedCluster,
    dispatcher: Dispatcher,
    *,
    progress: Progress | None = None,
    keep_stats: bool = False,
    max_cycles: int | None = None,
    power_policy: PowerPolicy | None = None,
) -> ReplayResult:
    """Run the control cycle at every event until the workload is done.

    ``power_policy`` (default none: every node keeps its power state) switches nodes after
    each cycle's starts; refused commands are counted in ``power_errors``.
    """
    wall0 = time.perf_counter()
    result = ReplayResult(cluster)
    total = cluster.workload_size
    # The cycle's journal and never-twice memory, in memory: the daemon's rules at replay speed.
    journal = MemoryJournal()
    starts: dict[str, StartRecord] = {}
    power = PowerControl.through_connector(cluster, power_policy) if power_policy else None
    while True:
        cycle = run_cycle(
            cluster, dispatcher, journal=journal, starts=starts,
            observe=power.observe if power is not None else None,
        )  # fmt: skip
        result.cycles += 1
        result.plan_seconds.append(cycle.plan_seconds)
        result.start_errors += len(cycle.errors)
        result.last_stats = cycle.plan.stats
        if keep_stats:
            result.solver_stats.append(cycle.plan.stats)
        if power is not None:
            out = apply_power_policy(power, cluster, journal, cycle.snapshot, cycle.plan)
            result.power_errors += len(out.failed) + len(out.refused)
        if progress is not None and result.cycles % 64 == 0:
            progress(total - cluster.queued - cluster.running - cluster.pending_arrivals, total)
        if max_cycles is not None and result.cycles >= max_cycles:
            break
        if not cluster.advance():
            break
    if progress is not None:
        progress(total - cluster.queued - cluster.running - cluster.pending_arrivals, total)
    result.wall_seconds = time.perf_counter() - wall0
    return result
