"""Since when each node has been idle, learnt from successive snapshots.

A node is idle while it is ON, runs no job unit and starts none in this cycle. The tracker
keeps only ``node -> idle since`` for nodes idle at the last snapshot, so everything it knows
is rebuilt from snapshots: after a restart idle times count from the first snapshot seen,
which can only delay a power-off, never cause one. A job that starts and ends between two
snapshots goes unseen (the replay observes every event; the daemon's cycle may not).
"""

from __future__ import annotations

from wattsched.powerctl.policy import busy_nodes
from wattsched.scheduler.model import Node, Plan, PowerState, RunningJob, Snapshot


class IdleTracker:
    """Remembers, per node, the first snapshot time of its current idle spell."""

    def __init__(self) -> None:
        self._since: dict[str, int] = {}
        self._running: tuple[RunningJob, ...] | None = None
        self._busy: frozenset[str] = frozenset()
        self._seen: tuple[tuple[Node, ...], frozenset[str]] | None = None
        """The nodes and busy set ``_since`` was last computed from with no start in the plan:
        the very same objects give the very same ``_since``."""

    def busy(self, snap: Snapshot) -> frozenset[str]:
        """:func:`busy_nodes` of ``snap`` (kept while its running jobs are the same tuple)."""
        if snap.running is not self._running:
            self._busy = frozenset(busy_nodes(snap))
            self._running = snap.running
        return self._busy

    def observe(self, snap: Snapshot, plan: Plan | None = None) -> dict[str, int]:
        """Update from ``snap`` (and the starts of ``plan``); returns ``node -> idle since``."""
        busy_now = self.busy(snap)
        starting = [n for a in plan.starts_now() for n in a.nodes] if plan is not None else []
        seen = self._seen
        if not starting and seen is not None and seen[0] is snap.nodes and seen[1] is busy_now:
            return dict(self._since)  # nothing it depends on changed: the same spells
        self._seen = None if starting else (snap.nodes, busy_now)
        busy = busy_now.union(starting)
        since: dict[str, int] = {}
        for node in snap.nodes:
            if node.state is PowerState.ON and node.name not in busy:
                since[node.name] = min(self._since.get(node.name, snap.time), snap.time)
        self._since = since
        return dict(since)

    def idle_seconds(self, name: str, now: int) -> int:
        """How long ``name`` has been idle at ``now`` (0 when it is not idle)."""
        t = self._since.get(name)
        return 0 if t is None else max(0, now - t)
