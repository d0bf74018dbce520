"""The connectors' retry policy, declared once (tenacity): reads are retried on temporary
errors, actions never.

A *temporary* error is one the RMS may not give a moment later: a command that timed out, a
controller that does not answer (Slurm ``Unable to contact slurm controller``, ``Socket
timed out``, a munge or connection failure, PBS/SGE communication errors). A *permanent* one
(unknown job, bad placement, a parse error, a refused command) is raised at once. Reads
(``sinfo``, ``squeue``, ``scontrol show``, ``qstat``, ``qhost``, ``pbsnodes``) are idempotent
and retried :data:`READ_ATTEMPTS` times with exponential back-off; a start, hold, release or
power command is not (a retried action could act twice): the daemon's cycle and journal decide
whether to try it again.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence

from tenacity import (
    before_sleep_log,
    retry,
    retry_if_exception,
    stop_after_attempt,
    wait_exponential,
)

from wattsched.connectors.base import RMSCommandError, RMSTimeout
from wattsched.connectors.runner import CommandResult, CommandRunner

log = logging.getLogger(__name__)

READ_ATTEMPTS = 3
"""Tries of a read command (the first and two retries)."""

_TEMPORARY = re.compile(
    r"unable to contact slurm controller|socket timed out|connection refused|"
    r"connection reset|temporarily unavailable|try again|munge|zero bytes were transmitted|"
    r"communication failure|cannot connect to|unable to connect|error from qmaster|"
    r"failed receiving gdi request|no response from server|pbs_connect",
    re.IGNORECASE,
)


def is_temporary(exc: BaseException) -> bool:
    """True for an error worth trying again a moment later (see the module docstring)."""
    if isinstance(exc, RMSTimeout):
        return True
    if isinstance(exc, RMSCommandError):
        return bool(_TEMPORARY.search(exc.stderr or ""))
    return False


@retry(
    retry=retry_if_exception(is_temporary),
    stop=stop_after_attempt(READ_ATTEMPTS),
    wait=wait_exponential(multiplier=0.5, max=4.0),
    before_sleep=before_sleep_log(log, logging.WARNING),
    reraise=True,
)
def read_command(runner: CommandRunner, argv: Sequence[str]) -> CommandResult:
    """Run a read-only RMS command, retried on temporary errors."""
    return runner.run(argv)
