"""The node power step of the control cycle, the same in the daemon and in replays.

:class:`PowerControl` holds what carries power decisions out: the policy (or none), the
:class:`~wattsched.powerctl.switching.Switcher` over a driver (IPMI, the RMS, the simulator)
and the :class:`~wattsched.powerctl.machine.PowerBook` (the state machine with its time
limits). Each cycle the book is laid over the snapshot before planning (:meth:`observe`), then
:func:`apply_power_policy` asks the policy, checks every command against the safety rules
again (whatever asked for it), journals them, sends them in parallel and records their
outcomes in the journal, the book and the counters. An operator's command
(:func:`command_nodes`) goes through the same checks, journal, switcher and book.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from operator import attrgetter

from wattsched.connectors.base import Connector, ConnectorError
from wattsched.daemon.acting import Outcome, StartJournal
from wattsched.daemon.api.schemas import PowerDecisionOut
from wattsched.daemon.cycle_state import Counters
from wattsched.powerctl.drivers.base import PowerDriver
from wattsched.powerctl.drivers.rms import RMSPowerDriver
from wattsched.powerctl.machine import PowerBook
from wattsched.powerctl.node_diff import name_positions
from wattsched.powerctl.policy import (
    DEFAULT_BACKOFF_S,
    PowerDecision,
    PowerPolicy,
    busy_set,
    planned_set,
    power_off_refusal,
)
from wattsched.powerctl.switching import Switcher, SwitchResult
from wattsched.scheduler.model import Node, Plan, PowerState, Snapshot

log = logging.getLogger(__name__)
_name = attrgetter("name")


@dataclass
class PowerControl:
    """The policy, the driver's switcher and the state book of one daemon or replay."""

    switcher: Switcher
    policy: PowerPolicy | None = None
    book: PowerBook = field(default_factory=PowerBook)
    backoff_s: int = DEFAULT_BACKOFF_S

    @classmethod
    def through_connector(
        cls, connector: Connector, policy: PowerPolicy | None = None, **kw: object
    ) -> PowerControl:
        """Power through the connector itself (``rms``; ``simulated`` in replays), serially."""
        name = "simulated" if getattr(connector, "name", "") == "simulated" else "rms"
        return cls(Switcher(RMSPowerDriver(connector, name), max_parallel=1), policy, **kw)  # type: ignore[arg-type]

    @property
    def driver(self) -> PowerDriver:
        """The driver commands go through."""
        return self.switcher.driver

    def observe(self, snap: Snapshot) -> Snapshot:
        """The snapshot with each node's power state as the book knows it (a power-off not
        yet confirmed is read back from the driver when it asks the BMC itself)."""
        if self.driver.reads_back:
            for name in self.book.pending_off():
                try:
                    if self.driver.status(name) is False:
                        self.book.confirmed_off(name, snap.time)
                except (ConnectorError, ValueError) as exc:
                    log.warning("power status of node %s unreadable: %s", name, exc)
        out = self.book.overlay(snap, self._powered if self.driver.reads_back else None)
        while self.book.timed_out:
            name, t, why = self.book.timed_out.pop(0)
            log.error("node %s marked failed at %d: %s", name, t, why)
        return out

    def _powered(self, name: str) -> bool:
        try:
            return self.driver.status(name) is True
        except (ConnectorError, ValueError) as exc:
            log.warning("power status of node %s unreadable: %s", name, exc)
            return False


@dataclass
class PowerOutcome:
    """What :func:`apply_power_policy` decided and did this cycle."""

    decision: PowerDecision
    done: list[tuple[str, bool]] = field(default_factory=list)
    """``(node, on)`` commands carried out."""
    failed: list[tuple[str, bool, ConnectorError]] = field(default_factory=list)
    refused: list[tuple[str, str]] = field(default_factory=list)
    """``(node, rule)``: commands a safety rule stopped."""
    results: list[SwitchResult] = field(default_factory=list)


def refusal(
    control: PowerControl, snap: Snapshot, plan: Plan, node: str, on: bool,
    busy: AbstractSet[str] | None = None, planned: AbstractSet[str] | None = None,
    index: Mapping[str, Node] | None = None,
) -> str | None:  # fmt: skip
    """Why a command must not be sent now (the safety rules of DESIGN.md), or None.

    ``index`` (node name -> node of ``snap``) may be passed when many commands are checked."""
    if index is not None:
        n = index.get(node)
    else:
        n = next((x for x in snap.nodes if x.name == node), None)
    if n is None:
        return f"the RMS reports no node {node!r}"
    if on:
        if n.state not in (PowerState.OFF, PowerState.FAILED, PowerState.UNKNOWN):
            return f"node {node} is {n.state.value}: nothing to power on"
        return None
    return power_off_refusal(n, snap, plan, control.backoff_s, busy=busy, planned=planned)


def send(
    control: PowerControl,
    journal: StartJournal,
    snap: Snapshot,
    commands: Sequence[tuple[str, bool]],
    *,
    cycle_id: int | None = None,
    reason: str = "policy",
    index: Mapping[str, Node] | None = None,
) -> list[tuple[int, SwitchResult]]:
    """Journal ``commands`` pending, send them (in parallel), record their outcomes; each
    command's journal id and result (``index``: node name -> node of ``snap``, at least of
    the commanded names, when known)."""
    if not commands:
        return []
    ids = journal.begin_actions(
        [("power_on" if on else "power_off", None, (n,)) for n, on in commands],
        time_=snap.time,
        cycle_id=cycle_id,
    )
    results: list[SwitchResult] = []
    outcomes: list[Outcome] = []
    nodes = index if index is not None else {n.name: n for n in snap.nodes}
    try:
        results = control.switcher.run(commands)
        for action_id, r in zip(ids, results, strict=True):
            node = nodes[r.node]
            if r.ok:
                control.book.commanded(node, r.on, snap.time)
                outcomes.append((action_id, "done", f"{reason} via {control.driver.name}", None))
            else:
                control.book.failed(node, r.on, snap.time, outcome_unknown=r.outcome_unknown)
                err = f"{type(r.error).__name__}: {r.error} (after {r.attempts} attempt(s))"
                outcomes.append((action_id, "failed", None, err))
    finally:
        journal.finish_actions(outcomes)
    return list(zip(ids, results, strict=True))


def apply_power_policy(
    control: PowerControl,
    connector: Connector,
    journal: StartJournal,
    snap: Snapshot,
    plan: Plan,
    *,
    act: bool = True,
    cycle_id: int | None = None,
) -> PowerOutcome:
    """The policy's decision for this cycle, carried out when ``act``.

    Offs go first (they free cap room for boots). Every command is checked again against
    the safety rules (:func:`refusal`): a refused one is logged and dropped, the rest go on.
    With ``act=False`` (advise mode) the decision is only returned. The decision's
    ``recheck_at`` becomes the policy's one pending wake-up of a clock that moves from event to
    event (the simulated cluster's ``replace_wake``: it replaces the previous decision's, and
    None withdraws it); a real RMS is asked again at the next period anyway.
    """
    if control.policy is None:
        return PowerOutcome(PowerDecision())
    decision = control.policy.decide(snap, plan)
    out = PowerOutcome(decision)
    if act and not decision.empty:
        busy, planned = busy_set(snap), planned_set(plan)
        asked = [(n, False) for n in decision.off] + [(n, True) for n in decision.on]
        index, first = _index(snap.nodes, asked)
        cmds: list[tuple[str, bool]] = []
        for name, on in asked:
            why = refusal(control, snap, plan, name, on, busy, planned, first)
            if why:
                log.error("power policy asked for %s %s; refused: %s", name, on, why)
                out.refused.append((name, why))
            else:
                cmds.append((name, on))
        sent = send(
            control, journal, snap, cmds, cycle_id=cycle_id,
            reason=decision.reason or "policy", index=index,
        )  # fmt: skip
        out.results = [r for _, r in sent]
        for r in out.results:
            if r.ok:
                out.done.append((r.node, r.on))
            else:
                assert r.error is not None
                out.failed.append((r.node, r.on, r.error))
    rewake = getattr(connector, "replace_wake", None)
    if rewake is not None:
        rewake("power", decision.recheck_at)
    return out


def _index(
    nodes: tuple[Node, ...], asked: Sequence[tuple[str, bool]]
) -> tuple[dict[str, Node], dict[str, Node] | None]:
    """The node of each name ``asked`` (for :func:`send`: the last node of a name) and, for
    :func:`refusal`, the same when no name comes twice (else None: the first of a name).

    With distinct names only the asked ones are looked up, by their kept positions
    (:func:`~wattsched.powerctl.node_diff.name_positions`); a name that is no node is left out,
    as a whole index would."""
    pos = name_positions(nodes)
    if pos is None:
        return dict(zip(map(_name, nodes), nodes, strict=True)), None
    index = {n: nodes[pos[n]] for n, _ in asked if n in pos}
    return index, index


def count_power(
    counters: Counters, control: PowerControl, results: Sequence[SwitchResult], refused: int = 0
) -> None:
    """Count power commands in the daemon's counters (actions, errors, the histogram)."""
    for r in results:
        command = "power_on" if r.on else "power_off"
        result = "done" if r.ok else "failed"
        counters.action(command, result)
        counters.switched(control.driver.name, "on" if r.on else "off", result, r.seconds)
        if not r.ok:
            counters.error("power")
    for _ in range(refused):
        counters.error("power_refused")


def power_step(
    control: PowerControl,
    connector: Connector,
    journal: StartJournal,
    counters: Counters,
    snap: Snapshot,
    plan: Plan,
    *,
    cycle_id: int | None,
    act: bool,
) -> PowerDecisionOut:
    """The daemon's power step: the policy's decision carried out when ``act`` (enforce),
    counted, and returned as ``/status`` publishes it (advise: logged, not sent)."""
    out = apply_power_policy(control, connector, journal, snap, plan, act=act, cycle_id=cycle_id)
    d = out.decision
    if not act and not d.empty:
        log.info(
            "advise mode: the power policy would switch off %s, on %s (%s)",
            ",".join(d.off) or "-", ",".join(d.on) or "-", d.reason,
        )  # fmt: skip
    count_power(counters, control, out.results, refused=len(out.refused))
    return PowerDecisionOut(
        policy=getattr(control.policy, "name", "policy"), off=list(d.off), on=list(d.on),
        reason=d.reason, carried_out=act,
    )  # fmt: skip
