"""Node power models and job power assignment (scheduler/power.py)."""

from __future__ import annotations

import pytest

from wattsched.scheduler.model import Job, Resources
from wattsched.scheduler.power import (
    BATSIM_NODE_POWER,
    EURORA_NODE_POWER,
    assign_core_watts,
    assign_power_table,
    parse_range,
)


def _job(i: int, cores: int = 4, units: int = 2) -> Job:
    return Job(id=str(i), submit=0, walltime=60, units=units, unit=Resources(cores=cores))


def test_batsim_full_load() -> None:
    full = BATSIM_NODE_POWER.idle_w + BATSIM_NODE_POWER.first_core_w + 32 * BATSIM_NODE_POWER.core_w
    assert full == pytest.approx(190.7)
    assert BATSIM_NODE_POWER.idle_w == 95.0 and BATSIM_NODE_POWER.off_w == 9.75


def test_eurora_idle_leaves_room_under_the_caps() -> None:
    # 32 idle nodes stay well below the lowest shared cap of the 32-node instances (1,150 W)
    assert 32 * EURORA_NODE_POWER.idle_w < 1150 / 2
    # 8 idle nodes below the lowest few-jobs cap (300 W)
    assert 8 * EURORA_NODE_POWER.idle_w < 300


def test_assign_power_table_and_fallback() -> None:
    jobs = [_job(1), _job(2), _job(3, units=1)]
    out, n = assign_power_table(jobs, {"1": 100.0, "3": 7.0})
    assert [j.unit_power_w for j in out] == [50.0, None, 7.0] and n == 0
    out, n = assign_power_table(jobs, {"1": 100.0}, fallback=lambda j: 2.5 * j.unit.cores)
    assert [j.unit_power_w for j in out] == [50.0, 10.0, 10.0] and n == 2
    assert jobs[0].unit_power_w is None  # inputs untouched


def test_assign_core_watts_is_seeded_and_in_range() -> None:
    jobs = [_job(i, cores=1 + i % 8) for i in range(200)]
    a = assign_core_watts(jobs, 7.8, 11.11, seed=3)
    b = assign_core_watts(jobs, 7.8, 11.11, seed=3)
    c = assign_core_watts(jobs, 7.8, 11.11, seed=4)
    assert [j.unit_power_w for j in a] == [j.unit_power_w for j in b]
    assert [j.unit_power_w for j in a] != [j.unit_power_w for j in c]
    per_core = [j.unit_power_w / j.unit.cores for j in a if j.unit_power_w is not None]
    assert len(per_core) == 200
    assert all(7.8 <= w <= 11.11 for w in per_core)
    assert len(set(per_core)) > 150  # one draw per job
    with pytest.raises(ValueError, match="range"):
        assign_core_watts(jobs, 5.0, 1.0, seed=0)


def test_parse_range() -> None:
    assert parse_range("7.8:11.11") == (7.8, 11.11)
    assert parse_range("9") == (9.0, 9.0)


@pytest.mark.parametrize(
    "text",
    [
        "11.11:7.8",  # lo above hi
        "a:b",  # not numbers
        "7.8:",  # hi missing
        "-1:2",  # negative watts
        "1:inf",  # not finite
        "",  # empty
    ],
)
def test_parse_range_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="range"):
        parse_range(text)
