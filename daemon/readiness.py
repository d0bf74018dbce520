"""Readiness: whether the daemon runs its cycle (``GET /ready``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from wattsched.daemon.loop import Service


def readiness_problem(service: Service, stale_periods: float = 3.0, max_failures: int = 3) -> str:
    """Why the daemon is not ready ("" when it is): no successful cycle within
    ``stale_periods`` periods (on the monotonic clock), ``max_failures`` cycles failed in
    a row (the RMS or the database), or the store's file replaced or deleted."""
    if service.role != "leader":
        return "standby: another daemon leads; this one takes over when it dies"
    problem = service.store.file_problem()
    if problem:
        return problem
    if service.failures_in_row >= max_failures:
        error = service.last.error if service.last else ""
        return f"the last {service.failures_in_row} cycles failed: {error}"
    if service.last_ok_mono is None:
        return "no successful cycle yet"
    age = service.monotonic() - service.last_ok_mono
    if age > stale_periods * service.cycle_seconds:
        return f"the last successful cycle is {age:.0f} s old"
    return ""
