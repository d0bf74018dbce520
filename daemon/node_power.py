"""An operator's power command for one node (``POST /nodes/{name}/power``), under the same
safety rules as the power policy's: never switch off a node that runs or is planned to run a
job, is drained or reserved, or failed a power command less than a back-off ago; power on
only a node that is off (or failed). Journaled before and after, as every command."""

from __future__ import annotations

from dataclasses import dataclass

from wattsched.connectors.base import ConnectorError
from wattsched.connectors.rms_options import UnsupportedOperation
from wattsched.daemon.loop import Service
from wattsched.powerctl.policy import power_off_refusal
from wattsched.scheduler.model import Plan, PowerState, Snapshot


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
    """Switch ``name`` on or off for an operator (``by``), through the service's connector.

    Runs under the service's cycle lock (never beside a cycle). Raises :class:`UnknownNode`,
    :class:`NodePowerRefused` (a safety rule, or a connector that cannot switch power) or the
    connector's :class:`ConnectorError` (journaled as failed).
    """
    with service.cycle_lock:
        snap: Snapshot = service.connector.snapshot()
        node = next((n for n in snap.nodes if n.name == name), None)
        if node is None:
            raise UnknownNode(f"the RMS reports no node {name!r}")
        plan = service.last_plan or Plan(snap.time)
        if on:
            if node.state not in (PowerState.OFF, PowerState.FAILED):
                raise NodePowerRefused(f"node {name} is {node.state.value}: nothing to power on")
        else:
            why = power_off_refusal(node, snap, plan)
            if why:
                raise NodePowerRefused(why)
        aid = service.store.begin_action(
            "power_on" if on else "power_off", time_=snap.time, job_id=None, nodes=(name,)
        )
        try:
            service.connector.power(name, on)
        except UnsupportedOperation as exc:
            service.store.finish_action(aid, "failed", error=f"{type(exc).__name__}: {exc}")
            raise NodePowerRefused(str(exc)) from None
        except ConnectorError as exc:
            service.store.finish_action(aid, "failed", error=f"{type(exc).__name__}: {exc}")
            service.counters.action("power_on" if on else "power_off", "failed")
            raise
        service.store.finish_action(aid, "done", result=f"by {by}")
        service.counters.action("power_on" if on else "power_off", "done")
        return NodePowerResult(name, on, aid)
