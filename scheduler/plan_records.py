"""The plan objects a dispatcher makes at every cycle (a :class:`~wattsched.scheduler.plan.
Plan`, an :class:`~wattsched.scheduler.plan.Assignment` per job planned), made by setting
their slots directly rather than through the frozen dataclasses' generated ``__init__`` (one
``object.__setattr__`` call per field).

Only for plans our own dispatchers make from a snapshot's validated jobs: neither class has
checks to pass over, and the objects are the very ones the constructors make
(``tests/scheduler/test_plan_records.py`` compares every field), as in
:mod:`wattsched.connectors.simulated_records`.
"""

from __future__ import annotations

from wattsched.scheduler.plan import Assignment, Plan, SolverStats
from wattsched.scheduler.slots import new as _new
from wattsched.scheduler.slots import slot_setters

_a_job, _a_start, _a_nodes = slot_setters(Assignment)
_p_time, _p_assignments, _p_stats, _p_wake = slot_setters(Plan)


def assignment(job_id: str, start: int, nodes: tuple[str, ...]) -> Assignment:
    """``Assignment(job_id, start, nodes)``."""
    a = _new(Assignment)
    _a_job(a, job_id)
    _a_start(a, start)
    _a_nodes(a, nodes)
    return a


def plan(time: int, assignments: tuple[Assignment, ...], stats: SolverStats) -> Plan:
    """``Plan(time, assignments, stats)``, no wake-up."""
    p = _new(Plan)
    _p_time(p, time)
    _p_assignments(p, assignments)
    _p_stats(p, stats)
    _p_wake(p, None)
    return p
