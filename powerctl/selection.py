"""Choosing which nodes to switch, shared by every policy.

EECluster's node choice: nodes whose last power command worked come first, the least efficient
first when powering off and the most efficient first when powering on; nodes that failed come
after them, the oldest failure first (so a broken node is not picked again and again). On top
of it, the power cap: a node is only switched when its extra draw (booting, then idling) fits
under the cap with what runs and starts now.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import NamedTuple

from wattsched.powerctl.policy import DEFAULT_BACKOFF_S
from wattsched.scheduler.model import Job, Node, Placement, Plan, PowerState, Resources, Snapshot


def _order_key_off(node: Node) -> tuple[int, float, str]:
    if node.last_power_failure is None:
        return (0, node.efficiency, node.name)
    return (1, float(node.last_power_failure), node.name)


def _order_key_on(node: Node) -> tuple[int, float, str]:
    if node.last_power_failure is None:
        return (0, -node.efficiency, node.name)
    return (1, float(node.last_power_failure), node.name)


def order_for_off(nodes: Iterable[Node]) -> list[Node]:
    """Nodes in the order to power them off: least efficient first, failed ones last."""
    return sorted(nodes, key=_order_key_off)


def order_for_on(nodes: Iterable[Node]) -> list[Node]:
    """Nodes in the order to power them on: most efficient first, failed ones last."""
    return sorted(nodes, key=_order_key_on)


def without(nodes: Sequence[Node], taken: Sequence[Node]) -> list[Node]:
    """``nodes`` but those named in ``taken`` (by name: a node's fields are many to compare)."""
    if not taken:
        return list(nodes)
    names = {n.name for n in taken}
    return [n for n in nodes if n.name not in names]


def power_on_candidates(snap: Snapshot, backoff_s: int = DEFAULT_BACKOFF_S) -> list[Node]:
    """OFF or FAILED nodes that may be powered on, in :func:`order_for_on` order.

    Drained or reserved nodes are left off (nothing could be placed on them), and so is a node
    that failed a power command less than ``backoff_s`` ago.
    """
    out = [
        n
        for n in snap.nodes
        if n.state in (PowerState.OFF, PowerState.FAILED)
        and n.available
        and (n.last_power_failure is None or snap.time - n.last_power_failure >= backoff_s)
    ]
    return order_for_on(out)


def draw_w(
    snap: Snapshot,
    plan: Plan,
    running: RunningDraw | None = None,
    queued: Mapping[str, Job] | None = None,
) -> float:
    """The IT power drawn once the plan's starts of this cycle run (the simulator's model).

    ``running`` (:func:`running_draw` of ``snap``) and ``queued`` (job id -> job of
    ``snap.queued``) may be given when already known: the very same sums."""
    total, busy_now = running if running is not None else running_draw(snap)
    if queued is None:
        queued = {j.id: j for j in snap.queued}
    placed = [(queued[a.job_id], a.nodes) for a in plan.starts_now() if a.job_id in queued]
    if not placed:
        return total
    index = {n.name: n for n in snap.nodes}
    return _add_units(total, set(busy_now), placed, index)


RunningDraw = tuple[float, frozenset[str]]
"""The draw of the nodes and the running jobs, and the nodes they keep busy."""


def static_draw(nodes: Sequence[Node]) -> float:
    """The draw of ``nodes`` in their power states, with no job."""
    return sum(n.power.state_watts(n.state) for n in nodes)


def running_draw(
    snap: Snapshot, static: float | None = None, index: Mapping[str, Node] | None = None
) -> RunningDraw:
    """The draw of ``snap``'s nodes in their power states and of its running jobs.

    ``static`` (:func:`static_draw` of ``snap.nodes``) and ``index`` (name -> node of
    ``snap.nodes``) may be given when already known: the very same sums."""
    if index is None:
        index = {n.name: n for n in snap.nodes}
    total = static_draw(snap.nodes) if static is None else static
    busy: set[str] = set()
    total = _add_units(total, busy, [(rj.job, rj.nodes) for rj in snap.running], index)
    return total, frozenset(busy)


def _add_units(
    total: float,
    busy: set[str],
    placed: Sequence[tuple[Job, tuple[str, ...]]],
    index: Mapping[str, Node],
) -> float:
    for job, nodes in placed:
        for name in nodes:
            node = index.get(name)
            if node is None:
                continue
            total += (
                job.unit_power_w
                if job.unit_power_w is not None
                else node.power.unit_watts(job.unit)
            )
            if name not in busy:
                busy.add(name)
                total += node.power.first_core_w
    return total


def on_extra_w(node: Node) -> float:
    """The most a node adds to the draw while booting and then idling."""
    return max(node.power.transition_w, node.power.idle_w) - node.power.state_watts(node.state)


def off_extra_w(node: Node) -> float:
    """What a node adds to the draw while shutting down (0 unless that costs more than idling)."""
    return max(0.0, node.power.transition_w - node.power.idle_w)


def fits_cap(snap: Snapshot, draw: float, extra: float, node: Node) -> bool:
    """True when ``draw + extra`` stays under the cap until ``node``'s transition is over."""
    horizon = max(node.boot_s, node.shutdown_s) + 1
    return draw + extra <= snap.cap.min_over(snap.time, snap.time + horizon) + 1e-6


def free_capacity(snap: Snapshot, states: Sequence[PowerState]) -> Resources:
    """Pooled capacity of available nodes in ``states``, minus what running jobs use there."""
    nodes = {n.name: n for n in snap.nodes if n.state in states and n.available}
    total = [0, 0, 0, 0]
    for n in nodes.values():
        for i, a in enumerate(n.capacity.as_tuple()):
            total[i] += a
    for rj in snap.running:
        for name in rj.nodes:
            if name in nodes:
                for i, a in enumerate(rj.job.unit.as_tuple()):
                    total[i] -= a
    return Resources(*(max(0, x) for x in total))


def queued_need(snap: Snapshot) -> Resources:
    """Pooled requirement of every queued (not held) job."""
    total = [0, 0, 0, 0]
    for j in snap.queued:
        if j.held:
            continue
        for i, a in enumerate(j.total.as_tuple()):
            total[i] += a
    return Resources(*total)


class Shape(NamedTuple):
    """A unit shape of the queue and how many units of it one node may take (None: as many as
    fit; 1 for jobs whose units are scattered). A packed job is one unit of its whole need."""

    unit: Resources
    per_node: int | None = None


def node_room(shape: Shape, node: Node) -> int:
    """How many units of this shape an empty ``node`` holds."""
    return _room(shape, node.capacity)


def _room(shape: Shape, capacity: Resources) -> int:
    room: int | None = None
    for need, have in zip(shape.unit.as_tuple(), capacity.as_tuple(), strict=True):
        if need:
            room = have // need if room is None else min(room, have // need)
    room = room or 0
    return room if shape.per_node is None else min(room, shape.per_node)


def queue_shapes(snap: Snapshot) -> dict[Shape, int]:
    """Each unit shape of the queued (not held) jobs -> the most units one job asks of it,
    with the jobs' placement rules (scattered units: one a node; packed: one unit of all)."""
    shapes: dict[Shape, int] = {}
    for j in snap.queued:
        if j.held:
            continue
        shape, units = job_shape(j)
        if units > shapes.get(shape, 0):
            shapes[shape] = units
    return shapes


def job_shape(j: Job) -> tuple[Shape, int]:
    """The unit shape of ``j`` and how many units it asks of it (see :func:`queue_shapes`)."""
    if j.placement is Placement.PACK:
        return Shape(j.total), 1
    if j.placement is Placement.SCATTER:
        return Shape(j.unit, 1), j.units
    return Shape(j.unit), j.units


def shape_rooms(shapes: Mapping[Shape, int], nodes: Iterable[Node]) -> dict[Shape, int]:
    """How many units of each shape ``nodes`` hold when empty."""
    kinds = Counter(n.capacity for n in nodes)  # clusters have few node shapes
    return {u: sum(k * _room(u, c) for c, k in kinds.items()) for u in shapes}


def missing_units(shapes: Mapping[Shape, int], nodes: Iterable[Node]) -> dict[Shape, int]:
    """Shapes some queued job cannot place on ``nodes`` even empty -> units missing."""
    rooms = shape_rooms(shapes, nodes)
    return {u: k - rooms[u] for u, k in shapes.items() if k > rooms[u]}


def keeps_shapes(node: Node, shapes: Mapping[Shape, int], rooms: dict[Shape, int]) -> bool:
    """True when every queued job still fits the powered nodes without ``node``."""
    return all(rooms[u] - node_room(u, node) >= k for u, k in shapes.items())


def choose_on(
    snap: Snapshot,
    plan: Plan,
    candidates: Sequence[Node],
    shortfall: Resources,
    *,
    must_fit: Mapping[Shape, int] | None = None,
    max_nodes: int | None = None,
    draw_of: Callable[[], float] | None = None,
) -> list[Node]:
    """Candidates to power on, in order, until ``shortfall`` is covered and every unit in
    the units of ``must_fit`` (shape -> units missing) have room on the chosen nodes, skipping
    nodes whose extra draw would break the cap.

    Nodes that help with neither are not chosen. ``draw_of``: the :func:`draw_w` of this
    cycle when the caller keeps it (asked at most once).
    """
    if not candidates:
        return []
    need = list(shortfall.as_tuple())
    unfit = {u: k for u, k in must_fit.items() if k > 0} if must_fit else {}
    if not unfit and max(need) <= 0:
        return []  # nothing to cover: the loop below would stop at its first node
    draw: float | None = None  # computed on first use: most cycles choose nothing
    chosen: list[Node] = []
    for node in candidates:
        if max_nodes is not None and len(chosen) >= max_nodes:
            break
        if not unfit and max(need) <= 0:
            break
        cap = node.capacity.as_tuple()
        helps = any(x > 0 and c > 0 for x, c in zip(need, cap, strict=True)) or any(
            node_room(u, node) > 0 for u in unfit
        )
        if not helps:
            continue
        if snap.cap.limited:  # with no cap no draw is refused: it is not computed
            extra = on_extra_w(node)
            if draw is None:
                draw = draw_w(snap, plan) if draw_of is None else draw_of()
            if not fits_cap(snap, draw, extra, node):
                continue
            draw += extra
        chosen.append(node)
        need = [x - c for x, c in zip(need, cap, strict=True)]
        unfit = {u: k - node_room(u, node) for u, k in unfit.items()}
        unfit = {u: k for u, k in unfit.items() if k > 0}
    return chosen
