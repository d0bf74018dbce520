"""The one state machine of node power: which power state follows which event."""

from __future__ import annotations

from wattsched.scheduler.model import ModelError, PowerState

_TRANSITIONS: dict[tuple[PowerState, str], PowerState] = {
    (PowerState.ON, "power_off"): PowerState.SHUTTING_DOWN,
    (PowerState.SHUTTING_DOWN, "done"): PowerState.OFF,
    (PowerState.OFF, "power_on"): PowerState.BOOTING,
    (PowerState.BOOTING, "done"): PowerState.ON,
    (PowerState.BOOTING, "fail"): PowerState.FAILED,
    (PowerState.SHUTTING_DOWN, "fail"): PowerState.FAILED,
    (PowerState.FAILED, "power_on"): PowerState.BOOTING,
    (PowerState.FAILED, "power_off"): PowerState.SHUTTING_DOWN,
    (PowerState.ON, "fail"): PowerState.FAILED,
    (PowerState.UNKNOWN, "power_on"): PowerState.BOOTING,
    (PowerState.UNKNOWN, "power_off"): PowerState.SHUTTING_DOWN,
}
for _state in PowerState:
    # A command whose outcome is unknown (it failed half-way, or timed out) leaves any state
    # unknown until the node is seen again.
    _TRANSITIONS[(_state, "lost")] = PowerState.UNKNOWN


class PowerTransitionError(ModelError):
    """A power command that makes no sense in the node's current state."""


def power_transition(state: PowerState, event: str) -> PowerState:
    """The state after ``event`` (``power_on``, ``power_off``, ``done``, ``fail``, ``lost``).

    The one state machine for node power; raises :class:`PowerTransitionError` otherwise.
    """
    try:
        return _TRANSITIONS[(state, event)]
    except KeyError:
        raise PowerTransitionError(
            f"no power transition from {state.value!r} on {event!r}"
        ) from None
