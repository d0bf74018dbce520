"""The plan makers of :mod:`wattsched.scheduler.plan_records` (issue 11: slots set directly)
make the very objects the constructors make, and the classes have no checks they pass over."""

from __future__ import annotations

from dataclasses import fields
from types import MappingProxyType

from hypothesis import given
from hypothesis import strategies as st

from wattsched.scheduler.plan import Assignment, Plan, SolverStats
from wattsched.scheduler.plan_records import assignment, plan


def _same(a: object, b: object) -> None:
    assert type(a) is type(b)
    for f in fields(a):  # type: ignore[arg-type]
        assert getattr(a, f.name) is getattr(b, f.name), f.name


_names = st.lists(st.sampled_from(["n0", "n1", "n2"]), max_size=4).map(tuple)
_stats = st.sampled_from(
    (SolverStats(), SolverStats(status="heuristic", extra=MappingProxyType({})))
)


@given(st.text(max_size=4), st.integers(-5, 10**9), _names)
def test_an_assignment_is_the_constructors(job_id: str, start: int, nodes: tuple[str, ...]) -> None:
    fast = assignment(job_id, start, nodes)
    slow = Assignment(job_id, start, nodes)
    assert fast == slow
    assert hash(fast) == hash(slow)
    _same(fast, slow)


@given(
    st.integers(0, 10**9),
    st.lists(st.tuples(st.text(max_size=3), st.integers(0, 10), _names), max_size=4),
    _stats,
)
def test_a_plan_is_the_constructors(
    t: int, parts: list[tuple[str, int, tuple[str, ...]]], stats: SolverStats
) -> None:
    assignments = tuple(Assignment(*p) for p in parts)
    fast = plan(t, assignments, stats)
    slow = Plan(t, assignments, stats)
    assert fast == slow
    _same(fast, slow)
    assert list(fast.starts_now()) == list(slow.starts_now())


def test_plans_have_no_checks_to_pass_over() -> None:
    # the makers set the slots without __init__: were checks added, they would skip them
    assert not hasattr(Plan, "__post_init__")
    assert not hasattr(Assignment, "__post_init__")
