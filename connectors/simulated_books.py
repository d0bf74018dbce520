"""The simulated cluster's own books: what happened to each job, the power between events,
each node's free resources, and the checks a start must pass (the same typed errors a real
RMS connector raises).

The books (:class:`Books`) are numpy arrays indexed like the node list, and a start or an
end is one compiled call (:mod:`~wattsched.connectors.simulated_kernels`) that counts the
units per node once and works once per node, not once per unit. Power is summed node by node
in the order the per-node objects used, so the floats are the very same
(``tests/connectors/test_simulated_books.py``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import repeat

import numpy as np

from wattsched.connectors.base import PlacementError, RMSCommandError, UnknownNodeError
from wattsched.connectors.simulated_kernels import accept, book, release
from wattsched.scheduler.model import (
    RESOURCES,
    Job,
    Node,
    PowerCap,
    PowerState,
    Resources,
    placement_error,
)
from wattsched.scheduler.node_arrays import BoolArray, FloatArray, IntArray

_NO_W: FloatArray = np.empty(0, np.float64)


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
    """Every node's books, in numpy arrays indexed like the node list (what the kernels of
    :mod:`~wattsched.connectors.simulated_kernels` update): free resources (``free[i]``,
    RESOURCES order), busy units, exclusive jobs, whether a job may start there now
    (``usable``: on and available); once :meth:`track_jobs` asked, each node's jobs and the
    power of its busy units (``unit_w``, lists, for the thermal cluster).

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
        "pos",
        "reqs",
        "uniform",
        "unit_w",
        "unusable",
        "usable",
    )

    def __init__(self, nodes: Sequence[Node]) -> None:
        n = len(nodes)
        self.free: IntArray = np.array(
            [node.capacity.as_tuple() for node in nodes], np.int64
        ).reshape(n, len(RESOURCES))
        self.busy: IntArray = np.zeros(n, np.int64)
        self.exclusive: IntArray = np.zeros(n, np.int64)
        self.exclusive_jobs = 0
        self.unit_w: list[float] = [0.0] * n
        self.usable: BoolArray = np.array([_usable(node) for node in nodes], np.bool_)
        self.unusable = n - int(self.usable.sum())
        self.first_core_w: FloatArray = np.array(
            [node.power.first_core_w for node in nodes], np.float64
        )
        self.has_first_core = bool(self.first_core_w.any())
        self.models = [node.power for node in nodes]
        self.uniform = all(m == self.models[0] for m in self.models)
        self.placed: dict[str, tuple[IntArray, IntArray, FloatArray]] = {}
        self.pos: IntArray = np.full(n, -1, np.int64)
        """Scratch of :func:`~wattsched.connectors.simulated_kernels.accept`."""
        self.reqs: dict[Resources, IntArray] = {}
        self.node_jobs: list[dict[str, int]] | None = None
        """Job id -> units, per node (kept only once :meth:`track_jobs` asked for it)."""

    def track_jobs(self) -> None:
        """Keep the jobs of each node too (the thermal cluster asks for them per node)."""
        self.node_jobs = [{} for _ in self.models]
        for jid, (ids, ks, _) in self.placed.items():
            for i, k in zip(ids.tolist(), ks.tolist(), strict=True):
                self.node_jobs[i][jid] = k

    def set_usable(self, i: int, node: Node) -> None:
        """Node ``i`` changed (power state, availability)."""
        ok = _usable(node)
        self.unusable += int(self.usable[i]) - int(ok)
        self.usable[i] = ok

    def pooled_free(self) -> list[int]:
        """Free resources pooled over the nodes that are on and available."""
        return [int(a) for a in self.free[self.usable].sum(axis=0)]

    def req(self, unit: Resources) -> IntArray:
        """A unit's requirement as an array (one per distinct unit)."""
        a = self.reqs.get(unit)
        if a is None:
            a = self.reqs[unit] = np.array(unit.as_tuple(), np.int64)
        return a


def _usable(node: Node) -> bool:
    return node.state is PowerState.ON and node.available


def check_start(
    job: Job,
    nodes: Sequence[str],
    index: Mapping[str, int],
    node_list: Sequence[Node],
    books: Books,
) -> tuple[IntArray, IntArray]:
    """Node indexes (in the order ``nodes`` names them first) and units per node of a start
    of ``job`` on ``nodes`` (one name per unit) that the books accept; raises the typed error
    of the first rule it breaks (placement, unknown or unusable node, an exclusive job, room)."""
    why = placement_error(job, nodes)
    if why:
        raise PlacementError(job.id, nodes, why)
    unit_ids = np.fromiter(map(index.get, nodes, repeat(-1)), np.int64, len(nodes))
    ok, ids, ks = accept(
        unit_ids,
        books.req(job.unit),
        job.exclusive,
        books.exclusive_jobs > 0,
        books.unusable > 0,
        books.free,
        books.busy,
        books.exclusive,
        books.usable,
        books.pos,
    )
    if not ok:
        _refuse(job, nodes, index, node_list, books)
        raise AssertionError(f"start of {job.id} refused by the books, not by the rules")
    return ids, ks


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


def book_start(job: Job, ids: IntArray, ks: IntArray, books: Books) -> float:
    """Book ``ks[n]`` units of ``job`` on node ``ids[n]`` (as :func:`check_start` returns
    them); returns the power it adds: node by node, the first core of a node it wakes, then its
    units."""
    flat = job.unit_power_w
    if flat is None and books.uniform:
        flat = books.models[0].unit_watts(job.unit)
    node_w = _NO_W
    if flat is None:
        models = books.models
        node_w = np.array([models[i].unit_watts(job.unit) for i in ids.tolist()], np.float64)
    watts, uwks = book(
        ids,
        ks,
        books.req(job.unit),
        0.0 if flat is None else flat,
        node_w,
        job.exclusive,
        books.free,
        books.busy,
        books.exclusive,
        books.first_core_w,
        books.has_first_core,
    )
    if job.exclusive:
        books.exclusive_jobs += 1
    books.placed[job.id] = (ids, ks, uwks)
    if books.node_jobs is not None:
        unit_w, node_jobs = books.unit_w, books.node_jobs
        for i, k, u in zip(ids.tolist(), ks.tolist(), uwks.tolist(), strict=True):
            node_jobs[i][job.id] = k
            unit_w[i] += u
    return float(watts)


def book_end(job: Job, books: Books, pool: list[int], busy_w: float) -> float:
    """Release an ended job's units from the books (and from ``pool``, the free resources of
    the usable nodes); returns ``busy_w`` minus the power it stops drawing, term by term:
    node by node, its units, then its first core if it is idle now."""
    ids, ks, uwks = books.placed.pop(job.id)
    back, busy_w = release(
        ids,
        ks,
        uwks,
        books.req(job.unit),
        job.exclusive,
        books.free,
        books.busy,
        books.exclusive,
        books.usable,
        books.first_core_w,
        books.has_first_core,
        busy_w,
    )
    for r, a in enumerate(job.unit.as_tuple()):
        if a:
            pool[r] += a * back
    if job.exclusive:
        books.exclusive_jobs -= 1
    if books.node_jobs is not None:
        unit_w, node_jobs, busy = books.unit_w, books.node_jobs, books.busy
        for i, u in zip(ids.tolist(), uwks.tolist(), strict=True):
            del node_jobs[i][job.id]
            unit_w[i] = 0.0 if busy[i] == 0 else unit_w[i] - u
    return float(busy_w)
