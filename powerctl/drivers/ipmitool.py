"""The ``ipmi-local`` and ``ipmi-ssh`` drivers: ``ipmitool`` run on this host or on a
management host reached over SSH.

The command is an argument list, never a shell line built from strings::

    ipmitool -v -I lanplus -C 3 -N 2 -R 1 -H BMC -p PORT -U USER -E chassis power on|off|status

``-E`` makes ipmitool read the password from ``IPMI_PASSWORD`` in its environment: locally the
variable is set in the child's environment only; over SSH the remote command is
``sh -c 'IFS= read -r IPMI_PASSWORD; export IPMI_PASSWORD; exec "$@"' sh ipmitool ...`` and the
password goes down the channel's standard input, so it is in no command line on either host
(``ps`` shows none) and needs no ``AcceptEnv`` on the server. ``-C 3`` avoids ipmitool's cipher
negotiation (10 s lost without it); ``-v`` makes it say why a session failed, which tells a
refused password (not retried) from a BMC that does not answer (retried).
"""

from __future__ import annotations

import re
import shlex
import zlib
from collections.abc import Sequence

from wattsched.connectors.base import RMSCommandError, RMSTimeout
from wattsched.connectors.runner import CommandResult, LocalRunner, RunnerConnectError, SSHRunner
from wattsched.powerctl.drivers.base import (
    BMCAuthError,
    BMCUnreachable,
    PowerCommandError,
    PowerCommandTimeout,
    PowerDriver,
)
from wattsched.powerctl.drivers.bmc import BMCAddress, BMCTable, Secret

REMOTE_WRAPPER = 'IFS= read -r IPMI_PASSWORD; export IPMI_PASSWORD; exec "$@"'
BATCH = 128
"""Nodes per remote batch (one SSH channel, one command line of their ipmitool calls)."""
BATCH_PRELUDE = (
    "IFS= read -r IPMI_PASSWORD; export IPMI_PASSWORD\n"
    'r() { n=$1; shift; o=$("$@" 2>&1); c=$?; '
    "printf '%s %s %s\\n' \"$n\" \"$c\" \"$(printf '%s' \"$o\" | tr '\\n' '\\036')\"; }"
)
_AUTH = re.compile(r"RAKP 2 HMAC is invalid|unauthorized name|invalid user name|password", re.I)
_STATUS = re.compile(r"Chassis Power is (on|off)", re.I)


def ipmitool_argv(bmc: BMCAddress, action: str, *, retries: int = 1) -> list[str]:
    """The argument list of one ``chassis power`` command (no password in it)."""
    if action not in ("on", "off", "status", "soft", "cycle"):
        raise ValueError(f"unknown chassis power action {action!r}")
    return [
        "ipmitool", "-v", "-I", "lanplus", "-C", "3", "-N", "2", "-R", str(retries),
        "-H", bmc.host, "-p", str(bmc.port), "-U", bmc.user, "-E",
        "chassis", "power", action,
    ]  # fmt: skip


def classify(node: str, rc: int, output: str) -> PowerCommandError:
    """The typed error of a failed ipmitool run (its exit code and output)."""
    last = output.strip().splitlines()[-1] if output.strip() else f"exit {rc}"
    if _AUTH.search(output):
        return BMCAuthError(node, f"BMC refused the login: {last}")
    if "Unable to establish" in output or "No response" in output or "Get Auth" in output:
        return BMCUnreachable(node, f"BMC does not answer: {last}")
    if rc == 127:
        return PowerCommandError(node, "ipmitool not found on the host that runs it")
    return PowerCommandError(node, f"ipmitool exit {rc}: {last}")


def parse_status(node: str, stdout: str) -> bool:
    """True for ``Chassis Power is on``, False for ``off``."""
    m = _STATUS.search(stdout)
    if m is None:
        raise PowerCommandError(node, f"unexpected ipmitool output {stdout.strip()[:80]!r}")
    return m.group(1).lower() == "on"


class IpmitoolDriver(PowerDriver):
    """ipmitool through a command runner: :class:`LocalRunner` (``ipmi-local``, password in
    the child's environment) or :class:`SSHRunner` (``ipmi-ssh``, password on stdin)."""

    def __init__(
        self,
        bmcs: BMCTable,
        password: Secret,
        *,
        ssh: SSHRunner | Sequence[SSHRunner] | None = None,
        timeout_s: float = 20.0,
        ipmitool: str = "ipmitool",
    ) -> None:
        self.bmcs = bmcs
        self.timeout_s = timeout_s
        # A few connections, each reused for every command (OpenSSH serves at most
        # MaxSessions channels at once on one): a node always goes through the same one.
        self._ssh: list[SSHRunner] = (
            [] if ssh is None else [ssh] if isinstance(ssh, SSHRunner) else list(ssh)
        )
        self._ipmitool = ipmitool
        self.name = "ipmi-ssh" if self._ssh else "ipmi-local"
        self._password = password
        self._local = (
            LocalRunner({"IPMI_PASSWORD": password.reveal()}, timeout=timeout_s)
            if not self._ssh
            else None
        )

    def _run(self, node: str, action: str) -> CommandResult:
        argv = ipmitool_argv(self.bmcs.address(node), action)
        argv[0] = self._ipmitool
        try:
            if self._ssh:
                wrapped: Sequence[str] = ["sh", "-c", REMOTE_WRAPPER, "sh", *argv]
                stdin = (self._password.reveal() + "\n").encode()
                conn = self._ssh[zlib.crc32(node.encode()) % len(self._ssh)]
                res = conn.run(wrapped, timeout=self.timeout_s, check=False, stdin=stdin)
            else:
                assert self._local is not None
                res = self._local.run(argv, timeout=self.timeout_s, check=False)
        except RMSTimeout:
            raise PowerCommandTimeout(
                node, f"chassis power {action} took more than {self.timeout_s:g} s"
            ) from None
        except RunnerConnectError as exc:
            err = BMCUnreachable if not _is_host_key(exc) else PowerCommandError
            raise err(node, f"management host: {exc}") from None
        except RMSCommandError as exc:
            raise classify(node, exc.returncode or -1, exc.stderr) from None
        if res.returncode != 0:
            raise classify(node, res.returncode, res.stderr + res.stdout)
        return res

    def switch(self, node: str, on: bool) -> None:
        self._run(node, "on" if on else "off")

    def status(self, node: str) -> bool | None:
        return parse_status(node, self._run(node, "status").stdout)

    def switch_batch(
        self, commands: Sequence[tuple[str, bool]]
    ) -> dict[str, PowerCommandError | None] | None:
        """Over SSH, many nodes in one channel: one remote ``sh`` reads the password once and
        runs their ipmitool calls side by side (the SSH cost is paid per batch, not per
        node); each node's error or None. None: not batched here (run them one by one)."""
        if not self._ssh or len(commands) < 2:
            return None
        out: dict[str, PowerCommandError | None] = {}
        for i in range(0, len(commands), BATCH):
            out.update(self._batch(commands[i : i + BATCH]))
        return out

    def _batch(self, commands: Sequence[tuple[str, bool]]) -> dict[str, PowerCommandError | None]:
        lines = [BATCH_PRELUDE]
        for node, on in commands:
            argv = ipmitool_argv(self.bmcs.address(node), "on" if on else "off")
            argv[0] = self._ipmitool
            lines.append(f"r {shlex.quote(node)} {shlex.join(argv)} &")
        lines.append("wait")
        script = "\n".join(lines)
        conn = self._ssh[0]
        stdin = (self._password.reveal() + "\n").encode()
        limit = self.timeout_s + 5
        try:
            res = conn.run(["sh", "-c", script], timeout=limit, check=False, stdin=stdin)
        except RMSTimeout:
            msg = f"batch of {len(commands)} took more than {limit:g} s"
            return {n: PowerCommandTimeout(n, msg) for n, _ in commands}
        except RunnerConnectError as exc:
            err = BMCUnreachable if not _is_host_key(exc) else PowerCommandError
            return {n: err(n, f"management host: {exc}") for n, _ in commands}
        got: dict[str, PowerCommandError | None] = {}
        for line in res.stdout.split("\n"):  # not splitlines: \x1e would split too
            node, _, rest = line.partition(" ")
            rc_text, _, output = rest.partition(" ")
            if node and rc_text.isdigit():
                rc = int(rc_text)
                got[node] = None if rc == 0 else classify(node, rc, output.replace("\x1e", "\n"))
        for node, _ in commands:
            if node not in got:
                got[node] = PowerCommandError(node, f"no answer in the batch: {res.stderr[-200:]}")
        return got

    def close(self) -> None:
        for conn in self._ssh:
            conn.close()


def _is_host_key(exc: RunnerConnectError) -> bool:
    from wattsched.connectors.runner import HostKeyError

    return isinstance(exc, HostKeyError)
