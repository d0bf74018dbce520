"""The declared retry policy of :class:`Switcher`: attempts, waits and what is not retried.

The drivers here are scripted in-process (what a BMC answered in which order); the real BMCs
(ipmi_sim through ipmitool, over sshd, and pyghmi) are in ``test_ipmi_drivers.py``.
"""

from __future__ import annotations

import pytest

from wattsched.powerctl.drivers.base import (
    BMCAuthError,
    BMCUnreachable,
    PowerCommandError,
    PowerDriver,
)
from wattsched.powerctl.switching import Switcher


class Scripted(PowerDriver):
    """Answers each command with the next outcome of ``script`` (None: it worked)."""

    name = "scripted"

    def __init__(self, *script: type[PowerCommandError] | None) -> None:
        self.script = list(script)
        self.calls = 0

    def switch(self, node: str, on: bool) -> None:
        self.calls += 1
        outcome = self.script.pop(0) if self.script else None
        if outcome is not None:
            raise outcome(node, "scripted failure")

    def status(self, node: str) -> bool | None:
        return None


def _run(driver: Scripted, attempts: int) -> tuple[int, str | None, list[float]]:
    waits: list[float] = []
    [res] = Switcher(driver, attempts=attempts, backoff_s=1.5, sleep=waits.append).run(
        [("n1", False)]
    )
    return res.attempts, None if res.error is None else type(res.error).__name__, waits


def test_a_command_that_works_is_sent_once_without_a_wait() -> None:
    driver = Scripted(None)
    assert _run(driver, 3) == (1, None, [])
    assert driver.calls == 1


def test_temporary_failures_are_retried_with_growing_waits() -> None:
    driver = Scripted(BMCUnreachable, BMCUnreachable, None)
    assert _run(driver, 3) == (3, None, [1.5, 3.0])
    assert driver.calls == 3


def test_the_last_attempt_s_error_is_reported() -> None:
    driver = Scripted(BMCUnreachable, BMCUnreachable, BMCUnreachable, None)
    assert _run(driver, 3) == (3, "BMCUnreachable", [1.5, 3.0])
    assert driver.calls == 3


@pytest.mark.parametrize("attempts", [1, 3])
def test_a_refused_password_is_never_retried(attempts: int) -> None:
    driver = Scripted(BMCAuthError, None)
    assert _run(driver, attempts) == (1, "BMCAuthError", [])
    assert driver.calls == 1


def test_one_attempt_means_no_retry() -> None:
    driver = Scripted(BMCUnreachable, None)
    assert _run(driver, 1) == (1, "BMCUnreachable", [])
