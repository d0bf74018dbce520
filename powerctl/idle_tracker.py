"""Since when each node has been idle, learnt from successive snapshots.

A node is idle while it is ON, runs no job unit and starts none in this cycle. The tracker
keeps only ``node -> idle since`` for nodes idle at the last snapshot, so everything it knows
is rebuilt from snapshots: after a restart idle times count from the first snapshot seen,
which can only delay a power-off, never cause one. A job that starts and ends between two
snapshots goes unseen (the replay observes every event; the daemon's cycle may not).

Between two snapshots of the same nodes (by name and position) only the nodes whose object
changed, or that run or start a unit at one snapshot and neither at the other, can begin or end
a spell: the tracker looks at those alone (a node idle at both keeps its start, since the clock
did not go back), and at every node otherwise. (A job's nodes start a unit at one snapshot and
run it at the next: they are not looked at again.)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from wattsched.powerctl.node_diff import changed_nodes
from wattsched.powerctl.policy import busy_set
from wattsched.scheduler.model import Node, Plan, PowerState, RunningJob, Snapshot

_NONE: frozenset[str] = frozenset()


class IdleTracker:
    """Remembers, per node, the first snapshot time of its current idle spell."""

    def __init__(self) -> None:
        self._since: dict[str, int] = {}
        self._running: tuple[RunningJob, ...] | None = None
        self._busy: frozenset[str] = frozenset()
        self._last: tuple[tuple[Node, ...], frozenset[str], int] | None = None
        """The nodes, the nodes running or starting a unit, and the time ``_since`` was last
        computed from."""
        self._where: dict[str, int] = {}
        """Node name -> position in the nodes of the last full pass."""

    def busy(self, snap: Snapshot) -> frozenset[str]:
        """:func:`~wattsched.powerctl.policy.busy_nodes` of ``snap`` (kept while its running
        jobs are the same tuple)."""
        if snap.running is not self._running:
            self._busy = busy_set(snap)
            self._running = snap.running
        return self._busy

    def observe(self, snap: Snapshot, plan: Plan | None = None) -> Mapping[str, int]:
        """Update from ``snap`` (and the starts of ``plan``); returns ``node -> idle since``:
        the tracker's own mapping (read it, do not change it), valid until the next call."""
        busy_now = self.busy(snap)
        starting = (
            _NONE.union(*[a.nodes for a in plan.starts_now()])
            if plan is not None and plan.assignments
            else _NONE
        )
        busy = busy_now.union(starting) if starting else busy_now
        last, now = self._last, snap.time
        self._last = (snap.nodes, busy, now)
        if last is not None and last[0] is snap.nodes and last[1] is busy:
            return self._since  # nothing it depends on changed: the same spells
        touched = _touched(last, snap.nodes, busy, now, self._where)
        if touched is None:
            self._where = {n.name: i for i, n in enumerate(snap.nodes)}
            since: dict[str, int] = {}
            for node in snap.nodes:
                if node.state is PowerState.ON and node.name not in busy:
                    since[node.name] = min(self._since.get(node.name, now), now)
            self._since = since
        else:
            since, on = self._since, PowerState.ON
            for node in touched:
                if node.state is on and node.name not in busy:
                    since.setdefault(node.name, now)
                else:
                    since.pop(node.name, None)
        return self._since

    def idle_seconds(self, name: str, now: int) -> int:
        """How long ``name`` has been idle at ``now`` (0 when it is not idle)."""
        t = self._since.get(name)
        return 0 if t is None else max(0, now - t)


def _touched(
    last: tuple[tuple[Node, ...], frozenset[str], int] | None,
    nodes: tuple[Node, ...],
    busy: frozenset[str],
    now: int,
    where: dict[str, int],
) -> Iterable[Node] | None:
    """The nodes of ``nodes`` whose spell may have begun or ended since ``last`` (``busy``: the
    nodes running or starting a unit now), or None when every node must be looked at (other
    nodes or another order, or the clock went back)."""
    if last is None or now < last[2] or len(last[0]) != len(nodes):
        return None
    old = last[0]
    out: dict[str, Node] = {}
    if old is not nodes:
        changed = changed_nodes(old, nodes)
        if changed is None:
            return None
        for _, b in changed:
            out[b.name] = b
    for name in busy ^ last[1] if busy is not last[1] else ():
        i = where.get(name)
        if i is not None and name not in out:
            out[name] = nodes[i]
    return out.values()
