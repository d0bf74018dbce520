"""The power step's record makers (issue 11: slots set directly), ``policy.decision`` and
``switching.switched``, make the very objects the constructors make; a decision naming a node
both off and on still raises the constructor's error."""

from __future__ import annotations

from dataclasses import fields

import pytest
from hypothesis import given
from hypothesis import strategies as st

from wattsched.powerctl.policy import PowerDecision, PowerPolicyError, decision
from wattsched.powerctl.switching import SwitchResult, switched

_names = st.lists(st.sampled_from(["n1", "n2", "n3", "n4"]), max_size=3, unique=True).map(tuple)


def _same(a: object, b: object) -> None:
    assert type(a) is type(b)
    assert a == b and hash(a) == hash(b) and repr(a) == repr(b)
    for f in fields(a):  # type: ignore[arg-type]
        assert getattr(a, f.name) is getattr(b, f.name), f.name


@given(_names, _names, st.text(max_size=20), st.none() | st.integers(-5, 10**9))
def test_a_decision_is_the_constructors(
    off: tuple[str, ...], on: tuple[str, ...], reason: str, recheck_at: int | None
) -> None:
    if set(off) & set(on):
        with pytest.raises(PowerPolicyError):
            PowerDecision(off, on, reason, recheck_at)
        with pytest.raises(PowerPolicyError):
            decision(off, on, reason, recheck_at)
        return
    made = decision(off, on, reason, recheck_at)
    _same(made, PowerDecision(off=off, on=on, reason=reason, recheck_at=recheck_at))
    assert made.empty == (not off and not on)


@given(st.text(max_size=8), st.booleans(), st.floats(0, 100), st.integers(1, 5))
def test_a_switch_result_is_the_constructors(
    node: str, on: bool, seconds: float, attempts: int
) -> None:
    made = switched(node, on, seconds, attempts)
    _same(made, SwitchResult(node, on, seconds, attempts))
    assert made.ok and not made.outcome_unknown
