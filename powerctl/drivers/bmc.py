"""Where each node's BMC is and how to log in: addresses from a template or a table, the user
per node, the password from a file or the environment (never from the config file itself,
never in argv, logs, the store or API output)."""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from wattsched.powerctl.drivers.base import PowerDriverConfigError

PASSWORD_ENV = "WATTSCHED_IPMI_PASSWORD"
"""The environment variable the daemon reads the BMC password from (when no file is set)."""


@dataclass(frozen=True, slots=True)
class BMCAddress:
    """One BMC: host, UDP port and user."""

    host: str
    port: int
    user: str


class Secret:
    """A password that never prints itself (repr, str, logs)."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        """The password, for the one place that hands it to ipmitool or the IPMI library."""
        return self._value

    def __repr__(self) -> str:
        return "Secret('********')"

    __str__ = __repr__


@dataclass(frozen=True)
class BMCTable:
    """Each node's BMC: ``table[node]`` (``host`` or ``host:port``) when listed, else
    ``template`` with ``{node}`` filled in; ``users[node]`` else ``user``."""

    template: str | None = "{node}-bmc"
    port: int = 623
    user: str = "admin"
    table: Mapping[str, str] = field(default_factory=dict)
    users: Mapping[str, str] = field(default_factory=dict)

    def address(self, node: str) -> BMCAddress:
        """The BMC of ``node``; :class:`PowerDriverConfigError` when it has none."""
        entry = self.table.get(node)
        if entry is None:
            if not self.template:
                raise PowerDriverConfigError(
                    f"[power.bmc] node {node!r} has no BMC address (not in table, no template)"
                )
            entry = self.template.format(node=node)
        host, _, port = entry.rpartition(":") if ":" in entry else (entry, "", "")
        try:
            p = int(port) if port else self.port
        except ValueError:
            raise PowerDriverConfigError(
                f"[power.bmc] node {node!r}: bad port in BMC address {entry!r}"
            ) from None
        if not host or not 0 < p < 65536:
            raise PowerDriverConfigError(f"[power.bmc] node {node!r}: bad BMC address {entry!r}")
        return BMCAddress(host, p, self.users.get(node, self.user))


def read_password(password_file: Path | None, env: Mapping[str, str] | None = None) -> Secret:
    """The BMC password: the first line of ``password_file`` (which must not be readable by
    others), else ``$WATTSCHED_IPMI_PASSWORD``; :class:`PowerDriverConfigError` otherwise."""
    environ = os.environ if env is None else env
    if password_file is not None:
        try:
            mode = password_file.stat().st_mode
            text = password_file.read_text(encoding="utf-8")
        except OSError as exc:
            raise PowerDriverConfigError(
                f"[power.bmc] password_file {str(password_file)!r}: {exc.strerror or exc}"
            ) from None
        if mode & (stat.S_IRWXG | stat.S_IRWXO):
            raise PowerDriverConfigError(
                f"[power.bmc] password_file {str(password_file)!r} is readable by others "
                f"(mode {stat.S_IMODE(mode):o}); chmod 600 it"
            )
        line = text.splitlines()[0] if text else ""
        if not line:
            raise PowerDriverConfigError(
                f"[power.bmc] password_file {str(password_file)!r} is empty"
            )
        return Secret(line)
    value = environ.get(PASSWORD_ENV)
    if not value:
        raise PowerDriverConfigError(
            f"[power.bmc] no password: set password_file or ${PASSWORD_ENV}"
        )
    return Secret(value)
