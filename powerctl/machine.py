"""What wattsched knows of each node's power between what the RMS says: the commands it sent,
their time limits, and their failures.

The RMS does not always know why a node is gone (a node switched off through its BMC is just
"not responding" to Slurm), nor does it know a boot is late. :class:`PowerBook` keeps the last
command of each node and lays it over every snapshot before planning:

* after a successful ``off``, the node is ``shutting_down`` until the RMS (or the driver)
  reports it off, then ``off`` (whatever else the RMS calls it, e.g. down);
* after a successful ``on``, it is ``booting`` until the RMS reports it on and available; one
  that has not come back ``boot_timeout_s`` after the command is ``failed``, with the time
  (the node choice puts it last: :mod:`wattsched.powerctl.selection`), as is one that does not
  go off within ``shutdown_timeout_s``;
* after a failed command, the node keeps what the RMS says but carries the failure's time
  (``last_power_failure``: the back-off of the safety rules); a command that timed out leaves
  it ``unknown`` (nothing is placed there) until it is seen on or off again.

Transitions go through :func:`~wattsched.scheduler.power_transitions.power_transition`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from wattsched.powerctl.node_diff import changed_nodes
from wattsched.scheduler.model import Node, PowerState, Snapshot
from wattsched.scheduler.power_transitions import PowerTransitionError, power_transition


@dataclass(slots=True)
class NodePower:
    """The book's record of one node."""

    state: PowerState
    since: int
    """When the node entered ``state`` (cluster time)."""
    last_command: str | None = None
    """``on`` or ``off``: the last command sent."""
    last_failure: int | None = None
    seen_down: bool = False
    """The RMS has reported the node not up since it was asked off: its "up" is news."""


class PowerBook:
    """The node power state machine with time limits, laid over the RMS's snapshots."""

    def __init__(self, boot_timeout_s: int = 600, shutdown_timeout_s: int = 300) -> None:
        if boot_timeout_s <= 0 or shutdown_timeout_s <= 0:
            raise ValueError(
                f"boot_timeout_s={boot_timeout_s!r}, shutdown_timeout_s={shutdown_timeout_s!r}:"
                " both must be > 0"
            )
        self.boot_timeout_s = boot_timeout_s
        self.shutdown_timeout_s = shutdown_timeout_s
        self.nodes: dict[str, NodePower] = {}
        self._index: dict[str, int] = {}
        self._seen: tuple[Node, ...] | None = None
        """The nodes of the last snapshot laid over."""
        self._active: set[str] = set()
        """The book's nodes to look at next time: all but those found off, and agreed, at the
        last look whose node object and record are the same since."""
        self.timed_out: list[tuple[str, int, str]] = []
        """``(node, time, why)`` of every node marked failed by a time limit (for the log)."""

    # -- what the cycle tells it -------------------------------------------------------------

    def commanded(self, node: Node, on: bool, time_: int) -> None:
        """A command went through: the node is now booting or shutting down."""
        self._active.add(node.name)
        try:
            state = power_transition(node.state, "power_on" if on else "power_off")
        except PowerTransitionError:
            state = PowerState.BOOTING if on else PowerState.SHUTTING_DOWN
        rec = self.nodes.get(node.name)
        failure = rec.last_failure if rec else None
        seen = bool(on and rec is not None and rec.seen_down)
        self.nodes[node.name] = NodePower(state, time_, "on" if on else "off", failure, seen)

    def failed(self, node: Node, on: bool, time_: int, *, outcome_unknown: bool) -> None:
        """A command failed (``outcome_unknown``: it timed out, the node may have switched)."""
        self._active.add(node.name)
        rec = self.nodes.get(node.name)
        state = power_transition(node.state, "lost") if outcome_unknown else node.state
        if rec is not None and not outcome_unknown:
            state = rec.state
        self.nodes[node.name] = NodePower(state, time_, "on" if on else "off", time_)

    def pending_off(self) -> list[str]:
        """Nodes asked off whose power-off is not confirmed yet (shutting down, or unknown)."""
        return [
            name
            for name, rec in self.nodes.items()
            if rec.state is PowerState.SHUTTING_DOWN
            or (rec.state is PowerState.UNKNOWN and rec.last_command == "off")
        ]

    def confirmed_off(self, name: str, time_: int) -> None:
        """The driver read the node's power back: off (a BMC says so; the RMS may only see a
        node that stopped answering)."""
        rec = self.nodes.get(name)
        if rec is not None:
            self._active.add(name)
        if rec is not None and rec.state in (PowerState.SHUTTING_DOWN, PowerState.UNKNOWN):
            rec.state, rec.since = PowerState.OFF, time_

    # -- what the dispatcher sees ------------------------------------------------------------

    def overlay(self, snap: Snapshot, powered: Callable[[str], bool] | None = None) -> Snapshot:
        """``snap`` with each node's state as the book knows it (see the module docstring).

        ``powered(name)``: asks the node's own power (its BMC) before a node the book has off
        is taken back on the RMS's word (an RMS still reports a node it has not yet missed);
        None trusts the RMS.
        """
        if not self.nodes:
            return snap
        # Only the nodes the book holds can change; they are looked at in the snapshot's order,
        # but for those found off and agreed at the last look while neither moved since.
        where = self._unsettled(snap.nodes)
        if where is None:
            where = self._positions(snap.nodes)
        nodes: list[Node] | None = None
        off, active, book = PowerState.OFF, self._active, self.nodes
        active.clear()
        for i in where:
            node = snap.nodes[i]
            rec = book[node.name]
            if rec.state is off and node.state is off and rec.last_failure is None:
                rec.seen_down = True  # off, and the RMS agrees: nothing to lay over
                continue
            new = self._node(node, snap.time, powered)
            if node.name in book:
                active.add(node.name)
            if new is not node:
                if nodes is None:
                    nodes = list(snap.nodes)
                nodes[i] = new
        return snap if nodes is None else dataclasses.replace(snap, nodes=tuple(nodes))

    def _unsettled(self, nodes: tuple[Node, ...]) -> list[int] | None:
        """The positions in ``nodes`` of the book's nodes to look at, ascending: the active
        ones and those whose node object changed since the last look; None when the nodes are
        other ones or in another order (then all are looked at)."""
        old, self._seen = self._seen, nodes
        if old is None or len(old) != len(nodes):
            return None
        active, book = self._active, self.nodes
        if old is not nodes:
            changed = changed_nodes(old, nodes)
            if changed is None:
                return None
            for _, b in changed:
                if b.name in book:
                    active.add(b.name)  # its node changed: looked at again
        index, size = self._index, len(nodes)
        where: list[int] = []
        for name in active:
            if name not in book:
                continue
            i = index.get(name, size)
            if i >= size or nodes[i].name != name:
                return None
            where.append(i)
        where.sort()
        return where

    def _positions(self, nodes: Sequence[Node]) -> list[int]:
        """The positions of the book's nodes in ``nodes``, ascending (the last index is kept
        while it still names them right: node lists rarely change order)."""
        index, names, size = self._index, list(self.nodes), len(nodes)
        where = [index.get(name, size) for name in names]
        try:
            stale = [nodes[i].name for i in where] != names
        except IndexError:
            stale = True
        if stale:
            index = self._index = {n.name: i for i, n in enumerate(nodes)}
            where = [i for i in map(index.get, self.nodes) if i is not None]
        where.sort()
        return where

    def _node(self, node: Node, now: int, powered: Callable[[str], bool] | None = None) -> Node:
        rec = self.nodes.get(node.name)
        if rec is None:
            return node
        rms = node.state
        up = rms is PowerState.ON and node.available
        if not up:
            rec.seen_down = True
        state = rec.state
        if state is PowerState.BOOTING:
            # The RMS may still call a node it has not missed yet "up" (Slurm, until
            # SlurmdTimeout): its "up" counts once it was seen down, or after the boot time.
            if up and (rec.seen_down or now - rec.since >= node.boot_s):
                state = self._settle(node.name, PowerState.ON, now)
            elif now - rec.since > self.boot_timeout_s:
                state = self._time_out(
                    node.name, now, f"not back {self.boot_timeout_s} s after power on"
                )
        elif state is PowerState.SHUTTING_DOWN:
            if rms is PowerState.OFF:
                state = self._settle(node.name, PowerState.OFF, now)
            elif now - rec.since > self.shutdown_timeout_s:
                state = self._time_out(
                    node.name, now, f"not off {self.shutdown_timeout_s} s after power off"
                )
        elif state is PowerState.UNKNOWN:
            # Seen again: in the state the command asked for, or still in the old one once
            # the command's time limit has passed (it did not take).
            wanted_off = rec.last_command == "off"
            limit = self.shutdown_timeout_s if wanted_off else self.boot_timeout_s
            took = (wanted_off and rms is PowerState.OFF) or (not wanted_off and up)
            late = now - rec.since > limit and (up or rms is PowerState.OFF)
            if took or late:
                state = self._settle(node.name, rms, now)
        elif state in (PowerState.OFF, PowerState.FAILED):
            if up and (powered is None or powered(node.name)):
                state = self._settle(node.name, rms, now)  # seen again: the RMS is right
        elif state is PowerState.ON:
            state = rms  # nothing pending: the RMS's word
        failure = rec.last_failure
        if failure is None and state is rms and state is PowerState.ON:
            del self.nodes[node.name]  # settled, and the RMS agrees: nothing left to lay over
            return node
        if failure is not None and (node.last_power_failure or -1) < failure:
            node = dataclasses.replace(node, last_power_failure=failure)
        if state in (PowerState.OFF, PowerState.BOOTING) and rms is PowerState.FAILED:
            # Down for the RMS because we switched it off (a node that stopped answering):
            # that fault is ours, the node may be switched on again and used once back. (An
            # admin's drain on a running node still shows: the node is then ON for the RMS.)
            node = dataclasses.replace(node, available=True)
        return node if state is node.state else dataclasses.replace(node, state=state)

    def _settle(self, name: str, state: PowerState, now: int) -> PowerState:
        rec = self.nodes[name]
        if rec.state is not state:
            rec.state, rec.since = state, now
        return state

    def _time_out(self, name: str, now: int, why: str) -> PowerState:
        rec = self.nodes[name]
        rec.state, rec.since, rec.last_failure = PowerState.FAILED, now, now
        self.timed_out.append((name, now, why))
        return PowerState.FAILED

    def state_of(self, name: str) -> PowerState | None:
        """The book's state of ``name`` (None: no command was ever sent)."""
        rec = self.nodes.get(name)
        return rec.state if rec else None
