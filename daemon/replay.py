"""Replay: the control cycle on the simulated cluster's virtual clock.

The cycle runs once at the start and again after every event time (arrivals, job ends,
node power transitions, cap steps) until nothing is left to happen. With a node power policy,
its decision is carried out after each cycle's starts, and the time it wants to be asked again
(an idle timeout expiring) becomes a wake-up of the virtual clock.

Cycles that provably start nothing are skipped (``skip=True``, without a power policy, for
dispatchers that declare :attr:`~wattsched.scheduler.dispatcher.Dispatcher.skips_exact`):
when no job waits; when no waiting job's cores fit in the free cores of the usable nodes,
pooled (no start could be accepted: the cluster refuses a start on a node that is not usable
or short of room, and these dispatchers plan only starts it accepts, and plan no wake-up);
or when the last cycle planned no start and since then only jobs arrived (no start, end,
node change, hold, release or cap step) none of which fits in the free resources of the
usable nodes, pooled. Such a dispatcher then starts nothing either, and what it keeps from
one cycle to the next is exact whatever cycles it saw (caches checked against each
snapshot, as a real RMS's cycles see any change), so the schedule is the same
(``tests/daemon/test_replay_skip.py`` replays both ways). The first two rules are asked by
the cluster itself at each step after a cycle (:meth:`~wattsched.connectors.simulated.
SimulatedCluster.advance_while_idle`: no turn of the loop per skipped step), the third by the
loop.
"""

from __future__ import annotations

import gc
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
    skipped: int = 0
    """Cycles skipped because they provably start nothing (see the module docstring)."""


def replay(
    cluster: SimulatedCluster,
    dispatcher: Dispatcher,
    *,
    progress: Progress | None = None,
    keep_stats: bool = False,
    max_cycles: int | None = None,
    power_policy: PowerPolicy | None = None,
    skip: bool = True,
) -> ReplayResult:
    """Run the control cycle at every event until the workload is done.

    ``power_policy`` (default none: every node keeps its power state) switches nodes after
    each cycle's starts; refused commands are counted in ``power_errors``.

    The objects alive before the replay (the workload, the nodes) are kept out of the garbage
    collector's full collections while it runs (:func:`gc.freeze`, undone at its end; not when
    something else froze objects): the two or three full collections of a whole-trace replay
    traversed them all each time (0.2 s of KTH-SP2's 3 s). The oldest generation is also
    looked at only every :data:`FULL_EVERY` young-generation collections instead of every 10
    (what the replay makes and keeps, its records and running jobs, is traversed by each full
    collection: two a KTH-SP2 replay, 0.06-0.09 s): set only when lower, and put back at the
    end unless something else changed it meanwhile.
    """
    freeze = gc.get_freeze_count() == 0
    if freeze:
        gc.freeze()
    old = gc.get_threshold()
    ours = (old[0], old[1], FULL_EVERY)
    raised = old[2] < FULL_EVERY
    if raised:
        gc.set_threshold(*ours)
    try:
        return _replay(cluster, dispatcher, progress, keep_stats, max_cycles, power_policy, skip)
    finally:
        if raised and gc.get_threshold() == ours:
            gc.set_threshold(*old)
        if freeze:
            gc.unfreeze()


FULL_EVERY = 100
"""The oldest generation's threshold during a replay (Python's default: 10)."""


def _replay(
    cluster: SimulatedCluster,
    dispatcher: Dispatcher,
    progress: Progress | None,
    keep_stats: bool,
    max_cycles: int | None,
    power_policy: PowerPolicy | None,
    skip: bool,
) -> ReplayResult:
    """:func:`replay`'s loop."""
    wall0 = time.perf_counter()
    result = ReplayResult(cluster)
    total = cluster.workload_size
    # The cycle's journal and never-twice memory, in memory: the daemon's rules at replay speed.
    journal = MemoryJournal()
    starts: dict[str, StartRecord] = {}
    power = PowerControl.through_connector(cluster, power_policy) if power_policy else None
    skipping = skip and power_policy is None and dispatcher.skips_exact
    idle: tuple[int, int, int] | None = None  # (changes, arrivals, time) after a no-start plan
    some_fit = False  # jobs wait and some fit pooled (known after the cluster skipped steps)
    while True:
        if (
            skipping
            and (idle is not None or not some_fit)
            and _starts_nothing(cluster, idle, some_fit)
        ):
            result.skipped += 1
            if idle is not None:
                idle = (idle[0], cluster.arrivals_seen, idle[2])
        else:
            cycle = run_cycle(
                cluster, dispatcher, journal=journal, starts=starts,
                observe=power.observe if power is not None else None,
            )  # fmt: skip
            plan = cycle.plan
            t = plan.time
            for a in plan.assignments:  # any of plan.starts_now()
                if a.start <= t:
                    idle = None
                    break
            else:
                idle = (cluster.changes, cluster.arrivals_seen, cluster.now)
            result.cycles += 1
            result.plan_seconds.append(cycle.plan_seconds)
            result.start_errors += len(cycle.errors)
            result.last_stats = cycle.plan.stats
            if keep_stats:
                result.solver_stats.append(cycle.plan.stats)
            if cycle.plan.wake_at is not None:
                cluster.wake_at(cycle.plan.wake_at)  # the dispatcher's next planned start
            if power is not None and (
                cluster.queued or cluster.running or cluster.pending_arrivals
            ):
                # Once the workload is done the replay ends at this instant: a switch now would
                # change no energy and no wait, and only count as a reconfiguration.
                out = apply_power_policy(power, cluster, journal, cycle.snapshot, cycle.plan)
                result.power_errors += len(out.failed) + len(out.refused)
            if progress is not None and result.cycles % 64 == 0:
                progress(total - cluster.queued - cluster.running - cluster.pending_arrivals, total)
            if max_cycles is not None and result.cycles >= max_cycles:
                break
        if skipping:
            # The steps where no job waits or none fits, skipped inside the cluster (the first
            # rule of _starts_nothing, at each of them).
            more, skipped, seen = cluster.advance_while_idle()
            some_fit = True  # (when more): the step it stopped at has jobs waiting, some fit
            if skipped:
                result.skipped += skipped
                if idle is not None:
                    idle = (idle[0], seen, idle[2])
            if not more:
                break
        elif not cluster.advance():
            break
    if progress is not None:
        progress(total - cluster.queued - cluster.running - cluster.pending_arrivals, total)
    result.wall_seconds = time.perf_counter() - wall0
    return result


def _starts_nothing(
    cluster: SimulatedCluster, idle: tuple[int, int, int] | None, some_fit: bool = False
) -> bool:
    """True when a cycle now provably starts nothing (see the module docstring); ``some_fit``:
    jobs are known to wait and some to fit, pooled (the first rule is not asked)."""
    if not some_fit and (not cluster.queued or cluster.nothing_fits()):
        return True
    if idle is None:
        return False
    changes, seen, t = idle
    new = cluster.only_arrivals_since(changes, seen)
    if new is None:
        return False
    step = cluster.cap.next_change(t)
    if step is not None and step <= cluster.now:
        return False
    free = cluster.free_usable()
    for job in new:
        # The job's total (units x unit) within the free resources, without making it.
        n = job.units
        if not job.held and all(a * n <= f for a, f in zip(job.unit.as_tuple(), free, strict=True)):
            return False
    return True
