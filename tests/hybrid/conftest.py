"""Fixtures of the hybrid dispatcher tests: small Eurora-like instances and helpers."""

from __future__ import annotations

import pytest

from wattsched.scheduler.hybrid.synthetic import eurora_like_jobs, eurora_like_nodes
from wattsched.scheduler.model import Job, Node


@pytest.fixture()
def small_instance() -> tuple[list[Node], list[Job]]:
    """8 Eurora-like nodes and 30 jobs (offline)."""
    return eurora_like_nodes(8), eurora_like_jobs(30, seed=7)
