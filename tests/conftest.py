"""Suite-wide rules: under CI a skipped test is a failure, unless the skip says it does not apply.

A test suite that silently skips its real services or its data can go green while testing
nothing. On a developer's machine a missing service skips (with the reason printed); under CI
(``CI=true``, as ``.ci/run`` is run) every service and data folder must be there, so a skip is
turned into a failure with its reason. A skip that is a property of the thing tested, not of
the machine (a backend without a capability), starts its reason with :data:`NOT_APPLICABLE`
and stays a skip everywhere.
"""

from __future__ import annotations

import os
from collections.abc import Generator
from pathlib import Path

import pytest

NOT_APPLICABLE = "not applicable:"
"""Prefix of a skip reason that holds on every machine (kept a skip under CI)."""


def under_ci() -> bool:
    """True when the suite runs under CI (``CI`` set to a true value)."""
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def _skip_reason(report: pytest.TestReport) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2])
    return str(longrepr)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, None]:
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    if not (report.skipped and under_ci()) or hasattr(report, "wasxfail"):
        return
    reason = _skip_reason(report)
    if NOT_APPLICABLE in reason:
        return
    report.outcome = "failed"
    report.longrepr = (
        f"skipped under CI (CI=true), which needs every service and data folder: {reason}"
    )


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """``../shared/data`` from the repo root (the traces and recorded RMS outputs); a skip
    when absent (a failure under CI)."""
    d = Path(__file__).resolve().parents[1].parent / "shared" / "data"
    if not d.is_dir():
        pytest.skip(f"shared data not found at {d}")
    return d
