"""Mutations (bearer token): ``PUT /config/power-cap``, ``PUT /config/mode``, ``POST /cycle``."""

from __future__ import annotations

import math

from fastapi import APIRouter
from starlette.concurrency import run_in_threadpool

from wattsched.daemon.api.deps import Authorized, ServiceDep
from wattsched.daemon.api.schemas import ConfigOut, CycleOut, ErrorOut, ModeIn, PowerCapIn

router = APIRouter(
    tags=["control"],
    dependencies=[Authorized],
    responses={
        400: {"model": ErrorOut, "description": "a body that is not JSON"},
        401: {"model": ErrorOut, "description": "no bearer token"},
        403: {"model": ErrorOut, "description": "wrong token, or mutations disabled"},
        413: {"model": ErrorOut, "description": "body too large"},
    },
)


def _config(service: ServiceDep) -> ConfigOut:
    cap = service.cap.at(service.last.time if service.last and service.last.time else 0)
    return ConfigOut(mode=service.mode, cap_w=cap if math.isfinite(cap) else None)


@router.put("/config/power-cap", response_model=ConfigOut)
def put_power_cap(body: PowerCapIn, service: ServiceDep) -> ConfigOut:
    """Set a constant power cap from the next cycle on (``null``: none)."""
    service.set_power_cap(body.watts)
    return _config(service)


@router.put("/config/mode", response_model=ConfigOut)
def put_mode(body: ModeIn, service: ServiceDep) -> ConfigOut:
    """Switch between advise and enforce from the next cycle on."""
    service.set_mode(body.mode)
    return _config(service)


@router.post("/cycle", response_model=CycleOut)
async def post_cycle(service: ServiceDep) -> CycleOut:
    """Run a cycle now and return what it did."""
    s = await run_in_threadpool(service.run_now)
    return CycleOut(
        cycle_id=s.cycle_id,
        ok=s.ok,
        error=s.error,
        duration_s=s.duration_s,
        time=s.time,
        planned=s.planned,
        started=s.started,
    )
