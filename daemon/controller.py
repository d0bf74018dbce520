"""The control cycle: observe, plan, start what starts now.

One function serves both clocks: the daemon runs it every period on the wall clock, the
replay at every event of the simulated cluster's virtual clock. It reads no clock itself
(the planning time is measured with an injected timer) and never sleeps.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from wattsched.connectors.base import Connector, ConnectorError
from wattsched.scheduler.dispatcher import Dispatcher
from wattsched.scheduler.model import Assignment, Plan, Snapshot

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
) -> CycleResult:
    """One control cycle. With ``act=False`` (advise mode) the plan is only returned.

    A failing start is logged and reported in the result; the cycle goes on with the next.
    """
    snap = connector.snapshot()
    t0 = timer()
    plan = dispatcher.plan(snap)
    result = CycleResult(snap, plan, timer() - t0)
    if not act:
        return result
    for a in plan.starts_now():
        try:
            connector.start(a.job_id, a.nodes)
        except ConnectorError as exc:
            log.warning("start of job %s on %s failed: %s", a.job_id, ",".join(a.nodes), exc)
            result.errors.append((a, exc))
        else:
            result.started.append(a)
    return result
