"""EECluster's hybrid genetic fuzzy system (HGFS) node power policy.

Crisp expert rules, in slots (cores) of the queued jobs:

1. when the ON (and booting) nodes cannot run the largest queued job, power on nodes until
   they can (at most the whole cluster); slots are counted per resource (cores, memory,
   GPUs, MICs: the largest request of each), and a queued unit that fits no powered node
   gets a node it fits;
2. when the queued jobs' mean wait exceeds ``wait_on_s`` or more than ``queue_on`` jobs wait,
   power on one node;
3. when the mean wait is below ``wait_off_s`` or fewer than ``queue_off`` jobs wait, power
   off one node (beyond what the fuzzy rules give).

Fuzzy rules: a zero-order Takagi-Sugeno-Kang model over each idle node's idle time, with N
triangular sets peaking at ``centers`` (a strong partition: the first set is 1 below its
peak, the last 1 beyond its peak) and N ``weights`` in [0, 1]; a node's truth of "this node
must be powered off" is ``sum_i mu_i(idle) * w_i``, and the number of nodes to power off is
the floor of the sum over the idle nodes the safety rules allow.

Power-on decisions take priority: a cycle that powers nodes on powers none off. Node choice
follows :mod:`wattsched.powerctl.selection`. Two additions to the paper, both documented in
``docs/powerctl.md``: ``min_on`` nodes stay on, and no node is switched beyond the power cap.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from operator import sub

import numpy as np

from wattsched.powerctl import fuzzy_kernels
from wattsched.powerctl.idle_tracker import IdleTracker
from wattsched.powerctl.policy import (
    DEFAULT_BACKOFF_S,
    PowerDecision,
    PowerPolicy,
    PowerPolicyError,
    decision,
    may_power_off,
    planned_set,
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
from wattsched.scheduler.model import Job, Node, Plan, Resources, Snapshot

_ALL = Resources(cores=1 << 30)


def _bad(name: str, value: object, rule: str) -> PowerPolicyError:
    return PowerPolicyError("HGFSParams", name, value, rule)


@dataclass(frozen=True, slots=True)
class HGFSParams:
    """One HGFS configuration (what NSGA-II tunes), validated at construction."""

    wait_on_s: float = 3600.0
    """Rule 2: power on one node when the queued jobs' mean wait is above this (seconds)."""
    queue_on: int = 10
    """Rule 2: power on one node when more jobs than this wait."""
    wait_off_s: float = 0.0
    """Rule 3: power off one node when the mean wait is below this (0: never on wait)."""
    queue_off: int = 0
    """Rule 3: power off one node when fewer jobs than this wait (0: never on length)."""
    centers: tuple[float, ...] = (0.0, 900.0, 3600.0)
    """Peaks of the N triangular sets over idle seconds ("short", "medium", "long")."""
    weights: tuple[float, ...] = (0.0, 0.3, 1.0)
    """The N rule weights in [0, 1]: truth of "power it off" for each set."""
    min_on: int = 1
    """Nodes kept on or booting whatever the load (not in the paper; 0 to drop it)."""
    period_s: int = 300
    """How often the policy wants to be asked while idle times or waits still grow."""
    backoff_s: int = DEFAULT_BACKOFF_S
    need_on: float = 0.0
    """Rule 1b (not in the paper): power on until the powered nodes' free resources cover this
    fraction of the queued jobs' pooled need, and power none off that would leave less (1: the
    idle-timeout policy's power-on; 0, the default: the paper's rule 1 alone)."""
    spare_on: int = 0
    """Rule 4 (not in the paper): keep this many powered nodes idle, ready for the next
    arrivals (power nodes on when fewer are, power none off that would leave fewer)."""

    def __post_init__(self) -> None:
        for name in ("wait_on_s", "wait_off_s"):
            value = getattr(self, name)
            if not (isinstance(value, int | float) and math.isfinite(value) and value >= 0):
                raise _bad(name, value, "must be a finite number >= 0")
        for name in ("queue_on", "queue_off", "min_on", "spare_on", "backoff_s"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 0:
                raise _bad(name, value, "must be an integer >= 0")
        if not (isinstance(self.need_on, int | float) and 0.0 <= self.need_on <= 1.0):
            raise _bad("need_on", self.need_on, "must lie in [0, 1]")
        if not isinstance(self.period_s, int) or self.period_s <= 0:
            raise _bad("period_s", self.period_s, "must be an integer > 0")
        if self.wait_off_s > self.wait_on_s:
            raise _bad("wait_off_s", self.wait_off_s, f"must be <= wait_on_s={self.wait_on_s}")
        if self.queue_off > self.queue_on:
            raise _bad("queue_off", self.queue_off, f"must be <= queue_on={self.queue_on}")
        if not self.centers:
            raise _bad("centers", self.centers, "must hold at least one fuzzy set")
        if len(self.weights) != len(self.centers):
            raise _bad(
                "weights", self.weights, f"must hold one weight per set ({len(self.centers)})"
            )
        if any(not math.isfinite(c) or c < 0 for c in self.centers):
            raise _bad("centers", self.centers, "must be finite idle seconds >= 0")
        if any(b <= a for a, b in zip(self.centers, self.centers[1:], strict=False)):
            raise _bad("centers", self.centers, "must be strictly increasing")
        if any(not (0.0 <= w <= 1.0) for w in self.weights):
            raise _bad("weights", self.weights, "must each lie in [0, 1]")

    def memberships(self, idle_s: float) -> tuple[float, ...]:
        """The degree of ``idle_s`` in each triangular set (they sum to 1)."""
        c = self.centers
        out = []
        for i, peak in enumerate(c):
            if idle_s <= peak:
                left = c[i - 1] if i > 0 else None
                mu = 1.0 if left is None else max(0.0, (idle_s - left) / (peak - left))
            else:
                right = c[i + 1] if i + 1 < len(c) else None
                mu = 1.0 if right is None else max(0.0, (right - idle_s) / (right - peak))
            out.append(mu)
        return tuple(out)

    def truth(self, idle_s: float) -> float:
        """Degree of truth of "this node must be powered off" after ``idle_s`` idle seconds."""
        return sum(m * w for m, w in zip(self.memberships(idle_s), self.weights, strict=True))

    def truths(self, idle_s: Sequence[float] | np.ndarray) -> np.ndarray:
        """:meth:`truth` of every idle time in ``idle_s`` (any shape), vectorised: the very
        same floats (the two sets that overlap at ``x``, in the same order of operations;
        below the first peak the first weight, beyond the last the last)."""
        c = np.asarray(self.centers, dtype=float)
        w = np.asarray(self.weights, dtype=float)
        x = np.clip(np.asarray(idle_s, dtype=float), c[0], c[-1])
        if len(c) == 1:
            return np.full(x.shape, w[0])
        i = np.clip(np.searchsorted(c, x, side="left") - 1, 0, len(c) - 2)
        lo, hi = c[i], c[i + 1]
        d = hi - lo
        return ((hi - x) / d) * w[i] + ((x - lo) / d) * w[i + 1]

    def fuzzy_off_count(self, idle_times: Sequence[float] | np.ndarray) -> int:
        """How many nodes the fuzzy rules power off: the floor of the summed truths (summed
        in order, as ``sum`` does)."""
        if not len(idle_times):
            return 0
        c, w = self._arrays()
        return int(fuzzy_kernels.off_count(c, w, np.asarray(idle_times, dtype=float), 0.0))

    def next_count_change(self, idle_times: Sequence[float] | np.ndarray) -> int | None:
        """The first multiple of ``period_s`` after which nodes idle ``idle_times`` now give a
        larger fuzzy count (None when their truths saturate first): when to look again."""
        if not len(idle_times):
            return None
        c, w = self._arrays()
        idle = np.asarray(idle_times, dtype=float)
        step = int(fuzzy_kernels.next_change(c, w, idle, self.period_s))
        return step if step > 0 else None

    def _arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """``centers`` and ``weights`` as float arrays, for the kernels (made once per pair)."""
        return _float_arrays(self.centers, self.weights)


_Arrays = tuple[tuple[float, ...], tuple[float, ...], np.ndarray, np.ndarray]
_last_arrays: _Arrays = ((), (), np.zeros(0), np.zeros(0))
"""The last ``centers`` and ``weights`` asked and their arrays, one tuple rebound whole (a
replay asks with the same two tuples at every cycle; kept by identity, so equal floats of
another sign of zero are never mixed up)."""


def _float_arrays(
    centers: tuple[float, ...], weights: tuple[float, ...]
) -> tuple[np.ndarray, np.ndarray]:
    """``centers`` and ``weights`` as float arrays, made again only for other tuples."""
    global _last_arrays
    last = _last_arrays
    if last[0] is not centers or last[1] is not weights:
        c, w = np.asarray(centers, dtype=float), np.asarray(weights, dtype=float)
        last = _last_arrays = (centers, weights, c, w)
    return last[2], last[3]


@dataclass(slots=True)
class HGFSPolicy(PowerPolicy):
    """The EECluster HGFS policy with parameters ``params``."""

    params: HGFSParams = field(default_factory=HGFSParams)
    tracker: IdleTracker = field(default_factory=IdleTracker)
    name: str = "hgfs"
    views: SnapshotViews = field(default_factory=SnapshotViews, repr=False, compare=False)
    """Figures derived from the snapshot's parts, kept while they are the same objects."""

    def warm(self) -> None:
        """Load the fuzzy rules' compiled kernels (:func:`fuzzy_kernels.warm`)."""
        fuzzy_kernels.warm()

    def decide(self, snap: Snapshot, plan: Plan) -> PowerDecision:
        """Crisp rules first (power on), then the fuzzy rules and rule 3 (power off)."""
        p = self.params
        since = self.tracker.observe(snap, plan)
        qv = self.views.queue(snap)
        nv = self.views.nodes(snap)
        queued = qv.queued
        mean_wait = qv.mean_wait(snap.time)
        n_powered, on_slots = nv.n_powered, nv.on_slots
        # The largest request of each resource among the queued jobs, at most the cluster's.
        largest = list(map(min, qv.most, nv.all_slots))  # both one value per resource
        candidates = self.views.candidates(snap, p.backoff_s)
        period = snap.time + p.period_s
        # Rule 1: room for the largest queued job (and a node for every queued unit's shape).
        shapes = qv.shapes
        rooms = self.views.shape_rooms(snap)
        unfit = {}
        for u, k in shapes.items():
            r = rooms[u]
            if k > r:
                unfit[u] = k - r
        lack = [x if x > 0 else 0 for x in map(sub, largest, on_slots)]
        rule1 = any(lack)
        slack = self._need_slack(snap, qv.need) if queued else None
        if slack is not None:
            # Rule 1b: the free resources of the powered nodes cover need_on of the queue's.
            lack = [max(a, -b) for a, b in zip(lack, slack, strict=True)]
            rule1 = any(lack)
        rule1 = rule1 or bool(unfit)
        draw_of = lambda: self.views.draw(snap, plan)  # noqa: E731
        # choose_on finds nothing to cover when rule 1 does not hold (every lack is >= 0).
        on = (
            choose_on(snap, plan, candidates, Resources(*lack), must_fit=unfit, draw_of=draw_of)
            if rule1 and candidates
            else []
        )
        # Rule 2: long waits or a long queue: one node more.
        rule2 = bool(queued) and (mean_wait > p.wait_on_s or len(queued) > p.queue_on)
        if rule2:
            rest = without(candidates, on)
            on += choose_on(snap, plan, rest, _ALL, max_nodes=1, draw_of=draw_of)
        missing = p.min_on - n_powered - len(on)
        if missing > 0:
            rest = without(candidates, on)
            on += choose_on(snap, plan, rest, _ALL, max_nodes=missing, draw_of=draw_of)
        spare = self._spare(snap, nv.powered) if p.spare_on else 0
        if p.spare_on > spare + len(on):
            # Rule 4: a reserve of idle powered nodes.
            rest = without(candidates, on)
            more = p.spare_on - spare - len(on)
            on += choose_on(snap, plan, rest, _ALL, max_nodes=more, draw_of=draw_of)
        if rule1 or rule2 or on:
            left = bool(queued) and bool(without(candidates, on))
            return decision(
                (),
                tuple([n.name for n in on]),
                f"rule1={rule1} (largest {largest}, {on_slots} on) rule2={rule2} "
                f"(mean wait {mean_wait:.0f} s, {len(queued)} queued): power on {len(on)}",
                period if left else None,
            )
        return self._power_off(
            snap,
            plan,
            since,
            queued,
            mean_wait,
            n_powered,
            largest,
            shapes,
            bool(candidates),
            slack,
            spare - p.spare_on if p.spare_on else None,
        )

    def _spare(self, snap: Snapshot, powered: list[Node]) -> int:
        """How many powered (on or booting) available nodes run nothing."""
        busy = self.tracker.busy(snap)
        return sum(1 for n in powered if n.available and n.name not in busy)

    def _need_slack(self, snap: Snapshot, need: Sequence[int]) -> list[int] | None:
        """Per resource, the powered nodes' free resources beyond ``need_on`` of the queued
        jobs' pooled ``need`` (negative: short); None when rule 1b is off."""
        if self.params.need_on <= 0.0:
            return None
        free = self.views.free(snap).as_tuple()
        return [
            f - math.ceil(self.params.need_on * n - 1e-9) for f, n in zip(free, need, strict=True)
        ]

    def _power_off(
        self,
        snap: Snapshot,
        plan: Plan,
        since: Mapping[str, int],
        queued: list[Job],
        mean_wait: float,
        n_powered: int,
        largest: list[int],
        shapes: dict[Resources, int],
        can_power_on: bool,
        slack: list[int] | None,
        spare_left: int | None,
    ) -> PowerDecision:
        p = self.params
        busy, planned = self.tracker.busy(snap), planned_set(plan)
        nv = self.views.nodes(snap)
        idle = may_power_off(nv.in_off_order(since), snap.time, p.backoff_s, busy, planned)
        now = snap.time
        idle_times = np.array([now - since[n.name] for n in idle], dtype=float)
        fuzzy = p.fuzzy_off_count(idle_times)
        rule3 = mean_wait < p.wait_off_s or len(queued) < p.queue_off
        want = min(fuzzy + int(rule3), len(idle), max(0, n_powered - p.min_on))
        if spare_left is not None:
            want = min(want, max(0, spare_left))  # rule 4: keep the reserve
        slots = nv.on_slots
        rooms = self.views.shape_rooms(snap)
        limited = snap.cap.limited  # with no cap no draw is refused: it is not computed
        draw = self.views.draw(snap, plan) if want and limited else 0.0
        off: list[str] = []
        for node in idle:
            if len(off) >= want:
                break
            cap = node.capacity.as_tuple()
            if any(s - c < big for s, c, big in zip(slots, cap, largest, strict=True)):
                continue  # rule 1 again: keep room for the largest queued job
            if not keeps_shapes(node, shapes, rooms):
                continue  # and a place for every unit of every queued job
            if slack is not None:
                if any(n and c > s for n, c, s in zip(largest, cap, slack, strict=True)):
                    continue  # rule 1b: keep need_on of the queue's need free
                slack = [s - c for s, c in zip(slack, cap, strict=True)]
            if limited:
                if not fits_cap(snap, draw, off_extra_w(node), node):
                    continue
                draw += off_extra_w(node)
            slots = [s - c for s, c in zip(slots, cap, strict=True)]
            rooms = {u: r - node_room(u, node) for u, r in rooms.items()}
            off.append(node.name)
        # Look again when the fuzzy count of the nodes left idle grows, or when the queue's
        # mean wait reaches rule 2's threshold; not at every period in between.
        left = idle_times[[n.name not in off for n in idle]] if off else idle_times
        step = p.next_count_change(left)
        times = [snap.time + step] if step is not None else []
        if queued and can_power_on:
            times.append(snap.time + math.floor(p.wait_on_s - mean_wait) + 1)
        return decision(
            tuple(off),
            (),
            f"fuzzy {fuzzy} + rule3 {int(rule3)} over {len(idle)} idle nodes: power off {len(off)}",
            min(times) if times else None,
        )
