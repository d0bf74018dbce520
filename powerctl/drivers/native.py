"""The ``ipmi-native`` driver: IPMI 2.0 (RMCP+) from Python, no ipmitool needed.

Through pyghmi, OpenStack's IPMI library (used by Ironic and xCAT's successor Confluent, and
released with OpenStack's cycle): it speaks lanplus itself, shares one session per BMC across
calls, and reports a refused password as such. python-ipmi also works against ipmi_sim, but
pyghmi is the one kept up by a project that drives BMCs in production.
"""

from __future__ import annotations

import threading
from typing import Any

from wattsched.powerctl.drivers.base import (
    BMCAuthError,
    BMCUnreachable,
    PowerCommandError,
    PowerDriver,
)
from wattsched.powerctl.drivers.bmc import BMCTable, Secret


class NativeIPMIDriver(PowerDriver):
    """``chassis power`` through :class:`pyghmi.ipmi.command.Command`."""

    name = "ipmi-native"

    def __init__(self, bmcs: BMCTable, password: Secret) -> None:
        self.bmcs = bmcs
        self._password = password
        self._sessions: dict[str, Any] = {}
        self._lock = threading.Lock()

    def _command(self, node: str) -> Any:
        from pyghmi.ipmi import command

        with self._lock:
            cmd = self._sessions.get(node)
        if cmd is not None:
            return cmd
        bmc = self.bmcs.address(node)
        try:
            cmd = command.Command(
                bmc=bmc.host, userid=bmc.user, password=self._password.reveal(), port=bmc.port
            )
        except Exception as exc:  # pyghmi raises IpmiException or socket errors
            raise _classify(node, exc) from None
        with self._lock:
            self._sessions[node] = cmd
        return cmd

    def _call(self, node: str, fn: str, *args: Any, **kwargs: Any) -> Any:
        try:
            return getattr(self._command(node), fn)(*args, **kwargs)
        except PowerCommandError:
            raise
        except Exception as exc:
            with self._lock:
                self._sessions.pop(node, None)  # a new session next time
            raise _classify(node, exc) from None

    def switch(self, node: str, on: bool) -> None:
        self._call(node, "set_power", "on" if on else "off", wait=False)

    def status(self, node: str) -> bool | None:
        state = self._call(node, "get_power").get("powerstate")
        return None if state is None else state == "on"


def _classify(node: str, exc: Exception) -> PowerCommandError:
    text = str(exc)
    low = text.lower()
    if "password" in low or "unauthorized" in low or "userid" in low:
        return BMCAuthError(node, f"BMC refused the login: {text}")
    silent = text in ("", "None")  # pyghmi's session timed out: no message
    gone = "timeout" in low or "unreachable" in low or "connected" in low
    if silent or gone or isinstance(exc, OSError):
        return BMCUnreachable(node, f"BMC does not answer: {text}")
    return PowerCommandError(node, f"{type(exc).__name__}: {text}")
