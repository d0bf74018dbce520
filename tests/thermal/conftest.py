"""Fixtures of the thermal tests."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """``../shared/data`` from the repo root; skip when absent."""
    d = REPO.parent / "shared" / "data"
    if not d.is_dir():
        pytest.skip(f"shared data not found at {d}")
    return d
