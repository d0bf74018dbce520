"""What the API checks before any route runs: the token of a mutation before its body, and
the size of every body.

- :class:`TokenSource` reads ``api.token_file`` and reads it again when the file changes
  (its inode, size or mtime), so a token is rotated without a restart: write the new token
  to a temporary file and ``mv`` it over the old one. A file that others can read is warned
  about; a weak new token is refused (mutations are disabled until a sound one is written).
- :class:`RequestGuard`, a plain ASGI middleware: a body larger than
  :data:`~wattsched.daemon.limits.MAX_BODY_BYTES` is refused with 413 without being read, and
  a request that is not a GET/HEAD/OPTIONS is refused with 401/403 before its body is read
  unless it carries the token. The routes' own token dependency stays (defence in depth).
"""

from __future__ import annotations

import hmac
import json
import logging
import stat
import threading
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any

from wattsched.daemon.config import weak_token
from wattsched.daemon.limits import MAX_BODY_BYTES

log = logging.getLogger(__name__)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


class TokenSource:
    """The current API token of ``path`` (None: no file, or a weak one: mutations disabled)."""

    def __init__(self, path: Path | None, token: str | None) -> None:
        self.path = path
        self._token = token
        self._lock = threading.Lock()
        self._key = self._stat_key()
        if path is not None:
            warn_if_readable(path)
        if token is None:
            log.warning("no api.token_file: mutations (cap, mode, cycle) are disabled")

    def _stat_key(self) -> tuple[int, int, int] | None:
        if self.path is None:
            return None
        try:
            st = self.path.stat()
        except OSError:
            return None
        return (st.st_ino, st.st_size, st.st_mtime_ns)

    def current(self) -> str | None:
        """The token now, read again if the file changed since the last read."""
        if self.path is None:
            return None
        key = self._stat_key()
        if key == self._key:
            return self._token
        with self._lock:
            if key != self._key:
                self._token = self._read()
                self._key = key
        return self._token

    def _read(self) -> str | None:
        assert self.path is not None
        try:
            token = self.path.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            log.error("api.token_file %s unreadable (%s): mutations disabled", self.path, exc)
            return None
        why = weak_token(token)
        if why:
            log.error("api.token_file %s: %s: mutations disabled", self.path, why)
            return None
        warn_if_readable(self.path)
        log.info("api token re-read from %s (rotated)", self.path)
        return token


def warn_if_readable(path: Path) -> None:
    """Log a warning when the token file can be read by its group or by others."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        log.warning(
            "api.token_file %s is readable by others (mode %o): chmod 600 it",
            path, stat.S_IMODE(mode),
        )  # fmt: skip


def token_matches(header: str | None, token: str | None) -> int:
    """200 when ``header`` (an Authorization value) carries ``token``; else 401 or 403."""
    if not header or not header.lower().startswith("bearer "):
        return 401
    if token is None:
        return 403
    given = header[7:].strip()
    return 200 if hmac.compare_digest(given.encode(), token.encode()) else 403


class RequestGuard:
    """The ASGI middleware (see the module docstring)."""

    def __init__(self, app: ASGIApp, tokens: TokenSource, max_body: int = MAX_BODY_BYTES) -> None:
        self.app = app
        self.tokens = tokens
        self.max_body = max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        length = headers.get("content-length")
        if length is not None and (not length.isdigit() or int(length) > self.max_body):
            await _reply(send, 413, f"request body over {self.max_body} bytes")
            return
        if scope["method"] not in SAFE_METHODS:
            code = token_matches(headers.get("authorization"), self.tokens.current())
            if code == 401:
                await _reply(send, 401, "a bearer token is required", bearer=True)
                return
            if code == 403:
                await _reply(send, 403, "invalid token, or mutations are disabled")
                return
        started = False

        async def tracked(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, self._capped(receive), tracked)
        except _TooLarge:
            if not started:
                await _reply(send, 413, f"request body over {self.max_body} bytes")

    def _capped(self, receive: Receive) -> Receive:
        seen = 0

        async def capped() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_body:  # a chunked body with no length: stop reading it
                    raise _TooLarge
            return message

        return capped


class _TooLarge(Exception):
    """A body without a length grew past the limit while being read."""


async def _reply(send: Send, code: int, detail: str, *, bearer: bool = False) -> None:
    body = json.dumps({"detail": detail}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if bearer:
        headers.append((b"www-authenticate", b"Bearer"))
    await send({"type": "http.response.start", "status": code, "headers": headers})
    await send({"type": "http.response.body", "body": body})
