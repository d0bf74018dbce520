"""The simulated cluster's snapshot, running-job and start-result makers (issue 11: slots set
directly) make the very objects the constructors make, and a running job that breaks a check
raises the constructor's error."""

from __future__ import annotations

from dataclasses import fields
from types import MappingProxyType

import pytest
from hypothesis import given
from hypothesis import strategies as st

from wattsched.connectors.base import StartResult
from wattsched.connectors.simulated_records import running_job, snapshot, start_result
from wattsched.scheduler.model import (
    Job,
    ModelError,
    Node,
    PowerCap,
    Resources,
    RunningJob,
    Snapshot,
)


def _same(a: object, b: object) -> None:
    assert type(a) is type(b)
    for f in fields(a):  # type: ignore[arg-type]
        assert getattr(a, f.name) is getattr(b, f.name), f.name


@given(
    st.integers(0, 10**9),
    st.integers(0, 3),
    st.integers(0, 3),
    st.booleans(),
    st.none() | st.integers(0, 5),
)
def test_a_snapshot_is_the_constructors(
    t: int, n_nodes: int, n_queued: int, capped: bool, edits: int | None
) -> None:
    nodes = tuple(Node(f"n{i}", Resources(cores=2)) for i in range(n_nodes))
    queued = tuple(Job(str(k), 0, 10, 1, Resources(cores=1)) for k in range(n_queued))
    cap = PowerCap.constant(500.0) if capped else PowerCap.unlimited()
    index = MappingProxyType({j.id: j for j in queued})
    running = (RunningJob(Job("r", 0, 10, 1, Resources(cores=1)), 0, ("n0",), 10),)
    fast = snapshot(t, nodes, running, queued, cap, index, edits)  # type: ignore[arg-type]
    slow = Snapshot(time=t, nodes=nodes, running=running, queued=queued, cap=cap,
                    queued_index=index, queue_edits=edits)  # fmt: skip
    assert fast == slow
    _same(fast, slow)


def test_a_snapshot_has_no_checks_to_pass_over() -> None:
    # snapshot() sets the slots without __init__: were checks added, it would skip them
    assert not hasattr(Snapshot, "__post_init__")


@given(
    st.integers(1, 4),
    st.lists(st.sampled_from(["a", "b", "c"]), max_size=6),
    st.integers(0, 100),
    st.integers(-5, 100),
)
def test_a_running_job_is_the_constructors(units: int, names: list[str], start: int,
                                            length: int) -> None:  # fmt: skip
    job = Job("7", 0, 100, units, Resources(cores=1))
    nodes = tuple(names)
    try:
        slow = RunningJob(job, start, nodes, start + length)
    except ModelError as exc:
        with pytest.raises(ModelError) as err:
            running_job(job, start, nodes, start + length)
        assert str(err.value) == str(exc)
    else:
        fast = running_job(job, start, nodes, start + length)
        assert fast == slow
        _same(fast, slow)


@given(st.text(min_size=1, max_size=5), st.lists(st.sampled_from(["a", "b", "c"]), max_size=4))
def test_a_start_result_is_the_constructors(job_id: str, names: list[str]) -> None:
    nodes = tuple(names)
    fast, slow = start_result(job_id, nodes), StartResult(job_id, nodes)
    assert fast == slow and hash(fast) == hash(slow)
    _same(fast, slow)
