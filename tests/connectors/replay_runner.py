"""A command runner that answers from recorded outputs (for RMSs that cannot run here: PBS).

It is injected into the connector (no patching): each known argument list maps to a recorded
stdout (or a recorded error); every call is logged so tests can check the exact commands.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from wattsched.connectors.base import RMSCommandError
from wattsched.connectors.runner import CommandResult


@dataclass(frozen=True)
class Reply:
    """What a command prints and returns."""

    stdout: str = ""
    returncode: int = 0
    stderr: str = ""


@dataclass
class ReplayRunner:
    """Replays ``replies[tuple(argv)]``; unknown commands fail like a missing binary."""

    replies: Mapping[tuple[str, ...], Reply]
    calls: list[tuple[str, ...]] = field(default_factory=list)

    def run(
        self, argv: Sequence[str], *, timeout: float | None = None, check: bool = True
    ) -> CommandResult:
        args = tuple(argv)
        self.calls.append(args)
        reply = self.replies.get(args)
        if reply is None:
            reply = Reply(returncode=127, stderr=f"{args[0]}: command not recorded")
        if check and reply.returncode != 0:
            raise RMSCommandError(args, reply.returncode, reply.stderr)
        return CommandResult(args, reply.returncode, reply.stdout, reply.stderr, 0.0)

    def close(self) -> None:
        """Nothing to release."""
