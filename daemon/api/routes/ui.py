"""``GET /ui``: the operators' status page, plain static files shipped in the package
(``GET /`` leads to it).

The page (``daemon/api/static``: ``index.html``, ``ui.js``, ``ui.css``; no build step, no
library) polls the read-only API (``/status``, ``/nodes``, ``/jobs``, ``/plan``, ``/power``,
``/actions``) and draws its charts as inline SVG. Its cap and mode controls call
``PUT /config/power-cap`` and ``PUT /config/mode`` with the bearer token typed into the page
(kept in the page's memory only). A strict Content-Security-Policy allows only the page's own
script and style, so even a bug that put data into markup could not run a script.
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping
from importlib.resources import files
from pathlib import Path
from typing import Any

from fastapi import APIRouter, FastAPI
from fastapi.responses import FileResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles

STATIC_DIR = Path(str(files("wattsched.daemon.api") / "static"))
"""Where the page's files are (package data: installed with the package)."""

SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}

router = APIRouter(tags=["ui"])


@router.get("/ui", response_class=FileResponse, include_in_schema=False)
def ui_page() -> Response:
    """The status page (its script and style under ``/ui/static/``)."""
    return FileResponse(STATIC_DIR / "index.html", media_type="text/html", headers=SECURITY_HEADERS)


@router.get("/", include_in_schema=False)
def root() -> Response:
    """The daemon's address opened in a browser leads to the status page (a relative
    location, so that it holds behind a reverse proxy's path prefix too)."""
    return RedirectResponse("ui", status_code=307)


class _StaticFiles(StaticFiles):
    """Starlette's static files with the page's security headers."""

    def file_response(
        self,
        full_path: str | os.PathLike[str],
        stat_result: os.stat_result,
        scope: MutableMapping[str, Any],
        status_code: int = 200,
    ) -> Response:
        """The file, with the headers of :data:`SECURITY_HEADERS`."""
        response = super().file_response(full_path, stat_result, scope, status_code)
        response.headers.update(SECURITY_HEADERS)
        return response


def mount_ui(app: FastAPI) -> None:
    """Add ``GET /ui`` and its static files (``/ui/static/...``) to ``app``."""
    app.include_router(router)
    app.mount("/ui/static", _StaticFiles(directory=STATIC_DIR), name="ui-static")
