"""The simulated cluster's node power side: commands, their completion and the node
changes they make (:class:`NodePower`, a base of
:class:`~wattsched.connectors.simulated.SimulatedCluster`, which holds the state)."""

from __future__ import annotations

from wattsched.connectors.base import RMSCommandError, UnknownNodeError
from wattsched.connectors.simulated_books import Books
from wattsched.connectors.simulated_failures import PowerFailures
from wattsched.connectors.simulated_nodes import Figures, NodeVariants, figures
from wattsched.scheduler.model import Node, PowerState
from wattsched.scheduler.power_transitions import power_transition

_POWER_DONE = 1
"""The event kind of a power transition's end (``simulated._POWER_DONE``)."""


class NodePower:
    """Power commands on the simulated cluster's nodes, and the books they move."""

    now: int
    changes: int
    power_commands: int
    power_log: list[tuple[int, str, bool]]
    _index: dict[str, int]
    _nodes: list[Node]
    _node_tuple: tuple[Node, ...] | None
    _figures: list[Figures]
    _books: Books
    _pool: list[int]
    _static_w: float
    _nodes_on: int
    _failures: PowerFailures | None
    _variants: NodeVariants

    def _push(self, t: int, kind: int, key: str) -> None:
        raise NotImplementedError

    def power(self, node: str, on: bool) -> None:
        i = self._index.get(node)
        if i is None:
            raise UnknownNodeError(f"node {node!r} does not exist", node=node)
        n = self._nodes[i]
        if not on and self._books.busy[i]:
            raise RMSCommandError(["power", node, "off"], 1, f"node {node} runs jobs")
        try:
            state = power_transition(n.state, "power_on" if on else "power_off")
        except ValueError as exc:
            raise RMSCommandError(["power", node, "on" if on else "off"], 1, str(exc)) from exc
        if self._failures is not None:
            self._failures.check(node, on)
        self.power_commands += 1
        self.power_log.append((self.now, node, on))
        self._set_node(i, *self._variants.in_state(i, n, state))
        self._push(self.now + (n.boot_s if on else n.shutdown_s), _POWER_DONE, node)

    def _power_done(self, name: str) -> None:
        i = self._index[name]
        n = self._nodes[i]
        if n.state in (PowerState.BOOTING, PowerState.SHUTTING_DOWN):
            done = power_transition(n.state, "done")
            self._set_node(i, *self._variants.in_state(i, n, done))

    def _set_node(self, i: int, node: Node, figs: Figures | None = None) -> None:
        """Node ``i`` is now ``node`` (``figs``: its :func:`figures`, when known)."""
        if figs is None:
            figs = figures(node)
        old_w, old_on, old_usable = self._figures[i]
        w, on, usable = self._figures[i] = figs
        self.changes += 1
        if usable != old_usable:
            sign = 1 if usable else -1
            self._pool = [
                p + sign * f for p, f in zip(self._pool, self._books.free[i].tolist(), strict=True)
            ]
            self._books.usable_changed(i, usable)
        self._static_w += w - old_w
        self._nodes_on += on - old_on
        self._nodes[i] = node
        self._node_tuple = None  # made again by the next snapshot
