"""The suite's own rule (tests/conftest.py): under CI a skip fails unless it is 'not applicable'."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

_TESTS = """
import pytest

def test_missing_service():
    pytest.skip("PostgreSQL unavailable: no initdb")

def test_not_applicable():
    pytest.skip("not applicable: this backend has no power command")

@pytest.fixture
def data():
    pytest.skip("shared data not found at /nowhere")

def test_missing_data(data):
    pass
"""


@pytest.mark.parametrize(("ci", "failed", "errors", "skipped"), [("true", 1, 1, 1), ("", 0, 0, 3)])
def test_skips_fail_under_ci_unless_not_applicable(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    ci: str,
    failed: int,
    errors: int,
    skipped: int,
) -> None:
    monkeypatch.setenv("CI", ci)
    pytester.makeconftest((Path(__file__).parent / "conftest.py").read_text())
    pytester.makepyfile(test_rule=_TESTS)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=failed, errors=errors, skipped=skipped)  # fixture: an error
    if failed:
        result.stdout.fnmatch_lines(["*skipped under CI*shared data not found*"])
