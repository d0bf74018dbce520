"""``GET /jobs`` and ``GET /jobs/{id}``."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, HTTPException, Query, Response, status
from pydantic import TypeAdapter
from sqlalchemy import func, select

from wattsched.daemon.api.deps import SessionDep
from wattsched.daemon.api.schemas import (
    ActionOut,
    ErrorOut,
    JobDetail,
    JobOut,
    JobPage,
    JobState,
    short,
)
from wattsched.daemon.store_models import ActionRow, JobRow

router = APIRouter(tags=["jobs"])
_PAGE: TypeAdapter[JobPage] = TypeAdapter(JobPage)


@router.get("/jobs", response_model=JobPage)
def list_jobs(
    session: SessionDep,
    state: Annotated[JobState | None, Query(description="only jobs in this state")] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    offset: Annotated[int, Query(ge=0, le=1_000_000_000)] = 0,
) -> Response:
    """Jobs by submit time (then id), optionally in one state, a page at a time."""
    # Plain rows (no ORM objects), validated once, serialized once: this is the hot endpoint.
    query = select(*JobRow.__table__.columns)
    count = select(func.count()).select_from(JobRow)
    if state is not None:
        query = query.where(JobRow.state == state)
        count = count.where(JobRow.state == state)
    rows = session.execute(query.order_by(JobRow.submit, JobRow.id).limit(limit).offset(offset))
    page = {
        "total": session.scalar(count) or 0,
        "limit": limit,
        "offset": offset,
        "items": rows.mappings().all(),
    }
    return Response(_PAGE.dump_json(_PAGE.validate_python(page)), media_type="application/json")


@router.get(
    "/jobs/{job_id}",
    response_model=JobDetail,
    responses={404: {"model": ErrorOut, "description": "no such job"}},
)
def get_job(job_id: str, session: SessionDep) -> JobDetail:
    """One job with the actions taken on it (404 when unknown)."""
    row = session.get(JobRow, job_id)
    if row is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no job {short(job_id)!r}")
    actions = session.scalars(
        select(ActionRow).where(ActionRow.job_id == job_id).order_by(ActionRow.id)
    )
    return JobDetail(
        **JobOut.model_validate(row).model_dump(),
        actions=[ActionOut.model_validate(a) for a in actions],
    )
