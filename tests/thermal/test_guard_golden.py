"""The thermal guard takes the same decisions as the recorded ones (golden schedules made
before its per-cycle work was vectorised and cached): speed-ups must not move a start."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from tests.thermal.guard_golden import GOLDEN, guarded_rows


@pytest.mark.parametrize("dispatcher", ["easy", "prb"])
def test_guarded_schedule_matches_the_golden(shared_data: Path, dispatcher: str) -> None:
    with (GOLDEN / f"guard_golden_{dispatcher}.csv").open() as fh:
        want = [(r["job"], int(r["start"]), int(r["end"]), r["nodes"]) for r in csv.DictReader(fh)]
    got = guarded_rows(dispatcher, shared_data / "eurora")
    assert got == want
