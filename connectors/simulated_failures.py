"""Power commands that fail in the simulated cluster, drawn from a seeded generator.

EECluster's evaluation counts a node that did not comply with a power command; the tuner
replays with a probability of it (``wattsched tune --power-failure-p``) so that the policy
and the power book's back-off are exercised as they are in production.
"""

from __future__ import annotations

import random

from wattsched.connectors.base import RMSCommandError


class PowerFailures:
    """Fails each power command with probability ``p`` (the same draws for the same seed)."""

    def __init__(self, p: float, seed: int) -> None:
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"power_failure_p {p}: must be between 0 and 1")
        self.p = p
        self._draw = random.Random(seed).random
        self.count = 0
        """Commands failed so far."""

    def check(self, node: str, on: bool) -> None:
        """Raise :class:`RMSCommandError` (the node did not respond) for a failed draw."""
        if self._draw() < self.p:
            self.count += 1
            argv = ["power", node, "on" if on else "off"]
            raise RMSCommandError(argv, 1, f"node {node} did not respond (simulated failure)")
