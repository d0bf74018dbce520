"""``GET /plan``, ``GET /actions`` and ``GET /power``."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

from fastapi import APIRouter, HTTPException, Query, status
from sqlalchemy import func, select

from wattsched.daemon.api.deps import SessionDep
from wattsched.daemon.api.schemas import ActionOut, PlanEntry, PlanOut, PowerSampleOut
from wattsched.daemon.store_models import ActionRow, CycleRow, PlanEntryRow, PowerSampleRow

router = APIRouter(tags=["plan"])


@router.get("/plan", response_model=PlanOut)
def get_plan(session: SessionDep) -> PlanOut:
    """The current plan: each job's planned start, latest end and nodes, by start time.

    The entries and their cycle are read in one statement: the daemon replaces the entries
    with each cycle's in one transaction, so two reads could straddle a cycle and pair one
    cycle with the next one's (deleted) entries, an empty plan."""
    for _ in range(3):
        rows = session.execute(
            select(PlanEntryRow, CycleRow)
            .join(CycleRow, CycleRow.id == PlanEntryRow.cycle_id)
            .order_by(PlanEntryRow.start, PlanEntryRow.job_id)
        ).all()
        if rows:
            return _plan_out(rows[0][1], [r[0] for r in rows])
        cycle = session.scalars(
            select(CycleRow).where(CycleRow.ok.is_(True)).order_by(CycleRow.id.desc()).limit(1)
        ).first()
        if cycle is None or cycle.planned == 0:
            return _plan_out(cycle, [])
        # A cycle with entries was committed between the two reads: read them again.
    return _plan_out(cycle, [])


def _plan_out(cycle: CycleRow | None, rows: list[PlanEntryRow]) -> PlanOut:
    if cycle is None:
        return PlanOut(
            cycle_id=None,
            time=None,
            solver_status=None,
            objective=None,
            bound=None,
            solver_seconds=None,
            planned_mean_wait_s=None,
            entries=[],
        )
    return PlanOut(
        cycle_id=cycle.id,
        time=cycle.time,
        solver_status=cycle.solver_status,
        objective=cycle.objective,
        bound=cycle.bound,
        solver_seconds=cycle.solver_seconds,
        planned_mean_wait_s=cycle.planned_mean_wait_s,
        entries=[
            PlanEntry(job_id=r.job_id, start=r.start, end=r.end, nodes=r.nodes.split(","))
            for r in rows
        ],
    )


@router.get("/actions", response_model=list[ActionOut])
def list_actions(
    session: SessionDep,
    since: Annotated[
        datetime | None, Query(description="only actions created at or after (ISO 8601 or epoch)")
    ] = None,
    limit: Annotated[int, Query(ge=1, le=10000)] = 1000,
    newest_first: Annotated[
        bool, Query(description="the newest actions first (the last `limit` ones)")
    ] = False,
) -> list[ActionOut]:
    """Journaled actions, oldest first (newest first with ``newest_first``)."""
    query = select(ActionRow)
    if since is not None:
        query = query.where(ActionRow.created_at >= epoch_seconds(since))
    order = ActionRow.id.desc() if newest_first else ActionRow.id
    rows = session.scalars(query.order_by(order).limit(limit))
    return [ActionOut.model_validate(r) for r in rows]


def epoch_seconds(when: datetime) -> float:
    """``when`` as epoch seconds; a date-time without a zone is UTC; one outside what the
    platform's clock can represent is a 422 naming the parameter."""
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    try:
        return when.timestamp()
    except (ValueError, OverflowError, OSError):
        raise HTTPException(
            status.HTTP_422_UNPROCESSABLE_ENTITY,
            [{"loc": ["query", "since"], "msg": "date-time out of range", "type": "value_error"}],
        ) from None


@router.get("/power", response_model=list[PowerSampleOut])
def list_power(
    session: SessionDep,
    window: Annotated[
        int, Query(ge=1, le=100 * 365 * 86400, description="seconds of cluster time back")
    ] = 3600,
    limit: Annotated[int, Query(ge=1, le=100000)] = 10000,
) -> list[PowerSampleOut]:
    """Power samples over the last ``window`` seconds of cluster time, oldest first."""
    last = session.scalar(select(func.max(PowerSampleRow.time)))
    if last is None:
        return []
    rows = session.scalars(
        select(PowerSampleRow)
        .where(PowerSampleRow.time >= last - window)
        .order_by(PowerSampleRow.time, PowerSampleRow.id)
        .limit(limit)
    )
    return [PowerSampleOut.model_validate(r) for r in rows]
