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
from bisect import bisect_left, insort
from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass

from wattsched.powerctl.free_tracker import POWERED, FreeTracker, is_usable
from wattsched.powerctl.node_diff import changed_nodes
from wattsched.powerctl.policy import DEFAULT_BACKOFF_S
from wattsched.powerctl.selection import (
    RunningDraw,
    Shape,
    _room,
    draw_w,
    job_shape,
    order_for_off,
    order_for_on,
    power_on_candidates,
    queue_shapes,
    running_draw,
    static_draw,
)
from wattsched.scheduler.model import (
    RESOURCES,
    Job,
    Node,
    Plan,
    PowerState,
    Resources,
    Snapshot,
)
from wattsched.scheduler.tuple_diff import left_and_appended

_POWERED = POWERED


def capacity(nodes: list[Node]) -> list[int]:
    """Pooled capacity of ``nodes`` per resource (slots: cores, and the other resources)."""
    rows = [n.capacity.as_tuple() for n in nodes]
    return [sum(col) for col in zip(*rows, strict=True)] if rows else [0] * len(RESOURCES)


@dataclass(slots=True)
class NodeView:
    """The nodes of one snapshot, as the policies look at them."""

    nodes: tuple[Node, ...]
    n_powered: int
    """How many are ON or booting."""
    on_slots: list[int]
    """Pooled capacity of the usable nodes."""
    all_slots: list[int]
    """Pooled capacity of every available node."""
    usable_kinds: dict[Resources, int]
    """Capacities of the usable nodes and how many have each."""
    off_order: list[Node]
    """Every node in the order to power them off."""
    where: dict[str, int]
    """Node name -> its position in ``off_order``."""
    candidates: list[Node] | None = None
    candidates_until: float = 0.0
    """``candidates`` hold before this time: the first end of a node's back-off after they
    were computed (infinite when no node is in back-off)."""
    candidates_backoff: int = -1
    """The back-off ``candidates`` were computed with."""
    on_rank: dict[str, int] | None = None
    """Node name -> its position in :func:`order_for_on` of every node (made on first use)."""
    _powered: list[Node] | None = None

    @property
    def powered(self) -> list[Node]:
        """The ON or booting nodes, in the snapshot's order."""
        if self._powered is None:
            self._powered = [n for n in self.nodes if n.state in _POWERED]
        return self._powered

    def in_off_order(self, names: Collection[str]) -> list[Node]:
        """The nodes named in ``names``, in ``off_order`` (the same as filtering the whole
        off order by ``names``, looking only at the named nodes)."""
        order, where = self.off_order, self.where
        if len(where) != len(order):  # a name comes twice: every node of it, the long way
            return [n for n in order if n.name in names]
        return [order[i] for i in sorted([where[x] for x in names if x in where])]

    @property
    def usable(self) -> list[Node]:
        """The powered and available nodes, in the snapshot's order."""
        return [n for n in self.powered if n.available]


@dataclass(slots=True)
class QueueView:
    """The eligible (not held) queued jobs of one snapshot, as the policies look at them."""

    queued: list[Job]
    submit_sum: int
    most: list[int]
    """The largest request of each resource among them."""
    shapes: dict[Shape, int]
    need: list[int]
    """Their pooled need of each resource."""

    def mean_wait(self, now: int) -> float:
        """Mean wait of the queued jobs at ``now`` (0 when none wait)."""
        n = len(self.queued)
        return (n * now - self.submit_sum) / n if n else 0.0


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
            view = _restated(self._node_view, self._nodes, snap.nodes, snap.time)
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
            view = _requeued(self._queue_view, self._queued, snap.queued)
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


def _candidate(node: Node, now: int, backoff_s: int) -> bool:
    """The test of :func:`power_on_candidates` for one node."""
    return (
        node.state in (PowerState.OFF, PowerState.FAILED)
        and node.available
        and (node.last_power_failure is None or now - node.last_power_failure >= backoff_s)
    )


def _restated(
    view: NodeView, old: tuple[Node, ...] | None, nodes: tuple[Node, ...], now: int
) -> NodeView | None:
    """``view`` brought to ``nodes`` when only power states or availability changed (a node
    switched: the common case in a replay), else None.

    The order keys of the changed nodes (name, efficiency, last power failure) are those of
    their old objects, so both node orders keep their places; the power-on candidates are
    those of the view less the changed nodes, plus the changed nodes that now are ones
    (unless the candidates expire by ``now``: then they are left to be made afresh)."""
    changed = None if old is None else changed_nodes(old, nodes)
    if changed is None:
        return None
    for a, b in changed:
        if (
            (a.capacity is not b.capacity and a.capacity != b.capacity)
            or a.efficiency != b.efficiency
            or a.last_power_failure != b.last_power_failure
        ):
            return None
    on_slots = list(view.on_slots)
    all_slots = list(view.all_slots)
    kinds = dict(view.usable_kinds)
    off_order = list(view.off_order)
    where = view.where
    n_powered = view.n_powered
    for a, b in changed:
        cap = a.capacity.as_tuple()
        n_powered += int(b.state in _POWERED) - int(a.state in _POWERED)
        sign = int(is_usable(b)) - int(is_usable(a))
        if sign:
            on_slots = [s + sign * c for s, c in zip(on_slots, cap, strict=True)]
            k = kinds.get(a.capacity, 0) + sign
            if k > 0:
                kinds[a.capacity] = k
            else:
                kinds.pop(a.capacity, None)
        avail = int(b.available) - int(a.available)
        if avail:
            all_slots = [s + avail * c for s, c in zip(all_slots, cap, strict=True)]
        off_order[where[a.name]] = b
    out = NodeView(
        nodes=nodes,
        n_powered=n_powered,
        on_slots=on_slots,
        all_slots=all_slots,
        usable_kinds=kinds,
        off_order=off_order,
        where=where,
        on_rank=view.on_rank,
    )
    if view.candidates is not None and now < view.candidates_until:
        backoff_s = view.candidates_backoff
        new = {b.name: b for _, b in changed}
        if out.on_rank is None:
            out.on_rank = {n.name: i for i, n in enumerate(order_for_on(nodes))}
        rank = out.on_rank
        if len(rank) == len(nodes):
            out.candidates = _recandidates(view.candidates, new, rank, now, backoff_s)
        else:  # a name comes twice: the stable sort by name's rank, as made afresh
            cands = [n for n in view.candidates if n.name not in new]
            added = [b for b in new.values() if _candidate(b, now, backoff_s)]
            out.candidates = sorted(cands + added, key=lambda n: rank[n.name])
        out.candidates_until = view.candidates_until
        out.candidates_backoff = backoff_s
    return out


def _recandidates(
    cands: list[Node], new: dict[str, Node], rank: dict[str, int], now: int, backoff_s: int
) -> list[Node]:
    """The power-on candidates ``cands`` (in ``rank`` order: every node's position in the on
    order, by name) less the nodes named in ``new``, plus those of ``new`` that now are ones,
    in ``rank`` order (the nodes' names distinct: each found by bisection)."""
    key = lambda n: rank[n.name]  # noqa: E731
    out = list(cands)
    for name in new:
        i = bisect_left(out, rank[name], key=key)
        if i < len(out) and out[i].name == name:
            del out[i]
    for b in new.values():
        if _candidate(b, now, backoff_s):
            insort(out, b, key=key)
    return out


def _asked(j: Job) -> list[int]:
    return [a * j.units for a in j.unit.as_tuple()]


def _requeued(
    view: QueueView, old: tuple[Job, ...] | None, queued: tuple[Job, ...]
) -> QueueView | None:
    """``view`` brought to ``queued`` from the jobs that came and went (by object), or None
    when a job that left may have held a largest request (then it is made afresh).

    The jobs that went and came are those of :func:`left_and_appended` (``queued`` is ``old``
    less them, then the new ones: the figures are sums and maxima over the jobs, so a job
    listed both as gone and as come, in a reordered tuple, only costs the two updates)."""
    if old is None:
        return None
    diff = left_and_appended(old, queued, len(old))
    if diff is None:
        return None
    gone = [j for j in diff[0] if not j.held]
    came = [j for j in diff[1] if not j.held]
    most, need, shapes = list(view.most), list(view.need), dict(view.shapes)
    submit_sum = view.submit_sum
    for j in gone:
        asked = _asked(j)
        if any(a and a == m for a, m in zip(asked, most, strict=True)):
            return None
        shape, units = job_shape(j)
        if units >= shapes.get(shape, 0):
            return None
        need = [n - a for n, a in zip(need, asked, strict=True)]
        submit_sum -= j.submit
    for j in came:
        asked = _asked(j)
        most = [max(m, a) for m, a in zip(most, asked, strict=True)]
        need = [n + a for n, a in zip(need, asked, strict=True)]
        shape, units = job_shape(j)
        if units > shapes.get(shape, 0):
            shapes[shape] = units
        submit_sum += j.submit
    return QueueView([j for j in queued if not j.held], submit_sum, most, shapes, need)
