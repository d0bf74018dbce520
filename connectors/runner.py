"""Run resource-manager commands: locally (subprocess) or on a head node over SSH (paramiko).

Commands are argument lists, never shell strings: locally they go straight to ``execve``; over
SSH (where the remote side always has a shell) the list is quoted with :func:`shlex.join`, so a
job or node name can never inject shell syntax. Every call has a timeout, and the environment
is explicit (Slurm needs ``SLURM_CONF``): locally the child gets exactly ``env`` (plus a PATH
if none is given); over SSH the variables are set with ``env K=V ...`` in front of the command.

SSH host keys are checked against a known_hosts file and never added automatically
(:class:`paramiko.RejectPolicy`); an unknown or changed host key is a :class:`HostKeyError`.
"""

from __future__ import annotations

import logging
import os
import shlex
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import paramiko

from wattsched.connectors.base import ConnectorError, RMSCommandError, RMSTimeout

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT_S = 30.0
"""Timeout of a command when the caller gives none: an RMS command that takes longer is stuck."""

DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin"


@dataclass(frozen=True, slots=True)
class CommandResult:
    """What a finished command printed and returned."""

    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str
    seconds: float


class RunnerConnectError(ConnectorError):
    """The runner could not reach the host that runs the commands."""

    def __init__(self, host: str, port: int, reason: str) -> None:
        self.host = host
        self.port = port
        self.reason = reason
        super().__init__(f"cannot connect to {host}:{port}: {reason}")


class HostKeyError(RunnerConnectError):
    """The SSH server's host key is unknown or differs from the one in known_hosts."""


class CommandRunner(Protocol):
    """Runs one command (an argument list) and returns its output."""

    def run(
        self, argv: Sequence[str], *, timeout: float | None = None, check: bool = True
    ) -> CommandResult:
        """Run ``argv``; with ``check`` a non-zero exit raises :class:`RMSCommandError`."""
        ...

    def close(self) -> None:
        """Release connections."""
        ...


def _check_argv(argv: Sequence[str]) -> tuple[str, ...]:
    if isinstance(argv, str) or not argv:
        raise ValueError(f"a command is a non-empty argument list, got {argv!r}")
    for a in argv:
        if not isinstance(a, str):
            raise ValueError(f"command arguments must be strings, got {a!r} in {argv!r}")
        if "\x00" in a:
            raise ValueError(f"NUL byte in command argument {a!r}")
    return tuple(argv)


class LocalRunner:
    """Runs commands on this host with :mod:`subprocess` (no shell)."""

    def __init__(
        self,
        env: Mapping[str, str] | None = None,
        *,
        timeout: float = DEFAULT_TIMEOUT_S,
        cwd: str | os.PathLike[str] | None = None,
    ) -> None:
        self.env = dict(env or {})
        # A child with no PATH would not find the RMS commands; the default is explicit.
        self.env.setdefault("PATH", DEFAULT_PATH)
        self.env.setdefault("LANG", "C.UTF-8")
        self.timeout = timeout
        self.cwd = cwd

    def run(
        self,
        argv: Sequence[str],
        *,
        timeout: float | None = None,
        check: bool = True,
        stdin: bytes | None = None,
    ) -> CommandResult:
        """Run ``argv`` locally; see :class:`CommandRunner` (``stdin``: bytes fed to it)."""
        args = _check_argv(argv)
        limit = self.timeout if timeout is None else timeout
        t0 = time.perf_counter()
        try:
            proc = subprocess.run(
                args,
                env=self.env,
                cwd=self.cwd,
                input=stdin if stdin is not None else b"",
                capture_output=True,
                timeout=limit,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise RMSTimeout(args, limit) from None
        except FileNotFoundError as exc:
            missing = exc.filename or args[0]
            raise RMSCommandError(args, 127, f"command not found: {missing}") from None
        except PermissionError as exc:
            raise RMSCommandError(args, 126, f"cannot execute: {exc}") from None
        result = CommandResult(
            args,
            proc.returncode,
            proc.stdout.decode("utf-8", "replace"),
            proc.stderr.decode("utf-8", "replace"),
            time.perf_counter() - t0,
        )
        if check and result.returncode != 0:
            raise RMSCommandError(args, result.returncode, result.stderr or result.stdout)
        return result

    def close(self) -> None:
        """Nothing to release."""


class SSHRunner:
    """Runs commands on a remote host over one SSH connection (opened on first use).

    ``known_hosts`` is required: the server's key must be in it (no trust on first use).
    Authentication is by the private key in ``key_file`` only (no agent, no password).
    """

    def __init__(
        self,
        host: str,
        *,
        user: str,
        key_file: str | os.PathLike[str],
        known_hosts: str | os.PathLike[str],
        port: int = 22,
        env: Mapping[str, str] | None = None,
        timeout: float = DEFAULT_TIMEOUT_S,
        connect_timeout: float = 10.0,
        max_sessions: int = 8,
    ) -> None:
        self.host = host
        self.port = port
        self.user = user
        self.key_file = Path(key_file)
        self.known_hosts = Path(known_hosts)
        self.env = dict(env or {})
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self._client: paramiko.SSHClient | None = None
        self._lock = threading.Lock()
        # OpenSSH serves at most MaxSessions (default 10) channels on one connection.
        self._sessions = threading.BoundedSemaphore(max_sessions)

    def _connect(self) -> paramiko.SSHClient:
        if self._client is not None:
            transport = self._client.get_transport()
            if transport is not None and transport.is_active():
                return self._client
            self._client.close()
            self._client = None
        client = paramiko.SSHClient()
        try:
            client.load_host_keys(str(self.known_hosts))
        except OSError as exc:
            raise RunnerConnectError(self.host, self.port, f"known_hosts: {exc}") from None
        # Never trust a host key that is not already in known_hosts.
        client.set_missing_host_key_policy(paramiko.RejectPolicy())
        try:
            client.connect(
                self.host,
                port=self.port,
                username=self.user,
                key_filename=str(self.key_file),
                timeout=self.connect_timeout,
                banner_timeout=self.connect_timeout,
                auth_timeout=self.connect_timeout,
                allow_agent=False,
                look_for_keys=False,
            )
        except paramiko.BadHostKeyException as exc:
            client.close()
            raise HostKeyError(
                self.host, self.port, f"host key mismatch ({exc.key.get_name()})"
            ) from None
        except paramiko.SSHException as exc:
            client.close()
            if "not found in known_hosts" in str(exc):
                raise HostKeyError(self.host, self.port, str(exc)) from None
            raise RunnerConnectError(self.host, self.port, str(exc)) from None
        except OSError as exc:
            client.close()
            raise RunnerConnectError(self.host, self.port, str(exc)) from None
        self._client = client
        return client

    def remote_command(self, argv: Sequence[str]) -> str:
        """The quoted command line sent to the server for ``argv``."""
        args = _check_argv(argv)
        prefix = ["env", *(f"{k}={v}" for k, v in sorted(self.env.items()))] if self.env else []
        return shlex.join([*prefix, *args])

    def run(
        self,
        argv: Sequence[str],
        *,
        timeout: float | None = None,
        check: bool = True,
        stdin: bytes | None = None,
    ) -> CommandResult:
        """Run ``argv`` on the remote host; see :class:`CommandRunner`.

        ``stdin``: bytes sent to the command's input, then end of file (a secret goes
        there, never in the command line). Commands from several threads run side by side,
        each on its own channel of the one connection.
        """
        args = _check_argv(argv)
        limit = self.timeout if timeout is None else timeout
        line = self.remote_command(args)
        with self._sessions:
            return self._run(args, line, limit, check, stdin)

    def _run(
        self, args: tuple[str, ...], line: str, limit: float, check: bool, stdin: bytes | None
    ) -> CommandResult:
        t0 = time.perf_counter()
        deadline = time.monotonic() + limit
        with self._lock:
            client = self._connect()
            transport = client.get_transport()
            if transport is None:  # pragma: no cover - _connect guarantees one
                raise RunnerConnectError(self.host, self.port, "no transport")
        try:
            chan = transport.open_session(timeout=limit)
            chan.settimeout(0.1)
            chan.exec_command(line)
            if stdin:
                chan.sendall(stdin)
            chan.shutdown_write()
        except (paramiko.SSHException, OSError) as exc:
            raise RunnerConnectError(self.host, self.port, str(exc)) from None
        out, err = bytearray(), bytearray()
        try:
            while True:
                got = False
                while chan.recv_ready():
                    out += chan.recv(65536)
                    got = True
                while chan.recv_stderr_ready():
                    err += chan.recv_stderr(65536)
                    got = True
                # Done when the remote side closed its output (EOF) and exited, and
                # every byte it sent has been read: the exit status alone can come while
                # output is still in flight (seen: a 4 kB cut of `sinfo --json`).
                if (
                    chan.exit_status_ready()
                    and chan.eof_received
                    and not chan.recv_ready()
                    and not chan.recv_stderr_ready()
                ):
                    break
                if time.monotonic() > deadline:
                    raise RMSTimeout(args, limit)
                if not got:
                    time.sleep(0.005)
            code = chan.recv_exit_status()
        finally:
            chan.close()
        result = CommandResult(
            args,
            code,
            out.decode("utf-8", "replace"),
            err.decode("utf-8", "replace"),
            time.perf_counter() - t0,
        )
        if check and code != 0:
            raise RMSCommandError(args, code, result.stderr or result.stdout)
        return result

    def close(self) -> None:
        """Close the SSH connection."""
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None
