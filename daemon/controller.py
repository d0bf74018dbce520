"""The control cycle: observe, plan, start what starts now.

One function serves both clocks: the daemon runs it every period on the wall clock, the
replay at every event of the simulated cluster's virtual clock. It reads no clock itself
(the planning time is measured with an injected timer) and never sleeps. Starts go through
:func:`wattsched.daemon.acting.start_planned` in both, with its safety rules and its journal
(the daemon's store, or a replay's in-memory journal).
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from wattsched.connectors.base import Connector, ConnectorError
from wattsched.daemon.acting import MemoryJournal, StartJournal, start_planned
from wattsched.daemon.job_records import StartRecord
from wattsched.scheduler.dispatcher import Dispatcher
from wattsched.scheduler.model import Assignment, Plan, PowerCap, Snapshot

log = logging.getLogger(__name__)

Timer = Callable[[], float]


@dataclass(slots=True)
class CycleResult:
    """What one cycle saw, planned and did."""

    snapshot: Snapshot
    plan: Plan
    plan_seconds: float
    started: list[Assignment] = field(default_factory=list)
    errors: list[tuple[Assignment, ConnectorError]] = field(default_factory=list)


def run_cycle(
    connector: Connector,
    dispatcher: Dispatcher,
    *,
    act: bool = True,
    timer: Timer = time.perf_counter,
    cap: PowerCap | None = None,
    journal: StartJournal | None = None,
    starts: dict[str, StartRecord] | None = None,
    max_start_attempts: int = 3,
    observe: Callable[[Snapshot], Snapshot] | None = None,
) -> CycleResult:
    """One control cycle. With ``act=False`` (advise mode) the plan is only returned.

    ``cap``: the power cap to plan under (the daemon decides it: an RMS knows none); None
    keeps the snapshot's (the simulated cluster's own cap, in replays). ``journal`` and
    ``starts`` (our last start of each job) persist across a replay's cycles (fresh ones
    when not given). ``observe`` lays what the cycle knows beyond the RMS over the snapshot
    (the node power book: :meth:`~wattsched.daemon.power_cycle.PowerControl.observe`). A
    failing start is logged and reported; the cycle goes on with the next.
    """
    snap = connector.snapshot()
    if observe is not None:
        snap = observe(snap)
    if cap is not None:
        snap = dataclasses.replace(snap, cap=cap)
    t0 = timer()
    plan = dispatcher.plan(snap)
    seconds = timer() - t0
    if not act:
        return CycleResult(snap, plan, seconds)
    done = start_planned(
        connector,
        journal if journal is not None else MemoryJournal(),
        snap,
        plan,
        starts if starts is not None else {},
        max_start_attempts=max_start_attempts,
    )
    return CycleResult(snap, plan, seconds, done.started, done.errors)
