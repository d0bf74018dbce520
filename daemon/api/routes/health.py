"""``GET /health`` (liveness), ``GET /ready`` (readiness) and ``GET /status``."""

from __future__ import annotations

from fastapi import APIRouter, HTTPException, Request, Response, status
from sqlalchemy import func, select, text
from sqlalchemy.exc import SQLAlchemyError

from wattsched.daemon.api.deps import ServiceDep, SessionDep
from wattsched.daemon.api.schemas import Health, Ready, Status
from wattsched.daemon.store_models import CycleRow

router = APIRouter(tags=["status"])


@router.get("/health", response_model=Health)
def health(request: Request, session: SessionDep) -> Health:
    """The process answers and its database too (503 otherwise)."""
    try:
        session.execute(text("SELECT 1"))
    except SQLAlchemyError as exc:
        raise HTTPException(status.HTTP_503_SERVICE_UNAVAILABLE, "database unreachable") from exc
    return Health(status="ok", schema_revision=request.app.state.schema_revision)


@router.get(
    "/ready",
    response_model=Ready,
    responses={503: {"model": Ready, "description": "not ready: the reason"}},
)
def ready(service: ServiceDep, response: Response) -> Ready:
    """Ready when a cycle succeeded within the last 3 periods (monotonic clock), fewer than 3
    cycles in a row failed (on the RMS or the database), and the database file is the one
    opened; 503 with the reason otherwise (for a load balancer or an alert)."""
    reason = service.readiness()
    if reason:
        response.status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    return Ready(ready=not reason, reason=reason)


@router.get("/status", response_model=Status)
def get_status(service: ServiceDep, session: SessionDep) -> Status:
    """Mode, last cycle time and duration, power now vs cap, queue, nodes by state, errors."""
    last = service.last
    cycles = session.scalar(select(func.max(CycleRow.id))) or 0  # ids are never reused
    errors = service.counters.copy()["errors"]
    cap = service.cap.at(last.time) if last and last.time is not None else None
    return Status(
        mode=service.mode,
        role="leader" if service.role == "leader" else "standby",
        dispatcher=service.dispatcher.name,
        cycle_seconds=service.cycle_seconds,
        cycles=cycles,
        last_cycle_at=last.started_at if last else None,
        last_cycle_duration_s=last.duration_s if last else None,
        last_cycle_ok=last.ok if last else None,
        last_error=last.error if last else None,
        cluster_time=last.time if last else None,
        power_w=last.power_w if last else None,
        cap_w=cap if cap is not None and cap != float("inf") else None,
        queue_length=last.jobs_by_state.get("queued", 0) if last else 0,
        running=last.jobs_by_state.get("running", 0) if last else 0,
        planned=last.planned if last else 0,
        planned_mean_wait_s=last.planned_mean_wait_s if last else None,
        nodes_by_state=dict(last.nodes_by_state) if last else {},
        errors=errors,
        sources=service.sources,
        power_decision=service.last_power_decision,
        celsius=last.celsius if last else None,
        pue=last.pue if last else None,
        cooling_w=last.cooling_w if last else None,
        profit_per_h=last.profit_per_h if last else None,
    )
