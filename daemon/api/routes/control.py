"""Mutations (bearer token): ``PUT /config/power-cap``, ``PUT /config/mode``, ``POST /cycle``."""

from __future__ import annotations

import math

from fastapi import APIRouter, Request
from starlette.concurrency import run_in_threadpool

from wattsched.daemon.api.deps import Authorized, ServiceDep
from wattsched.daemon.api.schemas import MUTATION_ERRORS, ConfigOut, CycleOut, ModeIn, PowerCapIn

router = APIRouter(
    tags=["control"],
    dependencies=[Authorized],
    responses=MUTATION_ERRORS,
)


def _config(service: ServiceDep) -> ConfigOut:
    cap = service.cap.at(service.last.time if service.last and service.last.time else 0)
    return ConfigOut(
        mode=service.mode, cap_w=cap if math.isfinite(cap) else None, sources=service.sources
    )


def _by(request: Request) -> str:
    """Who changes a setting: the token, named by its file (there is one token)."""
    path = request.app.state.tokens.path
    return f"token {path.name}" if path is not None else "token"


@router.put("/config/power-cap", response_model=ConfigOut)
def put_power_cap(body: PowerCapIn, service: ServiceDep, request: Request) -> ConfigOut:
    """Set a constant power cap from the next cycle on (``null``: none). Kept in the store:
    it survives a restart (until ``DELETE /config/overrides``); journaled in ``/actions``."""
    service.set_power_cap(body.watts, by=_by(request))
    return _config(service)


@router.put("/config/mode", response_model=ConfigOut)
def put_mode(body: ModeIn, service: ServiceDep, request: Request) -> ConfigOut:
    """Switch between advise and enforce from the next cycle on (kept as the cap is)."""
    service.set_mode(body.mode, by=_by(request))
    return _config(service)


@router.delete("/config/overrides", response_model=ConfigOut)
def delete_overrides(service: ServiceDep, request: Request) -> ConfigOut:
    """Forget the settings changed over the API: back to the file's and environment's."""
    service.reset_settings(by=_by(request))
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
