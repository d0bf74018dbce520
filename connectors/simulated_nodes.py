"""The simulated cluster's node objects by power state, reused while nothing but the state
changes: a replay of a node power policy switches nodes thousands of times, and building a
validated :class:`~wattsched.scheduler.model.Node` was most of a switch. Each object comes
with its :func:`figures` (its static draw and flags), worked out once with it: a switch
reads them instead of asking the node's power model and state again."""

from __future__ import annotations

from dataclasses import replace

from wattsched.scheduler.model import Node, PowerState

Figures = tuple[float, int, bool]
"""A node's ``(static watts, 1 if ON else 0, usable)``: its draw with no busy core in its
power state (``NodePowerModel.state_watts``), and whether it is ON and available (new work
may start on it)."""


def figures(node: Node) -> Figures:
    """``node``'s :data:`Figures`."""
    on = node.state is PowerState.ON
    return node.power.state_watts(node.state), int(on), on and node.available


class NodeVariants:
    """Per node index, the node's objects in each power state it has been in, with their
    :func:`figures`."""

    def __init__(self) -> None:
        self._families: dict[int, dict[PowerState, tuple[Node, Figures]]] = {}

    def in_state(self, i: int, node: Node, state: PowerState) -> tuple[Node, Figures]:
        """``replace(node, state=state)`` for node index ``i`` and its figures: the object made
        the last time, while ``node`` is one of this node's family (else the family starts anew
        from it: the node changed other than by its state)."""
        family = self._families.get(i)
        if family is None or (own := family.get(node.state)) is None or own[0] is not node:
            family = self._families[i] = {node.state: (node, figures(node))}
        v = family.get(state)
        if v is None:
            made = replace(node, state=state)
            v = family[state] = (made, figures(made))
        return v
