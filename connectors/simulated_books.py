"""The simulated cluster's own books: what happened to each job, the power between events,
each node's free resources, and the checks a start must pass (the same typed errors a real
RMS connector raises).

The books (:class:`Books`) are flat lists indexed like the node list, and a start or an end
works once per node it names, not once per unit (a job of 2,048 units on 256 nodes of 8 cores
costs 256 steps, not 2,048 lookups of node names). Power is summed node by node in the order
the per-node objects used, so the floats are the very same
(``tests/connectors/test_simulated_books.py``)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from wattsched.connectors.base import PlacementError, RMSCommandError, UnknownNodeError
from wattsched.scheduler.model import (
    RESOURCES,
    Job,
    Node,
    PowerCap,
    PowerState,
    placement_error,
)


@dataclass(slots=True)
class JobRecord:
    """What happened to one job in the simulation."""

    job: Job
    submit: int
    start: int | None = None
    end: int | None = None
    nodes: tuple[str, ...] = ()
    power_w: float = 0.0
    killed: bool = False


@dataclass(slots=True)
class PowerSample:
    """The cluster between two events: from ``time`` on, until the next sample."""

    time: int
    it_power_w: float
    cap_w: float
    nodes_on: int
    queued: int
    running: int


class Books:
    """Every node's books, in lists indexed like the node list: free resources (``free[i]``,
    RESOURCES order), busy units, exclusive jobs, whether a job may start there now
    (``usable``: on and available); once :meth:`track_jobs` asked, each node's jobs and the
    power of its busy units (``unit_w``, for the thermal cluster).

    ``placed`` keeps each running job's placement (node indexes in the order its start named
    them first, units per node, the power of those units per node) for its end.
    """

    __slots__ = (
        "busy",
        "exclusive",
        "exclusive_jobs",
        "first_core_w",
        "free",
        "has_first_core",
        "models",
        "node_jobs",
        "placed",
        "uniform",
        "unit_w",
        "unusable",
        "usable",
    )

    def __init__(self, nodes: Sequence[Node]) -> None:
        self.free: list[list[int]] = [list(node.capacity.as_tuple()) for node in nodes]
        self.busy: list[int] = [0] * len(nodes)
        self.exclusive: list[int] = [0] * len(nodes)
        self.exclusive_jobs = 0
        self.unit_w: list[float] = [0.0] * len(nodes)
        self.usable: list[bool] = [_usable(node) for node in nodes]
        self.unusable = self.usable.count(False)
        self.first_core_w: list[float] = [node.power.first_core_w for node in nodes]
        self.has_first_core = any(self.first_core_w)
        self.models = [node.power for node in nodes]
        self.uniform = all(m == self.models[0] for m in self.models)
        self.placed: dict[str, tuple[list[int], list[int], list[float]]] = {}
        self.node_jobs: list[dict[str, int]] | None = None
        """Job id -> units, per node (kept only once :meth:`track_jobs` asked for it)."""

    def track_jobs(self) -> None:
        """Keep the jobs of each node too (the thermal cluster asks for them per node)."""
        self.node_jobs = [{} for _ in self.models]
        for jid, (ids, ks, _) in self.placed.items():
            for i, k in zip(ids, ks, strict=True):
                self.node_jobs[i][jid] = k

    def set_usable(self, i: int, node: Node) -> None:
        """Node ``i`` changed (power state, availability)."""
        ok = _usable(node)
        self.unusable += int(self.usable[i]) - int(ok)
        self.usable[i] = ok

    def pooled_free(self) -> list[int]:
        """Free resources pooled over the nodes that are on and available."""
        free = [0] * len(RESOURCES)
        for ok, f in zip(self.usable, self.free, strict=True):
            if ok:
                for r, a in enumerate(f):
                    free[r] += a
        return free


def _usable(node: Node) -> bool:
    return node.state is PowerState.ON and node.available


def check_start(
    job: Job,
    nodes: Sequence[str],
    index: Mapping[str, int],
    node_list: Sequence[Node],
    books: Books,
) -> tuple[list[int], list[int]]:
    """Node indexes (in the order ``nodes`` names them first) and units per node of a start
    of ``job`` on ``nodes`` (one name per unit) that the books accept; raises the typed error
    of the first rule it breaks (placement, unknown or unusable node, an exclusive job, room)."""
    why = placement_error(job, nodes)
    if why:
        raise PlacementError(job.id, nodes, why)
    if len(nodes) == 1:
        ids, ks = [index.get(nodes[0], -1)], [1]
    else:
        counts = Counter(nodes)
        get = index.get
        ids = [get(name, -1) for name in counts]
        ks = list(counts.values())
    if not _accepts(job, ids, ks, books):
        _refuse(job, nodes, index, node_list, books)
        raise AssertionError(f"start of {job.id} refused by the books, not by the rules")
    return ids, ks


def _accepts(job: Job, ids: list[int], ks: list[int], books: Books) -> bool:
    """Whether the nodes ``ids`` (-1: unknown) are usable, clash with no exclusive job and
    have room for ``ks`` units each (plain loops: most starts name a few nodes)."""
    if min(ids) < 0:
        return False
    if books.unusable:
        usable = books.usable
        for i in ids:
            if not usable[i]:
                return False
    if job.exclusive or books.exclusive_jobs:
        clash = books.busy if job.exclusive else books.exclusive
        for i in ids:
            if clash[i]:
                return False
    free = books.free
    for r, a in enumerate(job.unit.as_tuple()):
        if a:
            if a * max(ks) <= min([free[i][r] for i in ids]):
                continue  # room on every node for the most units any of them gets
            for i, k in zip(ids, ks, strict=True):
                if a * k > free[i][r]:
                    return False
    return True


def _refuse(
    job: Job,
    nodes: Sequence[str],
    index: Mapping[str, int],
    node_list: Sequence[Node],
    books: Books,
) -> None:
    """Raise the error of the first rule a start breaks, checked one unit at a time in the
    order a real RMS reports it (the slow path, only for refused starts)."""
    want: dict[int, int] = {}
    for name in nodes:
        i = index.get(name)
        if i is None:
            raise UnknownNodeError(f"node {name!r} does not exist", node=name)
        node = node_list[i]
        if node.state is not PowerState.ON or not node.available:
            raise RMSCommandError(["start", job.id, name], 1, f"node {name} is {node.state.value}")
        want[i] = want.get(i, 0) + 1
    for i in want:
        if books.busy[i] and (job.exclusive or books.exclusive[i]):
            raise PlacementError(
                job.id, nodes, f"node {node_list[i].name} is shared with an exclusive job"
            )
    needed = [(r, a) for r, a in enumerate(job.unit.as_tuple()) if a]
    for i, k in want.items():
        free = books.free[i]
        for r, amount in needed:
            if amount * k > free[r]:
                raise RMSCommandError(
                    ["start", job.id, node_list[i].name],
                    1,
                    f"node {node_list[i].name} lacks {RESOURCES[r]}: "
                    f"{amount * k} asked, {free[r]} free",
                )


def seconds_above(cap: PowerCap, watts: float, start: int, end: int) -> int:
    """Seconds of ``[start, end)`` during which ``watts`` is above ``cap`` (the cap may step
    inside the span: counted piecewise)."""
    out = 0
    a = start
    while a < end:
        b = cap.next_change(a)
        b = end if b is None or b > end else b
        if watts > cap.at(a) + 1e-6:
            out += b - a
        a = b
    return out


def book_start(job: Job, ids: list[int], ks: list[int], books: Books) -> float:
    """Book ``ks[n]`` units of ``job`` on node ``ids[n]`` (as :func:`check_start` returns
    them); returns the power it adds: node by node, the first core of a node it wakes, then its
    units."""
    needed = [(r, a) for r, a in enumerate(job.unit.as_tuple()) if a]
    free, busy, first_core = books.free, books.busy, books.first_core_w
    flat = job.unit_power_w
    if flat is None and books.uniform:
        flat = books.models[0].unit_watts(job.unit)
    models = books.models
    watts = 0.0
    uwks: list[float]
    if flat is not None and not books.has_first_core and len(needed) == 1:
        # The common case (one resource, one power figure, no first-core cost): the same
        # operations as the loop below, minus the ones that change nothing.
        r, a = needed[0]
        for i, k in zip(ids, ks, strict=True):
            busy[i] += k
            free[i][r] -= a * k
        uwks = [flat * k for k in ks]
        for u in uwks:
            watts += u
        return _booked(job, ids, ks, uwks, books, watts)
    uwks = []
    for i, k in zip(ids, ks, strict=True):
        if busy[i] == 0:
            watts += first_core[i]
        busy[i] += k
        u = (flat if flat is not None else models[i].unit_watts(job.unit)) * k
        f = free[i]
        for r, a in needed:
            f[r] -= a * k
        watts += u
        uwks.append(u)
    return _booked(job, ids, ks, uwks, books, watts)


def _booked(
    job: Job, ids: list[int], ks: list[int], uwks: list[float], books: Books, watts: float
) -> float:
    if job.exclusive:
        books.exclusive_jobs += 1
        for i in ids:
            books.exclusive[i] += 1
    books.placed[job.id] = (ids, ks, uwks)
    if books.node_jobs is not None:
        unit_w = books.unit_w
        for i, k, u in zip(ids, ks, uwks, strict=True):
            books.node_jobs[i][job.id] = k
            unit_w[i] += u
    return watts


def book_end(job: Job, books: Books, pool: list[int]) -> list[float]:
    """Release an ended job's units from the books (and from ``pool``, the free resources of
    the usable nodes); returns the power it stops drawing, term by term, in the order the
    cluster subtracts them: node by node, its units, then its first core if it is idle now
    (only the units when no node has a first-core cost)."""
    ids, ks, uwks = books.placed.pop(job.id)
    needed = [(r, a) for r, a in enumerate(job.unit.as_tuple()) if a]
    free, busy, usable = books.free, books.busy, books.usable
    if len(needed) == 1:
        r, a = needed[0]
        for i, k in zip(ids, ks, strict=True):
            busy[i] -= k
            free[i][r] += a * k
    else:
        for i, k in zip(ids, ks, strict=True):
            busy[i] -= k
            f = free[i]
            for r, a in needed:
                f[r] += a * k
    # units released on usable nodes
    back = sum(k for i, k in zip(ids, ks, strict=True) if usable[i]) if books.unusable else sum(ks)
    for r, a in needed:
        pool[r] += a * back
    if job.exclusive:
        books.exclusive_jobs -= 1
        for i in ids:
            books.exclusive[i] -= 1
    if books.node_jobs is not None:
        unit_w = books.unit_w
        for i, u in zip(ids, uwks, strict=True):
            del books.node_jobs[i][job.id]
            unit_w[i] = 0.0 if busy[i] == 0 else unit_w[i] - u
    if not books.has_first_core:
        return uwks
    out: list[float] = []
    first_core = books.first_core_w
    for i, u in zip(ids, uwks, strict=True):
        out.append(u)
        if busy[i] == 0:
            out.append(first_core[i])
    return out
