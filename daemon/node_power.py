"""An operator's power command for one node (``POST /nodes/{name}/power``), under the same
safety rules as the power policy's: never switch off a node that runs or is planned to run a
job, is drained or reserved, or failed a power command less than a back-off ago; power on
only a node that is off (or failed). Journaled before and after, as every command."""

from __future__ import annotations

from dataclasses import dataclass

from wattsched.connectors.base import ConnectorError  # noqa: F401 - raised through
from wattsched.connectors.rms_options import UnsupportedOperation
from wattsched.daemon.loop import Service
from wattsched.daemon.power_cycle import count_power, refusal, send
from wattsched.scheduler.model import Plan, Snapshot


class NodePowerRefused(Exception):
    """A safety rule forbids the command now; the message names the rule."""


class UnknownNode(Exception):
    """The RMS does not report this node."""


@dataclass(frozen=True, slots=True)
class NodePowerResult:
    """What was done: the node, the command, the action's journal id."""

    node: str
    on: bool
    action_id: int


def power_node(service: Service, name: str, on: bool, by: str) -> NodePowerResult:
    """Switch ``name`` on or off for an operator (``by``), through the service's power driver.

    Runs under the service's cycle lock (never beside a cycle). The same safety rules,
    journal, switcher (retries) and state book as the policy's commands. Raises
    :class:`UnknownNode`, :class:`NodePowerRefused` (a safety rule, or a driver that cannot
    switch power) or the driver's :class:`ConnectorError` (journaled as failed).
    """
    with service.cycle_lock:
        snap: Snapshot = service.power.observe(service.connector.snapshot())
        if not any(n.name == name for n in snap.nodes):
            raise UnknownNode(f"the RMS reports no node {name!r}")
        plan = service.last_plan or Plan(snap.time)
        why = refusal(service.power, snap, plan, name, on)
        if why:
            raise NodePowerRefused(why)
        [(aid, res)] = send(service.power, service.store, snap, [(name, on)], reason=f"by {by}")
        count_power(service.counters, service.power, [res])
        if res.error is not None:
            cause = res.error.__cause__ or res.error
            if isinstance(cause, UnsupportedOperation):
                raise NodePowerRefused(str(cause)) from None
            raise res.error
        return NodePowerResult(name, on, aid)
