"""Node power policies: the decision type, the interface, and the safety rules.

A policy looks at the cycle's snapshot and plan and says which nodes to switch off and on. It
does no I/O and reads no clock (``snap.time`` is the time); the caller carries the decision
out through a connector or a power driver. Whatever a policy wants, the safety rules of
DESIGN.md hold: :func:`safe_to_power_off` is the one place they are written, and every policy
filters its candidates through it.
"""

from __future__ import annotations

import abc
from collections.abc import Iterable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from wattsched.scheduler.model import Node, Plan, PowerState, RunningJob, Snapshot
from wattsched.scheduler.slots import new as _new
from wattsched.scheduler.slots import slot_setters

DEFAULT_BACKOFF_S = 3600
"""A node whose last power command failed is left alone this long (one hour: long enough for a
transient BMC or network fault to clear, short enough to retry within a shift)."""


class PowerPolicyError(ValueError):
    """A policy parameter is invalid; carries the field name and the offending value."""

    def __init__(self, policy: str, name: str, value: object, rule: str) -> None:
        self.policy = policy
        self.name = name
        self.value = value
        super().__init__(f"{policy}: {name}={value!r} {rule}")


@dataclass(frozen=True, slots=True)
class PowerDecision:
    """Which nodes to switch off and on now, and why.

    ``recheck_at``: a time at which the policy wants to be asked again even if nothing else
    happens then (an idle timeout expiring); None when only events matter. A replay turns it
    into a wake-up of the simulated clock; the daemon's periodic cycle can ignore it.
    """

    off: tuple[str, ...] = ()
    on: tuple[str, ...] = ()
    reason: str = ""
    recheck_at: int | None = None

    def __post_init__(self) -> None:
        both = set(self.off) & set(self.on) if self.off and self.on else None
        if both:
            raise PowerPolicyError("PowerDecision", "off/on", sorted(both), "names nodes twice")

    @property
    def empty(self) -> bool:
        """True when nothing is to be switched."""
        return not self.off and not self.on


_pd_off, _pd_on, _pd_reason, _pd_recheck_at = slot_setters(PowerDecision)


def decision(
    off: tuple[str, ...], on: tuple[str, ...], reason: str, recheck_at: int | None
) -> PowerDecision:
    """``PowerDecision(off=off, on=on, reason=reason, recheck_at=recheck_at)``, made by setting
    its slots directly when one of ``off`` and ``on`` is empty (no name can come twice: the
    constructor's check has nothing to find) rather than through the frozen dataclass's
    ``__init__`` (one ``object.__setattr__`` per field, and the check); a policy decides once
    a cycle."""
    if off and on:
        return PowerDecision(off, on, reason, recheck_at)
    d = _new(PowerDecision)
    _pd_off(d, off)
    _pd_on(d, on)
    _pd_reason(d, reason)
    _pd_recheck_at(d, recheck_at)
    return d


class PowerPolicy(abc.ABC):
    """Decides, once per control cycle, which nodes to power off and on.

    ``decide`` is called with the snapshot the dispatcher saw and its plan (whose starts are
    being carried out). Implementations may remember what they saw in earlier snapshots (idle
    times), but only what they can rebuild from later snapshots after a restart.
    """

    name: str = "policy"

    @abc.abstractmethod
    def decide(self, snap: Snapshot, plan: Plan) -> PowerDecision:
        """The nodes to switch now."""

    def warm(self) -> None:  # noqa: B027 - a hook: most policies compile nothing
        """Load the policy's compiled kernels now (at start-up, not in the first cycle that
        asks it); nothing to load by default."""


def busy_nodes(snap: Snapshot) -> set[str]:
    """Nodes on which at least one job unit runs."""
    return {n for rj in snap.running for n in rj.nodes}


_last_busy: tuple[tuple[RunningJob, ...] | None, frozenset[str]] = (None, frozenset())
"""The last running tuple asked of :func:`busy_set` and its answer, one tuple rebound whole
(a replay's policy and power step ask of the same tuple; kept by identity)."""


def busy_set(snap: Snapshot) -> frozenset[str]:
    """:func:`busy_nodes` of ``snap`` as a frozenset (one union at C speed), kept while the
    running jobs are the same tuple as at the last call."""
    global _last_busy
    running, busy = _last_busy
    if running is not snap.running:
        busy = frozenset().union(*[rj.nodes for rj in snap.running])
        _last_busy = (snap.running, busy)
    return busy


def planned_nodes(plan: Plan) -> set[str]:
    """Nodes named by any assignment of the plan (now or later)."""
    return {n for a in plan.assignments for n in a.nodes}


_last_planned: tuple[Plan | None, frozenset[str]] = (None, frozenset())
"""The last plan asked of :func:`planned_set` and its answer, one tuple rebound whole (the
policy and the power step ask of the same plan; kept by identity)."""


def planned_set(plan: Plan) -> frozenset[str]:
    """:func:`planned_nodes` of ``plan`` as a frozenset, kept while the plan is the same
    object as at the last call (plans are frozen)."""
    global _last_planned
    last, planned = _last_planned
    if last is not plan:
        planned = frozenset().union(*[a.nodes for a in plan.assignments])
        _last_planned = (plan, planned)
    return planned


def power_off_refusal(
    node: Node,
    snap: Snapshot,
    plan: Plan,
    backoff_s: int = DEFAULT_BACKOFF_S,
    *,
    busy: AbstractSet[str] | None = None,
    planned: AbstractSet[str] | None = None,
) -> str | None:
    """Why ``node`` must not be powered off now, or None when it may.

    ``busy`` and ``planned`` may be passed precomputed (:func:`busy_nodes`,
    :func:`planned_nodes`) when many nodes are checked against the same cycle.
    """
    if node.state is not PowerState.ON:
        return f"node {node.name} is {node.state.value}, not on"
    if not node.available:
        return f"node {node.name} is drained or reserved"
    if node.name in (busy if busy is not None else busy_nodes(snap)):
        return f"node {node.name} runs a job"
    if node.name in (planned if planned is not None else planned_nodes(plan)):
        return f"node {node.name} is planned to run a job"
    if node.last_power_failure is not None and snap.time - node.last_power_failure < backoff_s:
        return (
            f"node {node.name} failed a power command at {node.last_power_failure}, "
            f"less than {backoff_s} s ago"
        )
    return None


def may_power_off(
    nodes: Iterable[Node],
    now: int,
    backoff_s: int,
    busy: AbstractSet[str],
    planned: AbstractSet[str],
) -> list[Node]:
    """The ``nodes`` that :func:`power_off_refusal` lets be powered off at ``now`` (with
    ``busy`` and ``planned`` given), in their order: its rules written out in one pass."""
    on = PowerState.ON
    return [
        n
        for n in nodes
        if n.state is on
        and n.available
        and n.name not in busy
        and n.name not in planned
        and (n.last_power_failure is None or now - n.last_power_failure >= backoff_s)
    ]


def safe_to_power_off(
    node: Node, snap: Snapshot, plan: Plan, backoff_s: int = DEFAULT_BACKOFF_S
) -> bool:
    """True when DESIGN.md's safety rules allow powering ``node`` off now.

    Never a node that is not ON, runs a job, is named by the plan (now or later), is drained
    or reserved (``available=False``), or failed a power command less than ``backoff_s`` ago.
    """
    return power_off_refusal(node, snap, plan, backoff_s) is None
