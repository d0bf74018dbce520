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
from wattsched.connectors.simulated_kernels import (
    ANY_EXCLUSIVE,
    CHECK_USABLE,
    EXCLUSIVE,
    FIRST_CORE,
    FIRST_CORE_W,
    MODEL_WATTS,
    release,
    take,
)
from wattsched.scheduler.model import (
    RESOURCES,
    Job,
    Node,
    Placement,
    PowerCap,
    PowerState,
    Resources,
    placement_error,
)
from wattsched.scheduler.node_arrays import BoolArray, FloatArray, IntArray


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
    (``usable``: on and available), the power model (``node_w``); once :meth:`track_jobs`
    asked, each node's jobs and the power of its busy units (``unit_w``, lists, for the
    thermal cluster).

    ``placed`` keeps each running job's placement for its end: node indexes in the order its
    start named them first over units per node (a 2 x m array), the flat power a unit draws
    (0.0: its node model's), and the start's requirement array and kernel flags (its end reads
    the same bits, and works the units' power out again as the start did).
    """

    __slots__ = (
        "busy",
        "exclusive",
        "exclusive_jobs",
        "free",
        "has_first_core",
        "node_jobs",
        "node_w",
        "one",
        "out",
        "out_w",
        "placed",
        "pos",
        "reqs",
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
        self.node_w: FloatArray = np.array(
            [(m.first_core_w, m.core_w, m.gpu_w, m.mic_w) for m in (nd.power for nd in nodes)],
            np.float64,
        ).reshape(n, 4)
        self.has_first_core = bool(self.node_w[:, FIRST_CORE_W].any())
        self.placed: dict[str, tuple[IntArray, float, IntArray, int]] = {}
        self.pos: IntArray = np.full(n, -1, np.int64)
        self.out: IntArray = np.zeros((2, n), np.int64)
        self.out_w: FloatArray = np.zeros(n, np.float64)
        """Scratch of :func:`~wattsched.connectors.simulated_kernels.take`."""
        self.one: IntArray = np.full(1, -1, np.int64)
        """The node index of a one-unit start (scratch: :func:`start_books`)."""
        self.reqs: dict[Resources, IntArray] = {}
        self.node_jobs: list[dict[str, int]] | None = None
        """Job id -> units, per node (kept only once :meth:`track_jobs` asked for it)."""

    def track_jobs(self) -> None:
        """Keep the jobs of each node too (the thermal cluster asks for them per node)."""
        self.node_jobs = [{} for _ in self.unit_w]
        for jid, (placed, *_) in self.placed.items():
            for i, k in zip(*placed.tolist(), strict=True):
                self.node_jobs[i][jid] = k

    def usable_changed(self, i: int, ok: bool) -> None:
        """Node ``i`` became usable (ON and available) when ``ok``, else unusable (its flag
        was the other one)."""
        self.unusable += -1 if ok else 1
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

    def flags(self, job: Job) -> int:
        """The kernels' ``flags`` for a start or an end of ``job`` now."""
        return (
            (EXCLUSIVE if job.exclusive else 0)
            | (ANY_EXCLUSIVE if self.exclusive_jobs else 0)
            | (CHECK_USABLE if self.unusable else 0)
            | (FIRST_CORE if self.has_first_core else 0)
            | (MODEL_WATTS if job.unit_power_w is None else 0)
        )


def _usable(node: Node) -> bool:
    return node.state is PowerState.ON and node.available


def start_books(
    job: Job,
    nodes: Sequence[str],
    index: Mapping[str, int],
    node_list: Sequence[Node],
    books: Books,
) -> float:
    """Book a start of ``job`` on ``nodes`` (one name per unit) and return the power it adds
    (node by node in the order first named: the first core of a node it wakes, then its
    units); a start the books refuse raises the typed error of the first rule it breaks
    (placement, unknown or unusable node, an exclusive job, room) and books nothing."""
    k = len(nodes)
    if k != job.units or job.placement is not Placement.FREE:  # else no rule to break
        why = placement_error(job, nodes)
        if why:
            raise PlacementError(job.id, nodes, why)
    if k == 1:  # a third of KTH-SP2's starts: the books' one-unit scratch, no new array
        unit_ids = books.one
        unit_ids[0] = index.get(nodes[0], -1)
    else:
        try:
            unit_ids = np.fromiter(map(index.__getitem__, nodes), np.int64, k)
        except KeyError:  # an unknown node: -1, which the kernel refuses
            unit_ids = np.fromiter(map(index.get, nodes, repeat(-1)), np.int64, k)
    flat = job.unit_power_w
    flat_w = 0.0 if flat is None else float(flat)  # one compiled signature, whatever the type
    unit = job.unit
    req = books.reqs.get(unit)
    if req is None:
        req = books.req(unit)
    flags = (  # books.flags(job), written out (one call less a start)
        (EXCLUSIVE if job.exclusive else 0)
        | (ANY_EXCLUSIVE if books.exclusive_jobs else 0)
        | (CHECK_USABLE if books.unusable else 0)
        | (FIRST_CORE if books.has_first_core else 0)
        | (MODEL_WATTS if flat is None else 0)
    )
    m, watts = take(
        unit_ids,
        req,
        flat_w,
        flags,
        books.free,
        books.busy,
        books.exclusive,
        books.usable,
        books.node_w,
        books.pos,
        books.out,
        books.out_w,
    )
    if m < 0:
        _refuse(job, nodes, index, node_list, books)
        raise AssertionError(f"start of {job.id} refused by the books, not by the rules")
    placed = books.out[:, :m].copy()
    # The units' power is not kept: the end works it out again from the same values.
    books.placed[job.id] = (placed, flat_w, req, flags)
    if job.exclusive:
        books.exclusive_jobs += 1
    if books.node_jobs is not None:
        unit_w, node_jobs = books.unit_w, books.node_jobs
        ids, ks = placed.tolist()
        for i, units, u in zip(ids, ks, books.out_w[:m].tolist(), strict=True):
            node_jobs[i][job.id] = units
            unit_w[i] += u
    return float(watts)


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


def book_end(job: Job, books: Books, pool: list[int], busy_w: float) -> float:
    """Release an ended job's units from the books (and from ``pool``, the free resources of
    the usable nodes); returns ``busy_w`` minus the power it stops drawing, term by term:
    node by node, its units, then its first core if it is idle now."""
    # Its start's requirement array and flags: the kernel reads only the bits of the job
    # (exclusive) and of the nodes (first-core cost), the same at its end.
    placed, flat_w, req, flags = books.placed.pop(job.id)
    out_w = books.out_w
    back, busy_w = release(
        placed,
        req,
        flat_w,
        flags,
        books.free,
        books.busy,
        books.exclusive,
        books.usable,
        books.node_w,
        out_w,
        busy_w,
    )
    u = job.unit  # ``pool`` in RESOURCES order (a zero amount adds nothing)
    pool[0] += u.cores * back
    pool[1] += u.mem_mb * back
    pool[2] += u.gpus * back
    pool[3] += u.mics * back
    if job.exclusive:
        books.exclusive_jobs -= 1
    if books.node_jobs is not None:
        unit_w, node_jobs, busy = books.unit_w, books.node_jobs, books.busy
        ids = placed[0].tolist()
        for i, uw in zip(ids, out_w[: len(ids)].tolist(), strict=True):
            del node_jobs[i][job.id]
            unit_w[i] = 0.0 if busy[i] == 0 else unit_w[i] - uw
    return float(busy_w)
