"""``tuple_diff.changed_positions`` (the last pair's answer kept, shared by the scheduler's node
arrays and the power side's node moves) against the positions compared afresh."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from wattsched.scheduler.tuple_diff import changed_positions

_objs = [object() for _ in range(4)]


@given(st.lists(st.lists(st.integers(0, 3), min_size=6, max_size=6), min_size=1, max_size=6))
def test_changed_positions_are_the_positions_compared_afresh(steps: list[list[int]]) -> None:
    tuples = [tuple(_objs[k] for k in ks) for ks in steps]
    pairs = [(a, b) for a in tuples for b in tuples]
    for old, new in pairs + pairs[::-1] + pairs:  # asked again, after other pairs and not
        want = tuple(i for i in range(len(new)) if old[i] is not new[i])
        assert changed_positions(old, new) == want
        assert changed_positions(old, new) == want  # the kept answer
