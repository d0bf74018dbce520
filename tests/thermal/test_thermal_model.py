"""The thermal model: RC step, recirculation, CoP and the parameters file."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wattsched.connectors.traces.thermal_file import read_thermal_file
from wattsched.scheduler.thermal.model import (
    ThermalModelError,
    ThermalParams,
    cop,
    default_recirculation,
    inlet,
    rc_step,
    total_energy,
)


def test_rc_step_matches_closed_form() -> None:
    # T(t) = T_inf + (T0 - T_inf) e^{-t/RC}, T_inf = P R + T_in
    r, c, p, t_in, t0, dt = 0.7, 100.0, 80.0, 25.0, 30.0, 37.0
    t_inf = p * r + t_in
    want = t_inf + (t0 - t_inf) * math.exp(-dt / (r * c))
    got = rc_step([t0], [p], [t_in], [r], [c], dt)
    assert got[0] == pytest.approx(want, rel=1e-12)


def test_rc_step_is_vectorised_per_node() -> None:
    r, c = np.array([0.5, 1.0, 2.0]), np.array([10.0, 20.0, 5.0])
    p, t_in, t0 = (
        np.array([100.0, 0.0, 50.0]),
        np.array([20.0, 21.0, 22.0]),
        np.array([40.0, 50.0, 22.0]),
    )
    got = rc_step(t0, p, t_in, r, c, 3.0)
    for i in range(3):
        one = rc_step(t0[i : i + 1], p[i : i + 1], t_in[i : i + 1], r[i : i + 1], c[i : i + 1], 3.0)
        assert got[i] == pytest.approx(one[0])


@settings(max_examples=60, deadline=None)
@given(
    t0=st.floats(0, 120),
    p=st.floats(0, 400),
    r=st.floats(0.01, 3),
    c=st.floats(1, 5000),
    dt=st.floats(0.1, 2000),
    k=st.integers(1, 50),
)
def test_many_small_steps_equal_one_big_step(
    t0: float, p: float, r: float, c: float, dt: float, k: int
) -> None:
    params = ThermalParams.uniform(["a", "b"], r, c, t_sup=18.0, t_thresh=500.0)
    t = np.array([t0, t0 / 2])
    power = np.array([p, p / 3])
    big = params.step(t, power, dt)
    small = t
    for _ in range(k):
        small = params.step(small, power, dt / k)
    np.testing.assert_allclose(small, big, rtol=1e-9, atol=1e-9)


def test_inlet_by_hand_on_three_nodes() -> None:
    d = np.array([[0.0, 0.01, 0.02], [0.03, 0.0, 0.0], [0.01, 0.01, 0.01]])
    p = [100.0, 200.0, 50.0]
    # node 0: 20 + 0.01*200 + 0.02*50 = 23; node 1: 20 + 0.03*100 = 23; node 2: 20 + 1 + 2 + 0.5
    np.testing.assert_allclose(inlet(20.0, d, p), [23.0, 23.0, 23.5])


def test_default_recirculation_two_rows() -> None:
    d = default_recirculation(6)
    assert d.shape == (6, 6)
    assert np.allclose(d, d.T)
    # same row, neighbours warm more than the far end of the row; facing node gets half
    assert d[0, 1] > d[0, 2] > 0
    assert d[0, 3] == pytest.approx(d[0, 0] * 0.5)


def test_cop_and_energy() -> None:
    assert cop(20.0) == pytest.approx(0.0068 * 400 + 0.016 + 0.458)
    assert total_energy(1000.0, 20.0) == pytest.approx(1000.0 * (1 + 1 / cop(20.0)))


GOOD = """
nodes = ["n1", "n2", "n3"]
t_sup = 18.0
t_thresh = 85.0
r = 0.2
c = 1500.0
d = [[0.0, 0.001, 0.0], [0.001, 0.0, 0.001], [0.0, 0.001, 0.0]]
[node.n2]
r = 0.3
"""


def test_file_loads(tmp_path: Path) -> None:
    f = tmp_path / "t.toml"
    f.write_text(GOOD)
    p = read_thermal_file(f)
    assert p.names == ("n1", "n2", "n3")
    np.testing.assert_allclose(p.r, [0.2, 0.3, 0.2])
    assert p.t_thresh == 85.0 and p.d[1, 2] == 0.001


@pytest.mark.parametrize(
    ("old", "new", "field", "value"),
    [
        # D of the wrong shape
        (
            "d = [[0.0, 0.001, 0.0], [0.001, 0.0, 0.001], [0.0, 0.001, 0.0]]",
            "d = [[0.0, 0.1], [0.1, 0.0]]",
            "d",
            "shape (2, 2)",
        ),
        # a negative R for one node
        ("[node.n2]\nr = 0.3", "[node.n2]\nr = -0.3", "node.n2.r", -0.3),
        # a negative C for every node
        ("c = 1500.0", "c = -1.0", "c", -1.0),
        # the threshold below the supply temperature
        ("t_thresh = 85.0", "t_thresh = 15.0", "t_thresh", 15.0),
        # a negative recirculation coefficient
        ("[0.0, 0.001, 0.0], [0.001", "[0.0, -0.001, 0.0], [0.001", "d", None),
    ],
)
def test_bad_file_refused_naming_file_field_value(
    tmp_path: Path, old: str, new: str, field: str, value: object
) -> None:
    assert old in GOOD
    f = tmp_path / "bad.toml"
    f.write_text(GOOD.replace(old, new))
    with pytest.raises(ThermalModelError) as err:
        read_thermal_file(f)
    assert err.value.source == str(f) and err.value.field == field
    assert str(f) in str(err.value) and repr(field) in str(err.value)
    if value is not None:
        assert err.value.value == value
