"""Fixtures of the trace-reader tests: where the shared data lives, and a tmp-file writer."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """``/work/shared/data`` (``../shared/data`` from the repo root); skip when absent."""
    d = REPO.parent / "shared" / "data"
    if not d.is_dir():
        pytest.skip(f"shared data not found at {d}")
    return d


@pytest.fixture(scope="session")
def eurora_dir(data_dir: Path) -> Path:
    """The Eurora data folder."""
    return data_dir / "eurora"


@pytest.fixture(scope="session")
def repo_root() -> Path:
    """The repository root (deploy/systems lives there)."""
    return REPO


@pytest.fixture
def write_file(tmp_path: Path) -> Callable[[str, str], Path]:
    """Write ``text`` to ``tmp_path / name`` and return the path."""

    def write(name: str, text: str) -> Path:
        p = tmp_path / name
        p.write_text(text, encoding="utf-8")
        return p

    return write
