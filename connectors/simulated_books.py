"""The simulated cluster's own books: what happened to each job, the power between events,
each node's free resources, and the checks a start must pass (the same typed errors a real
RMS connector raises)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from wattsched.connectors.base import PlacementError, RMSCommandError, UnknownNodeError
from wattsched.scheduler.model import (
    RESOURCES,
    Job,
    Node,
    PowerCap,
    PowerState,
    RunningJob,
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


@dataclass(slots=True)
class NodeBook:
    free: list[int]
    busy_units: int = 0
    unit_watts: float = 0.0
    jobs: dict[str, int] = field(default_factory=dict)


def check_start(
    job: Job,
    nodes: Sequence[str],
    index: Mapping[str, int],
    node_list: Sequence[Node],
    books: Sequence[NodeBook],
    running: Mapping[str, RunningJob],
) -> dict[int, int]:
    """Node index -> units of a start of ``job`` on ``nodes`` that the books accept; raises
    the typed error of the first rule it breaks (placement, unknown or unusable node, an
    exclusive job, room)."""
    why = placement_error(job, nodes)
    if why:
        raise PlacementError(job.id, nodes, why)
    need = job.unit.as_tuple()
    needed = [(r, a) for r, a in enumerate(need) if a]
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
        others = books[i].jobs
        if others and (job.exclusive or any(running[o].job.exclusive for o in others)):
            raise PlacementError(
                job.id, nodes, f"node {node_list[i].name} is shared with an exclusive job"
            )
    for i, k in want.items():
        free = books[i].free
        for r, amount in needed:
            if amount * k > free[r]:
                raise RMSCommandError(
                    ["start", job.id, node_list[i].name],
                    1,
                    f"node {node_list[i].name} lacks {RESOURCES[r]}: "
                    f"{amount * k} asked, {free[r]} free",
                )
    return want


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


def pooled_free(nodes: Sequence[Node], books: Sequence[NodeBook]) -> list[int]:
    """Free resources pooled over the nodes that are on and available."""
    free = [0] * len(RESOURCES)
    for node, book in zip(nodes, books, strict=True):
        if node.state is PowerState.ON and node.available:
            for r, a in enumerate(book.free):
                free[r] += a
    return free


def book_start(
    job: Job, want: Mapping[int, int], nodes: Sequence[Node], books: Sequence[NodeBook]
) -> float:
    """Book ``want`` (node index -> units, as :func:`check_start` returns) of ``job`` on the
    books; returns the power it adds (first cores of nodes it wakes included)."""
    needed = [(r, a) for r, a in enumerate(job.unit.as_tuple()) if a]
    watts = 0.0
    for i, k in want.items():
        book = books[i]
        node = nodes[i]
        unit_w = (
            job.unit_power_w if job.unit_power_w is not None else node.power.unit_watts(job.unit)
        )
        if book.busy_units == 0:
            watts += node.power.first_core_w
        book.busy_units += k
        book.unit_watts += unit_w * k
        book.jobs[job.id] = book.jobs.get(job.id, 0) + k
        for r, amount in needed:
            book.free[r] -= amount * k
        watts += unit_w * k
    return watts


def book_end(
    rj: RunningJob,
    index: Mapping[str, int],
    nodes: Sequence[Node],
    books: list[NodeBook],
    pool: list[int],
) -> list[float]:
    """Release an ended job's units from the books (and from ``pool``, the free resources of
    the usable nodes); returns the power it stops drawing, term by term, in the order the
    cluster subtracts them (the same float sums as before)."""
    job = rj.job
    needed = [(r, a) for r, a in enumerate(job.unit.as_tuple()) if a]
    out: list[float] = []
    for name in set(rj.nodes):
        i = index[name]
        book = books[i]
        k = book.jobs.pop(job.id)
        node = nodes[i]
        unit_w = (
            job.unit_power_w if job.unit_power_w is not None else node.power.unit_watts(job.unit)
        )
        book.busy_units -= k
        book.unit_watts -= unit_w * k
        out.append(unit_w * k)
        if book.busy_units == 0:
            out.append(node.power.first_core_w)
            book.unit_watts = 0.0
        for r, amount in needed:
            book.free[r] += amount * k
        if node.state is PowerState.ON and node.available:
            for r, amount in needed:
                pool[r] += amount * k
    return out
