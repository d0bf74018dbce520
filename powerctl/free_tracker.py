"""The free resources of the usable nodes, brought from one snapshot to the next.

:func:`wattsched.powerctl.selection.free_capacity` of the powered and available nodes walks
every running job's nodes each time; between two snapshots only a few jobs start or end and a
few nodes switch. :class:`FreeTracker` keeps what the running units use per node and their sum
over the usable nodes, and applies only the jobs that came or went (by object: a connector
keeps a running job's object while it runs) and the nodes whose usability changed. Integer
sums, so the result is exactly the walk's.
"""

from __future__ import annotations

from wattsched.powerctl.node_diff import changed_nodes
from wattsched.scheduler.model import Node, PowerState, RunningJob

POWERED = (PowerState.ON, PowerState.BOOTING)


def is_usable(node: Node) -> bool:
    """True when ``node`` is powered (on or booting) and available."""
    return node.state in POWERED and node.available


class FreeTracker:
    """Per node, what the running units use; and the sum of it over the usable nodes."""

    def __init__(self) -> None:
        self._nodes: tuple[Node, ...] | None = None
        self._running: tuple[RunningJob, ...] | None = None
        self._jobs: dict[int, RunningJob] = {}
        self._used: dict[str, list[int]] = {}
        self._usable: set[str] = set()
        self._sum = [0, 0, 0, 0]

    def used(self, nodes: tuple[Node, ...], running: tuple[RunningJob, ...]) -> list[int]:
        """What the running units use on the usable nodes of ``nodes``, per resource."""
        if not self._restate(nodes):
            self._rebuild(nodes, running)
            return list(self._sum)
        if running is self._running:
            return list(self._sum)
        jobs = {id(rj): rj for rj in running}
        if len(jobs) != len(running):
            self._rebuild(nodes, running)  # a job object twice: walk them all
            return list(self._sum)
        old = self._jobs
        for key, rj in old.items():
            if key not in jobs:
                self._add(rj, -1)
        for key, rj in jobs.items():
            if key not in old:
                self._add(rj, 1)
        self._jobs, self._running = jobs, running
        return list(self._sum)

    def _restate(self, nodes: tuple[Node, ...]) -> bool:
        """Bring the usable set to ``nodes``; False when they are other nodes or another
        order (then everything is walked again)."""
        old = self._nodes
        if old is None:
            return False
        if old is not nodes:
            changed = changed_nodes(old, nodes)
            if changed is None:
                return False
            for a, b in changed:
                sign = int(is_usable(b)) - int(is_usable(a))
                if sign:
                    if sign > 0:
                        self._usable.add(b.name)
                    else:
                        self._usable.discard(b.name)
                    use = self._used.get(b.name)
                    if use is not None:
                        self._sum = [s + sign * u for s, u in zip(self._sum, use, strict=True)]
            self._nodes = nodes
        return True

    def _rebuild(self, nodes: tuple[Node, ...], running: tuple[RunningJob, ...]) -> None:
        self._nodes = nodes
        self._usable = {n.name for n in nodes if is_usable(n)}
        if len({n.name for n in nodes}) != len(nodes):
            self._nodes = None  # a name twice: never restated, always walked
        self._jobs = {}
        self._used = {}
        self._sum = [0, 0, 0, 0]
        for rj in running:
            self._jobs[id(rj)] = rj
            self._add(rj, 1)
        self._running = running
        if len(self._jobs) != len(running):
            self._nodes = None  # a job object twice: never diffed, always walked

    def _add(self, rj: RunningJob, sign: int) -> None:
        c, m, g, x = (sign * a for a in rj.job.unit.as_tuple())
        usable, used = self._usable, self._used
        on_usable = 0  # the job's units on usable nodes: the sum moves by them at once
        for name in rj.nodes:
            use = used.get(name)
            if use is None:
                use = used[name] = [0, 0, 0, 0]
            use[0] += c
            use[1] += m
            use[2] += g
            use[3] += x
            if name in usable:
                on_usable += 1
        if on_usable:
            k, s = on_usable, self._sum
            self._sum = [s[0] + k * c, s[1] + k * m, s[2] + k * g, s[3] + k * x]
