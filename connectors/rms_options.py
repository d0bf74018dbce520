"""Settings shared by the real-RMS connectors (Slurm, PBS, Grid Engine).

How jobs and nodes that an RMS describes in its own terms become model objects: which
partitions/queues wattsched manages, the walltime of a job with none, the node power model,
and how a job's power is estimated (a per-core/per-GPU model, or ``power=NNN`` in the job's
comment).
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from wattsched.connectors.base import ConnectorError
from wattsched.scheduler.model import NodePowerModel, Resources

_COMMENT_POWER = re.compile(r"(?:^|[\s,;])power=(\d+(?:\.\d+)?)\s*[wW]?(?=$|[\s,;])")


@dataclass(frozen=True, slots=True)
class JobPowerModel:
    """Estimated watts of one job unit from what it asks for.

    With both rates None (the default) no estimate is made and the dispatcher computes a
    unit's power from the node's power model. A ``power=NNN`` word in the job's comment
    (whole-job watts, split evenly over its units) always wins.
    """

    core_w: float | None = None
    gpu_w: float | None = None
    base_w: float = 0.0

    def __post_init__(self) -> None:
        for name in ("core_w", "gpu_w", "base_w"):
            v = getattr(self, name)
            if v is not None and v < 0:
                raise ValueError(f"JobPowerModel: {name}={v!r} must be >= 0")

    def unit_watts(self, unit: Resources, units: int, comment: str = "") -> float | None:
        """The estimate for one unit, or None to leave it to the node model."""
        m = _COMMENT_POWER.search(comment or "")
        if m:
            return float(m.group(1)) / max(units, 1)
        if self.core_w is None and self.gpu_w is None:
            return None
        return self.base_w + unit.cores * (self.core_w or 0.0) + unit.gpus * (self.gpu_w or 0.0)


def comment_power(comment: str) -> float | None:
    """The whole-job watts a user wrote as ``power=NNN`` in a job comment, or None."""
    m = _COMMENT_POWER.search(comment or "")
    return float(m.group(1)) if m else None


@dataclass(frozen=True, slots=True)
class RMSOptions:
    """What every real-RMS connector needs beyond its command runner."""

    partitions: tuple[str, ...] = ()
    """Partitions (Slurm) or queues (PBS, SGE) wattsched manages; empty: all of them."""
    default_walltime_s: int = 86400
    """Walltime assumed for a job that asks for none (unlimited): one day."""
    node_power: NodePowerModel = field(default_factory=NodePowerModel)
    job_power: JobPowerModel = field(default_factory=JobPowerModel)
    boot_s: int = 150
    shutdown_s: int = 6
    clock: Callable[[], float] = time.time
    """Wall clock for snapshot times (injected so tests can pin it)."""

    def __post_init__(self) -> None:
        if self.default_walltime_s <= 0:
            raise ValueError(
                f"RMSOptions: default_walltime_s={self.default_walltime_s!r} must be > 0"
            )

    def manages(self, partition: str | None) -> bool:
        """True when wattsched manages this partition/queue."""
        if not self.partitions:
            return True
        return partition is not None and partition in self.partitions

    def first_managed(self, partitions: str) -> str | None:
        """The first managed partition of a comma-separated list (a job may name several)."""
        for p in (partitions or "").split(","):
            p = p.strip()
            if p and self.manages(p):
                return p
        return None if self.partitions else (partitions.split(",")[0].strip() or None)


def per_unit(total: int, units: int) -> int:
    """``total`` spread evenly over ``units`` (rounded up)."""
    return math.ceil(total / max(units, 1)) if total > 0 else 0


class UnsupportedOperation(ConnectorError):
    """The connector cannot do this (see its ``capabilities``)."""

    def __init__(self, connector: str, operation: str) -> None:
        self.connector = connector
        self.operation = operation
        super().__init__(f"the {connector} connector cannot {operation}")


class PowerBusyError(ConnectorError):
    """The node is still switching the other way; ask again once it has settled."""

    def __init__(self, node: str, state: str) -> None:
        self.node = node
        self.state = state
        super().__init__(f"node {node} is {state}: power command refused until it settles")
