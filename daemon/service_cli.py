"""``wattsched serve | migrate | status``: the daemon's commands."""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import typer
import uvicorn

ConfigOpt = Annotated[
    Path,
    typer.Option("--config", "-c", exists=True, dir_okay=False, help="The daemon's TOML file."),
]


def register(app: typer.Typer) -> None:
    """Add the daemon's commands to the main app."""
    app.command("serve")(serve)
    app.command("migrate")(migrate)
    app.command("status")(status)


def _fail(msg: str, code: int = 2) -> typer.Exit:
    typer.secho(msg, err=True, fg=typer.colors.RED)
    return typer.Exit(code)


def serve(
    config: ConfigOpt,
    log_level: Annotated[str, typer.Option(help="debug, info, warning, error")] = "info",
) -> None:
    """Run the daemon: the control loop, the REST API and /metrics (SIGTERM stops it)."""
    import uvicorn

    from wattsched.connectors.base import ConnectorError
    from wattsched.daemon.api.app import create_app
    from wattsched.daemon.config import ConfigError, load_config
    from wattsched.daemon.loop import build_service
    from wattsched.daemon.store import SchemaError

    logging.basicConfig(
        level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    # Quiet the libraries' per-run and per-request lines; our own code logs what matters.
    logging.getLogger("apscheduler").setLevel(logging.ERROR)
    logging.getLogger("alembic").setLevel(logging.WARNING)
    log = logging.getLogger("wattsched.serve")
    try:
        settings = load_config(config)
        service = build_service(settings)
        app = create_app(settings, service)
    except (ConfigError, SchemaError, ConnectorError, ValueError, OSError) as exc:
        # Bad settings, an old schema, an unreachable RMS, an unreadable trace: say which.
        raise _fail(f"cannot start: {exc}") from None
    try:
        service.reconcile()
    except ConnectorError as exc:
        # Pending actions stay pending; the next start-up reconciles them.
        log.error("could not reconcile pending actions with the RMS: %s", exc)
    log.info(
        "wattsched %s mode, %s dispatcher, cycle %gs, API on http://%s",
        settings.mode,
        settings.dispatcher,
        settings.cycle_seconds,
        settings.api.bind,
    )
    server = _Server(
        uvicorn.Config(
            app,
            host=settings.api.host,
            port=settings.api.port,
            log_level=log_level.lower(),
            access_log=False,
        )
    )
    service.start()
    try:
        server.run()  # returns on SIGTERM / SIGINT (uvicorn's handlers)
    finally:
        log.info("stopping: waiting for the running cycle")
        service.stop()
    if not server.started:
        raise _fail(f"could not serve on {settings.api.bind}", 1)


class _Server(uvicorn.Server):
    """uvicorn's server, but SIGTERM/SIGINT only ask it to stop (uvicorn re-raises the signal
    after shutting down, which would kill the process before the loop is stopped cleanly)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        old = {sig: signal.signal(sig, self.handle_exit) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield
        finally:
            for sig, handler in old.items():
                signal.signal(sig, handler)


def migrate(config: ConfigOpt) -> None:
    """Apply the database migrations (create the schema, or upgrade it)."""
    from wattsched.daemon.config import ConfigError, load_config
    from wattsched.daemon.store import current_revision, make_engine
    from wattsched.daemon.store import migrate as run_migrations

    try:
        settings = load_config(config)
    except ConfigError as exc:
        raise _fail(str(exc)) from None
    engine = make_engine(settings.database_url)
    before = current_revision(engine)
    after = run_migrations(engine)
    url = engine.url.render_as_string(hide_password=True)
    typer.echo(f"{url}: schema {before or '<empty>'} -> {after}")
    engine.dispose()


def status(
    url: Annotated[str, typer.Option(help="The daemon's API.")] = "http://127.0.0.1:8080",
    timeout: Annotated[float, typer.Option(help="Seconds to wait for the answer.")] = 5.0,
) -> None:
    """Ask a running daemon for its status and print it as a table."""
    import httpx
    from rich.console import Console
    from rich.table import Table

    try:
        resp = httpx.get(url.rstrip("/") + "/status", timeout=timeout)
        resp.raise_for_status()
    except httpx.HTTPError as exc:
        raise _fail(f"cannot get {url}/status: {exc}", 1) from None
    data = resp.json()
    table = Table(title=f"wattsched at {url}", show_header=False)
    table.add_column("key", style="bold")
    table.add_column("value")
    for key, value in data.items():
        if isinstance(value, dict):
            value = ", ".join(f"{k}={v}" for k, v in value.items()) or "-"
        elif key.endswith("_at") and isinstance(value, int | float):
            value = datetime.fromtimestamp(value, UTC).isoformat(timespec="seconds")
        elif isinstance(value, float):
            value = f"{value:,.3f}"
        table.add_row(key, "-" if value is None else str(value))
    Console().print(table)
