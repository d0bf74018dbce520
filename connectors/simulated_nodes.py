"""The simulated cluster's node objects by power state, reused while nothing but the state
changes: a replay of a node power policy switches nodes thousands of times, and building a
validated :class:`~wattsched.scheduler.model.Node` was most of a switch."""

from __future__ import annotations

from dataclasses import replace

from wattsched.scheduler.model import Node, PowerState


class NodeVariants:
    """Per node index, the node's objects in each power state it has been in."""

    def __init__(self) -> None:
        self._families: dict[int, dict[PowerState, Node]] = {}

    def in_state(self, i: int, node: Node, state: PowerState) -> Node:
        """``replace(node, state=state)`` for node index ``i``: the object made the last time,
        while ``node`` is one of this node's family (else the family starts anew from it: the
        node changed other than by its state)."""
        family = self._families.get(i)
        if family is None or family.get(node.state) is not node:
            family = self._families[i] = {node.state: node}
        v = family.get(state)
        if v is None:
            v = family[state] = replace(node, state=state)
        return v
