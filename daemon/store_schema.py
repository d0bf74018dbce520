"""The store's database: the engine (SQLite with WAL, created owner-only; PostgreSQL with a
pool) and its schema (Alembic migrations, the check that refuses an old schema)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url


class StoreError(Exception):
    """Base of the store's errors."""


class SchemaError(StoreError):
    """The database schema is not the one this version of wattsched needs."""

    def __init__(self, url: str, current: str | None, head: str) -> None:
        self.url = url
        self.current = current
        self.head = head
        super().__init__(
            f"database {url} is at schema revision {current or '<empty>'}, this wattsched needs "
            f"{head}; run `wattsched migrate -c CONFIG` first"
        )


def make_engine(url: str) -> Engine:
    """An engine for ``url``; for SQLite the file's folder is created and WAL is switched on."""
    u = make_url(url)
    if u.get_backend_name() == "sqlite":
        if u.database and u.database != ":memory:":
            path = Path(u.database)
            path.parent.mkdir(parents=True, exist_ok=True)
            # The journal and the plan are the operators' business: owner-only from birth
            # (SQLite gives its -wal and -shm files the database file's mode).
            os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})

        @event.listens_for(engine, "connect")
        def _pragmas(dbapi_conn: Any, _record: Any) -> None:
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.close()

        return engine
    return create_engine(url, pool_pre_ping=True, pool_size=10, max_overflow=10)


def _alembic_config() -> Config:
    import wattsched.migrations as migrations_pkg

    cfg = Config()
    cfg.set_main_option("script_location", str(Path(migrations_pkg.__file__).parent))
    return cfg


def head_revision() -> str:
    """The schema revision this version of wattsched needs."""
    head = ScriptDirectory.from_config(_alembic_config()).get_current_head()
    if head is None:  # pragma: no cover - the package ships its versions
        raise StoreError("no migration versions found")
    return head


def current_revision(engine: Engine) -> str | None:
    """The revision the database is at (None: an empty database)."""
    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def migrate(engine: Engine, revision: str = "head") -> str | None:
    """Apply the migrations up to ``revision``; returns the revision the database is at."""
    cfg = _alembic_config()
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, revision)
    return current_revision(engine)


def check_schema(engine: Engine) -> str:
    """Raise :class:`SchemaError` unless the database is at the head revision."""
    head = head_revision()
    current = current_revision(engine)
    if current != head:
        raise SchemaError(engine.url.render_as_string(hide_password=True), current, head)
    return head
