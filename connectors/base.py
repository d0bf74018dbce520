"""The connector interface every resource manager implements, and its errors.

A connector turns a resource manager (Slurm, PBS, Grid Engine, or the simulated cluster)
into :class:`~wattsched.scheduler.model.Snapshot` objects and carries out the dispatcher's
decisions: start a job now on exactly the given nodes, hold, release, and switch a node's
power through the RMS where it can. One contract test suite runs against every connector.
"""

from __future__ import annotations

import abc
import enum
from collections.abc import Sequence
from dataclasses import dataclass

from wattsched.scheduler.model import Snapshot


class Capability(enum.StrEnum):
    """What a connector can do beyond taking snapshots."""

    START = "start"
    HOLD = "hold"
    RELEASE = "release"
    POWER = "power"


class ConnectorError(Exception):
    """Base of every error a connector raises."""


class RMSCommandError(ConnectorError):
    """An RMS command exited non-zero (or could not be run)."""

    def __init__(self, command: Sequence[str], returncode: int | None, stderr: str) -> None:
        self.command = list(command)
        self.returncode = returncode
        self.stderr = stderr
        super().__init__(
            f"command {' '.join(self.command)!r} failed (exit {returncode}): {stderr.strip()[:500]}"
        )


class RMSTimeout(ConnectorError):
    """An RMS command did not finish within its timeout."""

    def __init__(self, command: Sequence[str], timeout_s: float) -> None:
        self.command = list(command)
        self.timeout_s = timeout_s
        super().__init__(f"command {' '.join(self.command)!r} timed out after {timeout_s:g} s")


class RMSParseError(ConnectorError):
    """An RMS printed something we could not parse; carries the offending text."""

    def __init__(self, what: str, text: str, reason: str) -> None:
        self.what = what
        self.text = text
        self.reason = reason
        super().__init__(f"cannot parse {what}: {reason}; text starts {text[:200]!r}")


class UnknownJobError(ConnectorError):
    """The job is not known to the RMS, or not in a state that allows the operation."""


class PlacementError(ConnectorError):
    """A start names nodes that break the job's placement rule (units on distinct nodes, one
    node, exclusive nodes): refused before anything is sent to the RMS; the job stays queued.
    """

    def __init__(self, job_id: str, nodes: Sequence[str], reason: str) -> None:
        self.job_id = job_id
        self.nodes = tuple(nodes)
        self.reason = reason
        super().__init__(f"job {job_id} not started on {','.join(nodes)}: {reason}")


class HeldJobError(ConnectorError):
    """A start of a job that someone else holds: an operator (``scontrol hold``) or its user
    (``sbatch -H``). Their hold wins: the job is not released."""

    def __init__(self, job_id: str, held_by: str) -> None:
        self.job_id = job_id
        self.held_by = held_by
        super().__init__(f"job {job_id} is held by {held_by}: not started")


class UnknownNodeError(ConnectorError):
    """The node is not known to the RMS."""


@dataclass(frozen=True, slots=True)
class StartResult:
    """What :meth:`Connector.start` did."""

    job_id: str
    nodes: tuple[str, ...]


class Connector(abc.ABC):
    """A resource manager seen through wattsched's eyes."""

    name: str = "connector"

    @property
    @abc.abstractmethod
    def capabilities(self) -> frozenset[Capability]:
        """What this connector can do."""

    @abc.abstractmethod
    def snapshot(self) -> Snapshot:
        """The cluster now: nodes, running jobs, pending jobs, the power cap."""

    @abc.abstractmethod
    def start(self, job_id: str, nodes: Sequence[str]) -> StartResult:
        """Make the RMS run this pending job now, on exactly these nodes (one per unit)."""

    @abc.abstractmethod
    def hold(self, job_id: str, *, operator: bool = False) -> None:
        """Keep this job from being started by the RMS itself.

        ``operator``: hold it as an operator would (it is then not wattsched's to start until
        an operator gives it back); otherwise a hold that keeps it wattsched's."""

    @abc.abstractmethod
    def release(self, job_id: str) -> None:
        """Let the RMS start this job again."""

    @abc.abstractmethod
    def power(self, node: str, on: bool) -> None:
        """Switch a node on or off through the RMS's own power saving."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release whatever the connector holds (connections, processes)."""
