"""Power-cap profiles: the shared variable_power_caps files, the CLI value, malformed lines."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import pytest

from wattsched.connectors.traces import TraceError, parse_power_cap, read_power_cap
from wattsched.scheduler.model import PowerCap


def test_every_shared_profile(eurora_dir: Path) -> None:
    files = sorted((eurora_dir / "variable_power_caps").iterdir())
    assert len(files) == 8
    for path in files:
        cap = read_power_cap(path)
        lines = [s for s in path.read_text().splitlines() if s.strip()]
        if not lines:  # power_caps_noVariations is empty: no cap
            assert cap == PowerCap.unlimited()
            continue
        assert len(cap.steps) == len(lines)
        assert all(w >= 300 for _, w in cap.steps)


def test_profile_values_and_origin(eurora_dir: Path) -> None:
    path = eurora_dir / "variable_power_caps" / "power_caps_100"
    cap = read_power_cap(path, origin=1_000_000)
    assert cap.steps[0] == (1_000_100, 2200.0)
    assert cap.at(0) == 2200.0  # before the first offset, the first value applies
    assert cap.at(1_001_000) == 4000.0
    assert cap.at(1_001_099) == 4000.0 and cap.at(1_001_100) == 3000.0
    # the file has no final newline: the last line still counts
    assert cap.steps[-1][0] == 1_000_000 + int(path.read_text().split()[-1].split(";")[0])


def test_unsorted_lines_are_sorted(write_file: Callable[[str, str], Path]) -> None:
    cap = read_power_cap(write_file("c", "500;100\n0;300\n"))
    assert cap.steps == ((0, 300.0), (500, 100.0))


@pytest.mark.parametrize(
    ("text", "line", "field", "value"),
    [
        ("100,2200\n", 1, "line", "100,2200"),  # wrong separator
        ("100;2200\nsoon;2000\n", 2, "offset_seconds", "soon"),  # offset not an integer
        ("100;2200\n200;lots\n", 2, "watts", "lots"),  # watts not a number
        ("100;-5\n", 1, "watts", "-5"),  # a cap must be > 0
        ("-100;5\n", 1, "offset_seconds", "-100"),  # offsets count forward from the origin
        ("100;5\n100;6\n", 2, "offset_seconds", "100"),  # the same offset twice
    ],
)
def test_malformed_profiles_raise(
    write_file: Callable[[str, str], Path], text: str, line: int, field: str, value: str
) -> None:
    path = write_file("caps", text)
    with pytest.raises(TraceError) as info:
        read_power_cap(path)
    e = info.value
    assert (e.line, e.field, e.value) == (line, field, value)
    assert f"{path}:{line}: field '{field}' = {value!r}" in str(e)


def test_parse_power_cap(write_file: Callable[[str, str], Path]) -> None:
    assert parse_power_cap("5000") == PowerCap.constant(5000)
    assert parse_power_cap(" 7500.5 ").at(123) == 7500.5
    for word in ("inf", "none", "None", "unlimited"):
        assert math.isinf(parse_power_cap(word).at(0))
    path = write_file("p", "0;100\n10;200\n")
    assert parse_power_cap(str(path), origin=5).steps == ((5, 100.0), (15, 200.0))


@pytest.mark.parametrize("text", ["", "-5", "0", "five kW", "nan", "/no/such/file"])
def test_parse_power_cap_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="power cap"):
        parse_power_cap(text)
