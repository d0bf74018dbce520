"""What a node power policy derives from a snapshot, kept from one cycle to the next.

A replay asks a policy at every event (and at its own wake-ups), while the nodes change only
when one is switched and the queue only at arrivals and starts. :class:`SnapshotViews`
recomputes each derived figure only when the snapshot part it comes from is a different
object than last time (the simulated cluster hands out the very same tuples while nothing
changed; a real RMS builds new ones, which only costs the recomputation). The figures are
exactly those the policy would compute from scratch.
"""

from __future__ import annotations

import math
from collections import Counter

from wattsched.powerctl.free_tracker import POWERED, FreeTracker
from wattsched.powerctl.policy import DEFAULT_BACKOFF_S
from wattsched.powerctl.selection import (
    RunningDraw,
    Shape,
    _room,
    draw_w,
    order_for_off,
    power_on_candidates,
    queue_shapes,
    running_draw,
    static_draw,
)
from wattsched.powerctl.view_moves import NodeView, QueueView, requeued, restated
from wattsched.scheduler.model import (
    RESOURCES,
    Job,
    Node,
    Plan,
    Resources,
    Snapshot,
)

_POWERED = POWERED


def capacity(nodes: list[Node]) -> list[int]:
    """Pooled capacity of ``nodes`` per resource (slots: cores, and the other resources)."""
    rows = [n.capacity.as_tuple() for n in nodes]
    return [sum(col) for col in zip(*rows, strict=True)] if rows else [0] * len(RESOURCES)


class SnapshotViews:
    """Node, queue and running views of the last snapshots seen (see the module docstring)."""

    def __init__(self) -> None:
        self._nodes: tuple[Node, ...] | None = None
        self._node_view: NodeView | None = None
        self._queued: tuple[Job, ...] | None = None
        self._queue_view: QueueView | None = None
        self._rooms_key: tuple[object, object] | None = None
        self._rooms: dict[Shape, int] = {}
        self._room_of: dict[tuple[Shape, Resources], int] = {}
        """:func:`~wattsched.powerctl.selection._room` of each shape and node capacity seen."""
        self._draw_key: tuple[object, object] | None = None
        self._draw: RunningDraw | None = None
        self._static_of: tuple[Node, ...] | None = None
        self._static = 0.0
        self._index: dict[str, Node] = {}
        self._by_id_of: tuple[Job, ...] | None = None
        self._by_id: dict[str, Job] = {}
        self._free_key: tuple[object, object] | None = None
        self._free: Resources | None = None
        self._used = FreeTracker()

    def nodes(self, snap: Snapshot) -> NodeView:
        """The view of ``snap.nodes``."""
        if self._node_view is not None and snap.nodes is not self._nodes:
            view = restated(self._node_view, self._nodes, snap.nodes, snap.time)
            if view is not None:
                self._node_view = view
                self._nodes = snap.nodes
        if self._node_view is None or snap.nodes is not self._nodes:
            powered = [n for n in snap.nodes if n.state in _POWERED]
            usable = [n for n in powered if n.available]
            off_order = order_for_off(snap.nodes)
            self._node_view = NodeView(
                nodes=snap.nodes,
                n_powered=len(powered),
                on_slots=capacity(usable),
                all_slots=capacity([n for n in snap.nodes if n.available]),
                usable_kinds=Counter(n.capacity for n in usable),
                off_order=off_order,
                where={n.name: i for i, n in enumerate(off_order)},
                _powered=powered,
            )
            self._nodes = snap.nodes
        return self._node_view

    def candidates(self, snap: Snapshot, backoff_s: int = DEFAULT_BACKOFF_S) -> list[Node]:
        """:func:`power_on_candidates` of ``snap`` (kept until a node's back-off ends)."""
        view = self.nodes(snap)
        if (
            view.candidates is None
            or snap.time >= view.candidates_until
            or view.candidates_backoff != backoff_s
        ):
            view.candidates = power_on_candidates(snap, backoff_s)
            view.candidates_backoff = backoff_s
            # A back-off that ends later changes the answer then, and nothing else in time does.
            ends = [
                n.last_power_failure + backoff_s
                for n in snap.nodes
                if n.last_power_failure is not None and n.last_power_failure + backoff_s > snap.time
            ]
            view.candidates_until = min(ends, default=math.inf)
        return list(view.candidates)

    def queue(self, snap: Snapshot) -> QueueView:
        """The view of ``snap.queued``."""
        if self._queue_view is not None and snap.queued is not self._queued:
            view = requeued(self._queue_view, self._queued, snap.queued)
            if view is not None:
                self._queue_view = view
                self._queued = snap.queued
        if self._queue_view is None or snap.queued is not self._queued:
            queued = [j for j in snap.queued if not j.held]
            asked = [tuple(a * j.units for a in j.unit.as_tuple()) for j in queued]
            cols = list(zip(*asked, strict=True))
            most = [max(col) for col in cols] if asked else [0] * 4
            need = [sum(col) for col in cols] if asked else [0] * 4
            self._queue_view = QueueView(
                queued, sum(j.submit for j in queued), most, queue_shapes(snap), need
            )
            self._queued = snap.queued
        return self._queue_view

    def draw(self, snap: Snapshot, plan: Plan) -> float:
        """:func:`wattsched.powerctl.selection.draw_w` of this cycle (the draw of the nodes
        and running jobs kept while they are the same tuples)."""
        if (
            self._draw is None
            or self._draw_key is None
            or (snap.nodes is not self._draw_key[0] or snap.running is not self._draw_key[1])
        ):
            if self._static_of is not snap.nodes:
                self._static = static_draw(snap.nodes)
                self._index = {n.name: n for n in snap.nodes}
                self._static_of = snap.nodes
            self._draw = running_draw(snap, self._static, self._index)
            self._draw_key = (snap.nodes, snap.running)
        if snap.queued is not self._by_id_of:
            self._by_id = {j.id: j for j in snap.queued}
            self._by_id_of = snap.queued
        return draw_w(snap, plan, self._draw, self._by_id)

    def free(self, snap: Snapshot) -> Resources:
        """:func:`wattsched.powerctl.selection.free_capacity` of the usable (powered and
        available) nodes, kept while the nodes and the running jobs are the same tuples and
        brought along when they change (:class:`~wattsched.powerctl.free_tracker.FreeTracker`)."""
        if (
            self._free is None
            or self._free_key is None
            or snap.nodes is not self._free_key[0]
            or snap.running is not self._free_key[1]
        ):
            slots = self.nodes(snap).on_slots
            used = self._used.used(snap.nodes, snap.running)
            self._free = Resources(*(max(0, s - u) for s, u in zip(slots, used, strict=True)))
            self._free_key = (snap.nodes, snap.running)
        return self._free

    def shape_rooms(self, snap: Snapshot) -> dict[Shape, int]:
        """How many units of each queued shape the usable nodes hold when empty
        (:func:`wattsched.powerctl.selection.shape_rooms` of the usable nodes)."""
        key = (snap.nodes, snap.queued)
        if (
            self._rooms_key is None
            or key[0] is not self._rooms_key[0]
            or (key[1] is not self._rooms_key[1])
        ):
            kinds = self.nodes(snap).usable_kinds
            room_of = self._room_of
            if len(room_of) > 4096:
                room_of.clear()  # a long-lived daemon's shapes come and go
            rooms: dict[Shape, int] = {}
            for u in self.queue(snap).shapes:
                total = 0
                for c, k in kinds.items():
                    r = room_of.get((u, c))
                    if r is None:
                        r = room_of[u, c] = _room(u, c)
                    total += k * r
                rooms[u] = total
            self._rooms = rooms
            self._rooms_key = key
        return self._rooms
