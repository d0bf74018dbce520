"""The FastAPI app factory: routes, the metrics endpoint, error handlers."""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from sqlalchemy.exc import SQLAlchemyError

from wattsched.daemon.api.guard import RequestGuard, TokenSource
from wattsched.daemon.api.routes import control, health, jobs, nodes, plan
from wattsched.daemon.api.routes.ui import mount_ui
from wattsched.daemon.config import Settings
from wattsched.daemon.loop import Service
from wattsched.daemon.metrics import make_registry
from wattsched.daemon.store_schema import current_revision

log = logging.getLogger(__name__)


def create_app(settings: Settings, service: Service) -> FastAPI:
    """The REST API and ``/metrics`` of ``service``.

    The bearer token is read from ``api.token_file`` now (a placeholder or empty token is
    refused with :class:`~wattsched.daemon.config.ConfigError`); without a token file every
    mutation is refused.
    """
    app = FastAPI(
        title="wattsched",
        version="0.1.0",
        description="Power-capped HPC job dispatcher: status, plan, jobs, nodes, actions, power.",
    )
    app.state.service = service
    tokens = TokenSource(settings.api.token_file, settings.read_token())
    app.state.tokens = tokens
    app.add_middleware(RequestGuard, tokens=tokens)
    # The revision checked at start (serve refuses any other); /health reports it.
    app.state.schema_revision = current_revision(service.store.engine) or ""
    registry = make_registry(service)
    for module in (health, nodes, jobs, plan, control):
        app.include_router(module.router)
    mount_ui(app)  # GET /ui: the status page (static files, read-only without the token)

    @app.get("/metrics", include_in_schema=False)
    def metrics() -> Response:
        return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)

    @app.exception_handler(RequestValidationError)
    async def _bad_input(request: Request, exc: RequestValidationError) -> JSONResponse:
        # The offending input is named by its location, not echoed (it may not even be JSON:
        # a NaN or Infinity would make the error response itself fail).
        detail = [
            {"loc": list(e.get("loc", ())), "msg": str(e.get("msg", "")), "type": e.get("type")}
            for e in exc.errors()
        ]
        return JSONResponse({"detail": detail}, status_code=422)

    @app.exception_handler(SQLAlchemyError)
    async def _db_error(request: Request, exc: SQLAlchemyError) -> JSONResponse:
        log.error("database error on %s: %s", request.url.path, exc)
        return JSONResponse({"detail": "database unavailable"}, status_code=503)

    return app
