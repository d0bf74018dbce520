"""The views a node power policy takes of a snapshot's nodes and queue, and how each is
brought forward to the next snapshot from what changed.

:class:`wattsched.powerctl.views.SnapshotViews` keeps them from one cycle to the next."""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Collection
from dataclasses import dataclass

from wattsched.powerctl.free_tracker import POWERED
from wattsched.powerctl.node_diff import changed_nodes
from wattsched.powerctl.selection import Shape, job_shape, order_for_on
from wattsched.scheduler.model import Job, Node, PowerState, Resources
from wattsched.scheduler.tuple_diff import left_and_appended

_POWERED = POWERED


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


def is_candidate(node: Node, now: int, backoff_s: int) -> bool:
    """The test of :func:`power_on_candidates` for one node."""
    return (
        node.state in (PowerState.OFF, PowerState.FAILED)
        and node.available
        and (node.last_power_failure is None or now - node.last_power_failure >= backoff_s)
    )


def restated(
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
    on_slots = view.on_slots
    all_slots = view.all_slots
    kinds = view.usable_kinds
    off_order = list(view.off_order)
    where = view.where
    n_powered = view.n_powered
    powered_states = _POWERED
    for a, b in changed:
        b_powered = b.state in powered_states
        a_powered = a.state in powered_states
        n_powered += b_powered - a_powered
        # is_usable(b) - is_usable(a), written out
        sign = (b_powered and b.available) - (a_powered and a.available)
        avail = b.available - a.available
        if sign or avail:
            cap = a.capacity.as_tuple()
            if sign:
                on_slots = [s + sign * c for s, c in zip(on_slots, cap, strict=True)]
                if kinds is view.usable_kinds:
                    kinds = dict(kinds)  # copied on the first change only
                k = kinds.get(a.capacity, 0) + sign
                if k > 0:
                    kinds[a.capacity] = k
                else:
                    kinds.pop(a.capacity, None)
            if avail:
                all_slots = [s + avail * c for s, c in zip(all_slots, cap, strict=True)]
        off_order[where[a.name]] = b
    out = NodeView(
        nodes,
        n_powered,
        on_slots if on_slots is not view.on_slots else list(on_slots),
        all_slots if all_slots is not view.all_slots else list(all_slots),
        kinds if kinds is not view.usable_kinds else dict(kinds),
        off_order,
        where,
        on_rank=view.on_rank,
    )
    if view.candidates is not None and now < view.candidates_until:
        backoff_s = view.candidates_backoff
        new = {b.name: b for _, b in changed}
        if out.on_rank is None:
            out.on_rank = {n.name: i for i, n in enumerate(order_for_on(nodes))}
        rank = out.on_rank
        if len(rank) == len(nodes):
            out.candidates = recandidates(view.candidates, new, rank, now, backoff_s)
        else:  # a name comes twice: the stable sort by name's rank, as made afresh
            cands = [n for n in view.candidates if n.name not in new]
            added = [b for b in new.values() if is_candidate(b, now, backoff_s)]
            out.candidates = sorted(cands + added, key=lambda n: rank[n.name])
        out.candidates_until = view.candidates_until
        out.candidates_backoff = backoff_s
    return out


def recandidates(
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
        if is_candidate(b, now, backoff_s):
            insort(out, b, key=key)
    return out


def _asked(j: Job) -> list[int]:
    return [a * j.units for a in j.unit.as_tuple()]


def requeued(
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
