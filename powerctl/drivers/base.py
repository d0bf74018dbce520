"""The power driver interface and its typed errors.

A driver switches one node's power and reads it back; it knows nothing of jobs or policies
(the safety rules are checked before any driver is called: :mod:`wattsched.powerctl.policy`).
Errors say whether trying again may help (:attr:`PowerCommandError.temporary`): a BMC that does
not answer, or a command past its time limit, may; a refused password or a changed SSH host
key will not, and retrying those only locks accounts or hides an attack.
"""

from __future__ import annotations

import abc

from wattsched.connectors.base import ConnectorError


class PowerCommandError(ConnectorError):
    """A power command failed; names the node."""

    temporary = False

    def __init__(self, node: str, message: str) -> None:
        super().__init__(f"node {node}: {message}", node=node)


class BMCAuthError(PowerCommandError):
    """The BMC refused the user or the password (not retried)."""


class BMCUnreachable(PowerCommandError):
    """The BMC (or the management host in front of it) did not answer (retried)."""

    temporary = True


class PowerCommandTimeout(PowerCommandError):
    """The command ran past its time limit (retried)."""

    temporary = True


class PowerDriverConfigError(ValueError):
    """The power driver's configuration is invalid: names the key, node or file and value."""


class PowerDriver(abc.ABC):
    """Switches nodes on and off and reads their power back."""

    name: str = "driver"
    reads_back: bool = True
    """True when :meth:`status` asks the node's own power (a BMC), not the RMS's view."""

    @abc.abstractmethod
    def switch(self, node: str, on: bool) -> None:
        """Ask for ``node`` on (True) or off (False); raises :class:`PowerCommandError`."""

    @abc.abstractmethod
    def status(self, node: str) -> bool | None:
        """True when the node is powered, False when off, None when the driver cannot tell."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release connections."""
