"""One acting daemon per store: an exclusive lock taken before the first cycle.

Two ``wattsched serve`` on one database would both journal and carry out the same starts.
:func:`acquire_instance_lock` takes, for the process's lifetime:

- SQLite: an ``flock`` on ``<database>.lock`` next to the file (mode 0600, with the holder's
  pid and host written in it, for the message the second daemon prints);
- PostgreSQL: a session advisory lock (``pg_try_advisory_lock``) on a connection kept open,
  keyed on the database name; the holder is found in ``pg_locks`` / ``pg_stat_activity``.

Both are released by the kernel or the server when the process dies (even by kill -9). The
same interface is the one the leader election of two daemons (high availability) will use.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import socket
from pathlib import Path
from typing import Protocol

from sqlalchemy import Engine, text
from sqlalchemy.engine import Connection


class InstanceLockHeld(RuntimeError):
    """Another daemon holds the store; the message says which, and how to proceed."""


class InstanceLock(Protocol):
    """A held lock; :meth:`release` gives it back (also done by process exit)."""

    def release(self) -> None:
        """Give the lock back."""


class _FileLock:
    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self.fd = fd

    def release(self) -> None:
        with contextlib.suppress(OSError):
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)


class _AdvisoryLock:
    def __init__(self, conn: Connection, key: int) -> None:
        self.conn = conn
        self.key = key

    def release(self) -> None:
        with contextlib.suppress(Exception):
            self.conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": self.key})
            self.conn.close()


def lock_key(name: str) -> int:
    """A stable signed 64-bit advisory-lock key for a database name."""
    digest = hashlib.sha256(f"wattsched:{name}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def acquire_instance_lock(engine: Engine) -> InstanceLock:
    """Take the store's exclusive lock or raise :class:`InstanceLockHeld` at once."""
    url = engine.url
    if url.get_backend_name() == "sqlite":
        if not url.database or url.database == ":memory:":
            return _FileLock(Path("/dev/null"), os.open(os.devnull, os.O_RDONLY))
        path = Path(url.database).resolve().with_name(Path(url.database).name + ".lock")
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            who = path.read_text(errors="replace").strip() or "unknown"
            os.close(fd)
            raise InstanceLockHeld(
                f"another wattsched ({who}) already runs on {url.database} (lock {path}): "
                "stop it first; two daemons on one store would both start jobs"
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, f"pid {os.getpid()} on {socket.gethostname()}\n".encode())
        return _FileLock(path, fd)
    key = lock_key(url.database or "")
    conn = engine.connect()
    got = conn.execute(text("SELECT pg_try_advisory_lock(:k)"), {"k": key}).scalar()
    conn.commit()
    if not got:
        holder = conn.execute(
            text(
                "SELECT a.pid, a.client_addr, a.application_name FROM pg_locks l "
                "JOIN pg_stat_activity a ON a.pid = l.pid WHERE l.locktype = 'advisory' "
                "AND l.granted AND l.objsubid = 1 AND l.classid::bigint = :c "
                "AND l.objid::bigint = :o"
            ),
            {"c": (key >> 32) & 0xFFFFFFFF, "o": key & 0xFFFFFFFF},
        ).first()
        conn.close()
        found = f"server pid {holder[0]} from {holder[1] or 'local'}" if holder else "another"
        raise InstanceLockHeld(
            f"another wattsched ({found}) already holds database {url.database}: stop it "
            "first; two daemons on one store would both start jobs"
        )
    return _AdvisoryLock(conn, key)
