"""The simulated cluster's flat books (issue 11) against the per-node books they replaced.

The reference below is the cluster's code before (one ``NodeBook`` per node, a start checked
unit by unit): the flat books, which work once per node, must accept and refuse the same
starts with the same errors and give the very same floats (power added at a start, the terms
subtracted at an end, each node's unit power), bit for bit, whatever the placement rule and
the number of names (the placement check is passed over only for a ``free`` job naming one
node per unit, where it has no rule to break). One deliberate difference: an end
released its nodes in the order of ``set(rj.nodes)``, which varies with the string hash seed
of the process; it is now the order the start named them first (deterministic), as here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import given, settings
from hypothesis import strategies as st

from wattsched.connectors.base import (
    ConnectorError,
    PlacementError,
    RMSCommandError,
    UnknownNodeError,
)
from wattsched.connectors.simulated_books import Books, book_end, start_books
from wattsched.scheduler.model import (
    RESOURCES,
    Job,
    Node,
    NodePowerModel,
    Placement,
    PowerState,
    Resources,
    placement_error,
)


@dataclass
class RefBook:
    free: list[int]
    busy_units: int = 0
    unit_watts: float = 0.0
    jobs: dict[str, int] = field(default_factory=dict)


def ref_start(job: Job, names: list[str], index: dict[str, int], nodes: list[Node],
              books: list[RefBook]) -> float:  # fmt: skip
    want: dict[int, int] = {}
    for name in names:
        want[index[name]] = want.get(index[name], 0) + 1
    watts = 0.0
    for i, k in want.items():
        book, node = books[i], nodes[i]
        unit_w = (
            job.unit_power_w if job.unit_power_w is not None else node.power.unit_watts(job.unit)
        )
        if book.busy_units == 0:
            watts += node.power.first_core_w
        book.busy_units += k
        book.unit_watts += unit_w * k
        book.jobs[job.id] = k
        for r, a in enumerate(job.unit.as_tuple()):
            book.free[r] -= a * k
        watts += unit_w * k
    return watts


def ref_end(job: Job, names: list[str], index: dict[str, int], nodes: list[Node],
            books: list[RefBook]) -> list[float]:  # fmt: skip
    out: list[float] = []
    for name in dict.fromkeys(names):  # the order the start named them first
        i = index[name]
        book, node = books[i], nodes[i]
        k = book.jobs.pop(job.id)
        unit_w = (
            job.unit_power_w if job.unit_power_w is not None else node.power.unit_watts(job.unit)
        )
        book.busy_units -= k
        book.unit_watts -= unit_w * k
        out.append(unit_w * k)
        if book.busy_units == 0:
            out.append(node.power.first_core_w)
            book.unit_watts = 0.0
        for r, a in enumerate(job.unit.as_tuple()):
            book.free[r] += a * k
    return out


watts = st.floats(min_value=0.0, max_value=500.0, allow_nan=False).map(lambda w: round(w, 3))


@st.composite
def machines(draw: st.DrawFn) -> list[Node]:
    n = draw(st.integers(min_value=1, max_value=36))
    uniform = draw(st.booleans())
    models = [
        NodePowerModel(
            first_core_w=draw(st.just(0.0) | watts),
            core_w=draw(watts),
            gpu_w=draw(watts),
            mic_w=draw(watts),
        )
        for _ in range(1 if uniform else n)
    ]
    return [
        Node(f"n{i}", Resources(cores=draw(st.integers(1, 16)), mem_mb=1000,
                                gpus=draw(st.integers(0, 2)), mics=draw(st.integers(0, 1))),
             models[0 if uniform else i],
             state=PowerState.ON if draw(st.integers(0, 49)) else PowerState.OFF)
        for i in range(n)
    ]  # fmt: skip


@settings(max_examples=150, deadline=None)
@given(machines(), st.data())
def test_array_books_are_the_scalar_books(nodes: list[Node], data: st.DataObject) -> None:
    index = {n.name: i for i, n in enumerate(nodes)}
    books = Books(nodes)
    track = data.draw(st.booleans())  # each node's jobs and unit power (the thermal cluster)
    if track:
        books.track_jobs()
    ref = [RefBook(free=list(n.capacity.as_tuple())) for n in nodes]
    pool = books.pooled_free()
    running: dict[str, tuple[Job, list[str]]] = {}
    busy_w = ref_w = 0.0
    for step in range(data.draw(st.integers(1, 30))):
        if running and data.draw(st.booleans()):
            jid = data.draw(st.sampled_from(sorted(running)))
            job, names = running.pop(jid)
            busy_w = book_end(job, books, pool, busy_w)
            for t in ref_end(job, names, index, nodes, ref):
                ref_w -= t
        else:
            units = data.draw(st.integers(1, 48))
            # mostly one name per unit; sometimes one too few or too many (a placement error)
            k = max(0, units + data.draw(st.sampled_from([0, 0, 0, 0, -1, 1])))
            names = data.draw(st.lists(st.sampled_from([*index, "nowhere"]), min_size=k,
                                       max_size=k))  # fmt: skip
            job = Job(str(step), submit=0, walltime=10, units=units,
                      unit=Resources(cores=data.draw(st.integers(1, 2)),
                                     gpus=int(data.draw(st.integers(0, 5)) == 0),
                                     mics=int(data.draw(st.integers(0, 7)) == 0)),
                      unit_power_w=data.draw(st.none() | watts),
                      exclusive=data.draw(st.integers(0, 4)) == 0,
                      placement=data.draw(st.sampled_from(list(Placement))))  # fmt: skip
            refusal = ref_refusal(job, names, index, nodes, ref, running)
            try:
                added = start_books(job, names, index, nodes, books)
            except ConnectorError as exc:
                assert str(exc) == refusal  # and nothing booked: checked below
            else:
                assert refusal == ""
                assert added == ref_start(job, names, index, nodes, ref)
                busy_w += added
                ref_w += added
                running[job.id] = (job, names)
                for r, a in enumerate(job.total.as_tuple()):
                    pool[r] -= a
        assert busy_w == ref_w
        assert books.free.tolist() == [b.free for b in ref]
        assert books.busy.tolist() == [b.busy_units for b in ref]
        if track:
            assert books.unit_w == [b.unit_watts for b in ref]
            assert books.node_jobs == [b.jobs for b in ref]
        assert pool == books.pooled_free()


def ref_refusal(
    job: Job,
    names: list[str],
    index: dict[str, int],
    nodes: list[Node],
    books: list[RefBook],
    running: dict[str, tuple[Job, list[str]]],
) -> str:
    """The message of the error the scalar books raised ("" when they accepted)."""
    why = placement_error(job, names)
    if why:
        return str(PlacementError(job.id, names, why))
    want: dict[int, int] = {}
    for name in names:
        if name not in index:
            return str(UnknownNodeError(f"node {name!r} does not exist", node=name))
        node = nodes[index[name]]
        if node.state is not PowerState.ON or not node.available:
            return str(RMSCommandError(["start", job.id, name], 1,
                                       f"node {name} is {node.state.value}"))  # fmt: skip
        want[index[name]] = want.get(index[name], 0) + 1
    for i in want:
        others = books[i].jobs
        if others and (job.exclusive or any(running[o][0].exclusive for o in others)):
            why = f"node {nodes[i].name} is shared with an exclusive job"
            return str(PlacementError(job.id, names, why))
    for i, k in want.items():
        for r, a in enumerate(job.unit.as_tuple()):
            if a and a * k > books[i].free[r]:
                why = f"node {nodes[i].name} lacks {RESOURCES[r]}: {a * k} asked, " \
                      f"{books[i].free[r]} free"  # fmt: skip
                return str(RMSCommandError(["start", job.id, nodes[i].name], 1, why))
    return ""
