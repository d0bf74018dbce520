"""``wattsched serve | migrate``: the daemon's commands (``status`` is a client command)."""

from __future__ import annotations

import contextlib
import logging
import signal
import socket
import threading
from collections.abc import Iterator
from typing import Annotated, Any

import typer
import uvicorn
from sqlalchemy.exc import DatabaseError

from wattsched.daemon.cli_common import ConfigOpt, LogLevel, LogLevelOpt, config_or_exit, fail
from wattsched.daemon.log_setup import LOG_FORMAT, log_to_file


def register(app: typer.Typer) -> None:
    """Add the daemon's commands to the main app."""
    app.command("serve")(serve)
    app.command("migrate")(migrate)


_fail = fail


def serve(
    config: ConfigOpt = None,
    log_level: LogLevelOpt = LogLevel.INFO,
    accept_empty_store: Annotated[
        bool,
        typer.Option(
            help="Start on an empty store although the RMS runs jobs (the first start beside a "
            "busy cluster; never after losing the database: restore it instead)."
        ),
    ] = False,
    standby: Annotated[
        bool,
        typer.Option(
            help="High availability: when another daemon leads on this store, serve the API "
            "read-only and take over when it dies (instead of refusing to start)."
        ),
    ] = False,
) -> None:
    """Run the daemon: the control loop, the REST API and /metrics (SIGTERM stops it)."""
    import uvicorn

    from wattsched.connectors.base import ConnectorError
    from wattsched.daemon.api.app import create_app
    from wattsched.daemon.config import ConfigError, load_config
    from wattsched.daemon.instance_lock import (
        InstanceLock,
        InstanceLockHeld,
        acquire_instance_lock,
    )
    from wattsched.daemon.leader import Standby, take_over
    from wattsched.daemon.store_schema import SchemaError
    from wattsched.daemon.wiring import build_service

    config = config_or_exit(config)
    logging.basicConfig(level=log_level.value.upper(), format=LOG_FORMAT)
    # Quiet the libraries' per-run and per-request lines; our own code logs what matters.
    logging.getLogger("alembic").setLevel(logging.WARNING)
    log = logging.getLogger("wattsched.serve")
    try:
        settings = load_config(config)
        if settings.log_file is not None:
            log_to_file(settings.log_file)
        service = build_service(settings)
        app = create_app(settings, service)
    except (ConfigError, SchemaError, ConnectorError, ValueError, OSError) as exc:
        # Bad settings, an old schema, an unreachable RMS, an unreadable trace: say which.
        raise _fail(f"cannot start: {exc}") from None
    except DatabaseError as exc:
        raise _fail(f"cannot start: {database_problem(settings.database_url, exc)}") from None
    # One acting daemon per store, and the port ours, before anything is done (a second
    # daemon must not run even one cycle).
    lock: InstanceLock | None
    try:
        lock = acquire_instance_lock(service.store.engine)
    except InstanceLockHeld as exc:
        if not standby:
            raise _fail(f"cannot start: {exc}") from None
        lock = None
        service.role = "standby"
        log.warning("standby: %s; serving the API read-only until it goes", exc)
    try:
        sock = bind_socket(settings.api.host, settings.api.port)
    except OSError as exc:
        if lock is not None:
            lock.release()
        raise _fail(f"cannot start: cannot listen on {settings.api.bind}: {exc.strerror}") from None
    if not accept_empty_store and lock is not None:
        problem = empty_store_problem(service)
        if problem:
            lock.release()
            sock.close()
            raise _fail(f"cannot start: {problem}")
    if lock is not None:
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
            log_level=log_level.value,
            access_log=False,
            # With a log file, uvicorn's records go to it through the root logger too.
            log_config=None if settings.log_file is not None else uvicorn.config.LOGGING_CONFIG,
        )
    )
    held: list[InstanceLock] = [lock] if lock is not None else []
    waiting: Standby | None = None
    if lock is not None:
        service.start()
    else:

        def lead(new_lock: InstanceLock) -> None:
            held.append(new_lock)
            take_over(service)
            service.start()

        waiting = Standby(service.store.engine, lead, settings.cycle_seconds)
        waiting.start()
    try:
        server.run(sockets=[sock])  # returns on SIGTERM / SIGINT (uvicorn's handlers)
    finally:
        log.info("stopping: waiting for the running cycle")
        if waiting is not None:
            waiting.stop()
        service.stop()
        for each in held:
            each.release()
    if not server.started:
        raise _fail(f"could not serve on {settings.api.bind}", 1)


def empty_store_problem(service: Any) -> str:
    """Why starting on this store is unsafe ("" when it is not): it is empty (no cycle, no
    action: a new database, or one lost and re-created by ``migrate``) while the RMS runs
    jobs, which wattsched may have started: without the journal it could start them again."""
    if not service.store.is_empty():
        return ""
    try:
        running = service.connector.snapshot().running
    except Exception:  # the RMS is unreachable: the first cycle will say so
        return ""
    if not running:
        return ""
    ids = ", ".join(sorted(rj.job.id for rj in running)[:5])
    return (
        f"the store is empty but the RMS runs {len(running)} job(s) ({ids}...). If the "
        "database was lost, restore it from a backup (the journal is what keeps a job from "
        "being started twice); if this is wattsched's first start beside a busy cluster, "
        "run `wattsched serve --accept-empty-store` once"
    )


def database_problem(url: str, exc: Exception) -> str:
    """One line for a database that does not open as one (a corrupt or foreign file)."""
    from sqlalchemy.engine import make_url

    shown = make_url(url).render_as_string(hide_password=True)
    cause = str(getattr(exc, "orig", exc)).strip()
    return (
        f"the database {shown} cannot be read ({cause}): restore it from a backup, or move it "
        "away and run `wattsched migrate` to create an empty one (the journal, the never-twice "
        "history, would be lost)"
    )


def bind_socket(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (IPv4 or IPv6), bound now; OSError if taken."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


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


def migrate(config: ConfigOpt = None) -> None:
    """Apply the database migrations (create the schema, or upgrade it)."""
    config = config_or_exit(config)
    from wattsched.daemon.config import ConfigError, load_config
    from wattsched.daemon.store_schema import current_revision, make_engine
    from wattsched.daemon.store_schema import migrate as run_migrations

    try:
        settings = load_config(config)
    except ConfigError as exc:
        raise _fail(str(exc)) from None
    engine = make_engine(settings.database_url)
    try:
        before = current_revision(engine)
        after = run_migrations(engine)
    except DatabaseError as exc:
        raise _fail(f"cannot migrate: {database_problem(settings.database_url, exc)}") from None
    url = engine.url.render_as_string(hide_password=True)
    typer.echo(f"{url}: schema {before or '<empty>'} -> {after}")
    engine.dispose()
