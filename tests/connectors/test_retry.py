"""The connectors' retry policy: reads retried on temporary errors, never on permanent ones,
and actions never retried."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from wattsched.connectors.base import RMSCommandError, RMSTimeout, UnknownJobError
from wattsched.connectors.retry import READ_ATTEMPTS, is_temporary
from wattsched.connectors.runner import CommandResult
from wattsched.connectors.slurm import SlurmConnector

FIXTURES = Path(__file__).parent / "fixtures"


@dataclass
class FlakyRunner:
    """Fails the first ``failures`` calls of each command with ``error``, then answers."""

    answers: dict[str, str]
    failures: int
    error: str
    calls: list[tuple[str, ...]] = field(default_factory=list)

    def run(
        self, argv: Sequence[str], *, timeout: float | None = None, check: bool = True
    ) -> CommandResult:
        args = tuple(argv)
        self.calls.append(args)
        if sum(1 for c in self.calls if c == args) <= self.failures:
            if self.error == "timeout":
                raise RMSTimeout(args, 1.0)
            raise RMSCommandError(args, 1, self.error)
        return CommandResult(args, 0, self.answers.get(" ".join(args[:2]), ""), "", 0.0)

    def close(self) -> None:
        """Nothing to release."""


@pytest.mark.parametrize(
    ("error", "temporary"),
    [
        ("squeue: error: Unable to contact slurm controller (connect failure)", True),
        ("slurm_load_jobs error: Socket timed out on send/recv operation", True),
        ("timeout", True),
        ("slurm_update error: Invalid job id specified", False),
        ("scontrol: error: Invalid node name specified", False),
    ],
)
def test_temporary_or_permanent(error: str, temporary: bool) -> None:
    exc = RMSTimeout(["squeue"], 1.0) if error == "timeout" else RMSCommandError(["x"], 1, error)
    assert is_temporary(exc) is temporary


SQUEUE = (FIXTURES / "slurm-samples" / "squeue_21.08.5_rivos.json").read_text()


def test_a_read_is_retried_on_a_controller_that_does_not_answer() -> None:
    runner = FlakyRunner(
        {"squeue --json": SQUEUE}, failures=READ_ATTEMPTS - 1,
        error="Unable to contact slurm controller (connect failure)",
    )  # fmt: skip
    conn = SlurmConnector(runner)  # type: ignore[arg-type]
    assert conn.read_jobs()  # the third try answers
    assert runner.calls.count(("squeue", "--json")) == READ_ATTEMPTS


def test_retries_give_up_after_the_declared_attempts() -> None:
    runner = FlakyRunner({}, failures=99, error="Socket timed out on send/recv operation")
    conn = SlurmConnector(runner)  # type: ignore[arg-type]
    with pytest.raises(RMSCommandError, match="Socket timed out"):
        conn.read_jobs()
    assert runner.calls.count(("squeue", "--json")) == READ_ATTEMPTS


def test_a_permanent_error_is_not_retried() -> None:
    runner = FlakyRunner({}, failures=5, error="Invalid job id specified")
    conn = SlurmConnector(runner)  # type: ignore[arg-type]
    with pytest.raises(UnknownJobError):
        conn.show_job("42")
    assert len(runner.calls) == 1


def test_an_action_is_never_retried() -> None:
    runner = FlakyRunner({}, failures=5, error="Socket timed out on send/recv operation")
    conn = SlurmConnector(runner)  # type: ignore[arg-type]
    with pytest.raises(RMSCommandError):
        conn.hold("42")
    assert runner.calls == [("scontrol", "uhold", "42")]
