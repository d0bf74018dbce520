"""The ``rms`` and ``simulated`` drivers: power through the connector (Slurm's
``State=POWER_DOWN``/``POWER_UP``, or the simulated cluster's own transitions)."""

from __future__ import annotations

from wattsched.connectors.base import Connector, ConnectorError, RMSTimeout
from wattsched.powerctl.drivers.base import PowerCommandError, PowerCommandTimeout, PowerDriver
from wattsched.scheduler.model import PowerState


class RMSPowerDriver(PowerDriver):
    """Switches through :meth:`Connector.power`; reads power back from its snapshot."""

    reads_back = False  # the cycle's snapshot already holds what the RMS says

    def __init__(self, connector: Connector, name: str = "rms") -> None:
        self.connector = connector
        self.name = name

    def switch(self, node: str, on: bool) -> None:
        try:
            self.connector.power(node, on)
        except RMSTimeout as exc:
            raise PowerCommandTimeout(node, str(exc)) from exc
        except PowerCommandError:
            raise
        except ConnectorError as exc:
            raise PowerCommandError(node, f"{type(exc).__name__}: {exc}") from exc

    def status(self, node: str) -> bool | None:
        for n in self.connector.snapshot().nodes:
            if n.name == node:
                if n.state in (PowerState.ON, PowerState.BOOTING):
                    return True
                if n.state is PowerState.OFF:
                    return False
        return None
