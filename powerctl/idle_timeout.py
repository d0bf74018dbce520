"""The baseline policy: power off what idled ``idle_s`` seconds, power on what the queue needs.

Off: ON nodes idle for at least ``idle_s`` (tracked from successive snapshots) that the safety
rules allow, least efficient first, keeping at least ``min_on`` nodes on (or booting).
On: when the queued jobs' pooled need exceeds the free capacity of the ON and booting nodes, or
a queued unit fits none of them, OFF nodes are powered on, most efficient first, until it is
covered (and as long as the cap allows the boot). A cycle that powers nodes on powers none off,
and no node goes off while the queued jobs would then lack room on the powered nodes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from wattsched.powerctl.idle_tracker import IdleTracker
from wattsched.powerctl.policy import (
    DEFAULT_BACKOFF_S,
    PowerDecision,
    PowerPolicy,
    PowerPolicyError,
    planned_set,
    power_off_refusal,
)
from wattsched.powerctl.selection import (
    choose_on,
    fits_cap,
    keeps_shapes,
    node_room,
    off_extra_w,
    without,
)
from wattsched.powerctl.views import SnapshotViews
from wattsched.scheduler.model import Plan, Resources, Snapshot


@dataclass(slots=True)
class IdleTimeoutPolicy(PowerPolicy):
    """Power off nodes idle longer than ``idle_s``; power on nodes when the queue needs room."""

    idle_s: int = 1800
    """Idle seconds before a node is powered off (30 min: well above the default boot time)."""
    min_on: int = 1
    """Nodes kept on or booting whatever the load (one: a small job never waits for a boot)."""
    backoff_s: int = DEFAULT_BACKOFF_S
    tracker: IdleTracker = field(default_factory=IdleTracker)
    name: str = "idle"
    views: SnapshotViews = field(default_factory=SnapshotViews, repr=False, compare=False)
    """Figures derived from the snapshot's parts, brought from one cycle to the next."""

    def __post_init__(self) -> None:
        if self.idle_s < 0:
            raise PowerPolicyError("IdleTimeoutPolicy", "idle_s", self.idle_s, "must be >= 0")
        if self.min_on < 0:
            raise PowerPolicyError("IdleTimeoutPolicy", "min_on", self.min_on, "must be >= 0")
        if self.backoff_s < 0:
            raise PowerPolicyError("IdleTimeoutPolicy", "backoff_s", self.backoff_s, "must be >= 0")

    def decide(self, snap: Snapshot, plan: Plan) -> PowerDecision:
        """Nodes to power off (idle too long) or on (the queue lacks room)."""
        since = self.tracker.observe(snap, plan)
        views = self.views
        nv, qv = views.nodes(snap), views.queue(snap)
        n_powered = nv.n_powered
        free = views.free(snap)
        need = qv.need
        shortfall = Resources(*(max(0, a - b) for a, b in zip(need, free.as_tuple(), strict=True)))
        shapes = qv.shapes
        rooms = views.shape_rooms(snap)
        unfit = {u: k - rooms[u] for u, k in shapes.items() if k > rooms[u]}
        candidates = views.candidates(snap, self.backoff_s)
        draw_of = lambda: views.draw(snap, plan)  # noqa: E731
        on = choose_on(snap, plan, candidates, shortfall, must_fit=unfit, draw_of=draw_of)
        missing = self.min_on - n_powered - len(on)
        if missing > 0:
            rest = without(candidates, on)
            on += choose_on(
                snap, plan, rest, Resources(cores=1 << 30), max_nodes=missing, draw_of=draw_of
            )
        if any(shortfall.as_tuple()) or unfit or on:
            reason = (
                f"queue needs {Resources(*need)} and {sum(unfit.values())} unplaceable units, "
                f"free {free}: power on {len(on)}"
            )
            return PowerDecision(on=tuple(n.name for n in on), reason=reason)
        busy, planned = self.tracker.busy(snap), planned_set(plan)
        draw: float | None = None  # computed on first use: most cycles switch nothing
        # What the powered nodes have free beyond the queue's need: a node may only go off
        # when the queue still fits without it.
        slack = [f - n for f, n in zip(free.as_tuple(), need, strict=True)]
        queued_res = [n > 0 for n in need]
        off: list[str] = []
        recheck: int | None = None
        allowed = n_powered - self.min_on
        for node in nv.in_off_order(since):
            if power_off_refusal(node, snap, plan, self.backoff_s, busy=busy, planned=planned):
                continue
            due = since[node.name] + self.idle_s
            if due > snap.time:
                recheck = due if recheck is None else min(recheck, due)
                continue
            cap = node.capacity.as_tuple()
            if any(q and c > s for q, c, s in zip(queued_res, cap, slack, strict=True)):
                continue
            if not keeps_shapes(node, shapes, rooms):
                continue  # a queued job would no longer fit the powered nodes
            if len(off) >= allowed:
                continue
            if snap.cap.limited:  # with no cap no draw is refused: it is not computed
                if draw is None:
                    draw = views.draw(snap, plan)
                if not fits_cap(snap, draw, off_extra_w(node), node):
                    continue
                draw += off_extra_w(node)
            slack = [s - c for s, c in zip(slack, cap, strict=True)]
            rooms = {u: r - node_room(u, node) for u, r in rooms.items()}
            off.append(node.name)
        reason = f"{len(off)} nodes idle for {self.idle_s} s or more" if off else "nothing to do"
        return PowerDecision(off=tuple(off), reason=reason, recheck_at=recheck)
