"""The node mapper shared by every dispatcher: per-node capacities, power, unit placement.

:class:`ClusterState` is a mutable working copy of a snapshot's nodes as numpy arrays (free
resources per node, busy units per node, power drawn now). :meth:`ClusterState.place` finds
nodes for all the units of a job, in a given node order, that fit both the resources and the
power cap; :meth:`ClusterState.commit` books them. :class:`~wattsched.scheduler.state_cache.
StateCache` (in its own module, importable from here too) rebuilds a state from successive snapshots
incrementally (only running jobs that changed are applied), which keeps the control cycle
cheap in long replays.

Power accounting (see :class:`~wattsched.scheduler.model.NodePowerModel`): the static draw of
every node in its power state, plus, per node with at least one busy unit, ``first_core_w``,
plus the power of each busy unit (the job's own estimate, or the node model's per resource).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from wattsched.scheduler.fit_kernels import (
    RULE_FREE,
    RULE_PACK,
    RULE_SCATTER,
    book,
    fit_into,
    place_after_ends,
)
from wattsched.scheduler.model import Placement, PowerCap
from wattsched.scheduler.node_arrays import (
    EPS_W,
    FloatArray,
    IntArray,
    JobVec,
    NodeArrays,
)
from wattsched.scheduler.running_book import placement_of as placement_of

if TYPE_CHECKING:
    from wattsched.scheduler.state_cache import StateCache as StateCache

_NO_LIMIT: IntArray = np.zeros(0, dtype=np.int64)
_INF = math.inf
_RULE = {Placement.FREE: RULE_FREE, Placement.SCATTER: RULE_SCATTER, Placement.PACK: RULE_PACK}


class ClusterState:
    """Free resources and power of the cluster, mutable, for one planning pass."""

    def __init__(self, arrays: NodeArrays, cap: PowerCap) -> None:
        self.arrays = arrays
        self.cap = cap
        self.free: IntArray = arrays.capacity.copy()
        self.busy_units: IntArray = np.zeros(len(arrays.names), dtype=np.int64)
        self.held_whole: IntArray = np.zeros(len(arrays.names), dtype=np.int64)
        self.exclusive_jobs = 0
        """Exclusive jobs booked (0: the fast path skips every rule check)."""
        """Exclusive jobs on each node (a node held whole takes no other job)."""
        self.power_w: float = arrays.static_w
        self.free_total_l: list[int] = arrays.total_capacity.tolist()
        """Free resources pooled over the nodes, as Python ints (cheap scalar checks; the list is
        updated in place, never rebound, so a caller may hold it across commits)."""
        self.last_fail = ""
        """Why the last :meth:`place` failed: ``resources`` or ``power``."""
        n = len(arrays.names)
        self._scratch = (np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64))
        """Where :func:`fit_into` writes a placement (shared by the copies: each placement is
        copied out at once)."""
        self._spare_busy: IntArray = np.empty(n, dtype=np.int64)
        """Scratch busy units of :meth:`place_after` (shared by the copies)."""

    def copy(self) -> ClusterState:
        """An independent copy (for look-ahead)."""
        other = ClusterState.__new__(ClusterState)
        other.arrays = self.arrays
        other.cap = self.cap
        other.free = self.free.copy()
        other.busy_units = self.busy_units.copy()
        other.held_whole = self.held_whole.copy()
        other.exclusive_jobs = self.exclusive_jobs
        other.power_w = self.power_w
        other.free_total_l = list(self.free_total_l)
        other.last_fail = ""
        other._scratch = self._scratch
        other._spare_busy = self._spare_busy
        return other

    # -- power -------------------------------------------------------------------------------

    def unit_watts(self, jv: JobVec, idx: IntArray) -> FloatArray:
        """Power of one unit of this job on each of the nodes ``idx``."""
        if jv.unit_power_w is not None:
            return np.full(len(idx), jv.unit_power_w, dtype=float)
        if jv.node_w is not None:
            return jv.node_w[idx]
        return self.arrays.res_w[idx] @ jv.req.astype(float)

    def units_watts(self, jv: JobVec, idx: IntArray, counts: IntArray) -> float:
        """Power of ``counts[i]`` units on node ``idx[i]``, first cores not counted."""
        if jv.flat_w is not None:
            return jv.flat_w * jv.units if len(counts) else 0.0
        return float(np.dot(self.unit_watts(jv, idx), counts))

    def delta_watts(self, jv: JobVec, idx: IntArray, counts: IntArray) -> float:
        """Extra power if ``counts[i]`` units go on node ``idx[i]``."""
        if not self.arrays.has_first_core:
            return self.units_watts(jv, idx, counts)
        fc = self.arrays.first_core_w[idx]
        woken = float(fc[self.busy_units[idx] == 0].sum())
        return self.units_watts(jv, idx, counts) + woken

    def cap_limit(self, t: int, walltime: int) -> float:
        """The lowest cap over a job's possible run ``[t, t + walltime)``."""
        return self.cap.min_over(t, t + walltime)

    # -- placement ---------------------------------------------------------------------------

    def quick_reject(self, jv: JobVec) -> bool:
        """True when the job cannot fit whatever the placement (pooled resources)."""
        f = self.free_total_l
        t = jv.total_l
        return t[0] > f[0] or t[1] > f[1] or t[2] > f[2] or t[3] > f[3]

    def place(
        self,
        jv: JobVec,
        order: IntArray,
        t: int,
        *,
        limit_k: IntArray | None = None,
        power_limit: float | None = None,
    ) -> tuple[IntArray, IntArray] | None:
        """Nodes for every unit of the job, or None if it does not fit now.

        ``order`` is the node preference (indexes, best first); units fill each node in turn
        as far as it has room. ``limit_k`` caps the units per node (EASY's spare capacity).
        The power check is: power now + the job's delta <= the lowest cap over its walltime
        (or ``power_limit`` when given). Returns ``(node_indexes, unit_counts)``.
        """
        self.last_fail = "resources"
        if self.quick_reject(jv):
            return None
        limit = self.cap_limit(t, jv.walltime) if power_limit is None else power_limit
        if self.power_w + jv.min_w > limit + EPS_W:
            self.last_fail = "power"  # not even on the cheapest nodes
            return None
        take, counts = self._scratch
        if len(order) > len(take):  # never in practice: an order lists each node once
            take, counts = self._scratch = (np.empty_like(order), np.empty_like(order))
        m = fit_into(
            self.free,
            jv.req,
            jv.nz,
            self.arrays.usable,
            order,
            jv.units,
            _NO_LIMIT if limit_k is None else limit_k,
            limit_k is not None,
            self.held_whole,
            self.busy_units,
            self.exclusive_jobs > 0,
            jv.exclusive,
            _RULE[jv.placement],
            take,
            counts,
        )
        if not m:
            return None
        take, counts = take[:m], counts[:m]
        # Under an infinite limit (no cap) no delta breaks it: its sum is not computed.
        if limit != _INF and self.power_w + self.delta_watts(jv, take, counts) > limit + EPS_W:
            self.last_fail = "power"
            return None
        self.last_fail = ""
        return take.copy(), counts.copy()

    def place_after(
        self, jv: JobVec, ended: Sequence[IntArray], order: IntArray, t: int
    ) -> tuple[IntArray, IntArray, IntArray] | None:
        """``(idx, cnt, free)``: the placement that :meth:`copy`, :meth:`release_many` of the
        jobs on the nodes ``ended`` (each job's node indexes), :meth:`place` at ``t`` and
        :meth:`commit` give (empty when the job does not fit), and the copy's free resources
        after, in one compiled call (:func:`~wattsched.scheduler.fit_kernels.place_after_ends`);
        this state is left unchanged. It applies when the cap is infinite over the job's run,
        no exclusive job is booked or placed, and no node holds more than one unit (each unit
        a whole node); None when it does not (the caller takes those steps)."""
        if jv.exclusive or self.exclusive_jobs or self.cap_limit(t, jv.walltime) != _INF:
            return None
        nodes = np.concatenate(ended) if ended else _NO_LIMIT  # one layout for the kernel
        take, counts = self._scratch
        if len(order) > len(take):  # never in practice: an order lists each node once
            return None
        spare = np.empty_like(self.free)
        a = self.arrays
        m = place_after_ends(
            self.free, self.busy_units, a.capacity, nodes, jv.req, jv.nz, a.usable, order,
            jv.units, self.held_whole, _RULE[jv.placement], take, counts, spare,
            self._spare_busy,
        )  # fmt: skip
        if m < 0:
            return None
        return take[:m].copy(), counts[:m].copy(), spare

    def rule_violation(self, jv: JobVec, idx: IntArray, counts: IntArray) -> str:
        """Why this placement breaks the job's rule or an exclusive job's ("" when not)."""
        if self.exclusive_jobs and (self.held_whole[idx] > 0).any():
            return "a node is held whole by an exclusive job"
        if jv.exclusive and (self.busy_units[idx] > 0).any():
            return "an exclusive job needs empty nodes"
        if jv.placement is Placement.SCATTER and (counts > 1).any():
            return "scattered units share a node"
        if jv.placement is Placement.PACK and len(idx) > 1:
            return "packed units span nodes"
        return ""

    def check(self, jv: JobVec, idx: IntArray, counts: IntArray, t: int) -> str:
        """Why this given placement cannot start at ``t`` ("" when it can): the nodes must be
        usable, have room for their units, respect the placement rules, and the power must
        stay under the cap."""
        if len(idx) == 0 or int(counts.sum()) != jv.units:
            return "wrong number of units"
        if not self.arrays.usable[idx].all():
            return "a node is not usable"
        why = self.rule_violation(jv, idx, counts)
        if why:
            return why
        if (self.free[idx] < counts[:, None] * jv.req).any():
            return "a node lacks room"
        if (
            self.power_w + self.delta_watts(jv, idx, counts)
            > self.cap_limit(t, jv.walltime) + EPS_W
        ):
            return "over the power cap"
        return ""

    def commit(self, jv: JobVec, idx: IntArray, counts: IntArray) -> float:
        """Book the units on the nodes; returns the power added."""
        delta = self.delta_watts(jv, idx, counts)
        book(self.free, self.busy_units, idx, counts, jv.req, jv.nz, -1)
        if jv.exclusive:
            self.held_whole[idx] += 1
            self.exclusive_jobs += 1
        self._add_total(jv.total_l, -1)
        self.power_w += delta
        return delta

    @property
    def free_total(self) -> IntArray:
        """Free resources pooled over the nodes, as an array."""
        return np.array(self.free_total_l, dtype=np.int64)

    def _add_total(self, total: tuple[int, ...], sign: int) -> None:
        f = self.free_total_l
        for r in range(4):
            f[r] += sign * total[r]

    def release(self, jv: JobVec, idx: IntArray, counts: IntArray) -> float:
        """Undo :meth:`commit` (a job ended); returns the power removed."""
        book(self.free, self.busy_units, idx, counts, jv.req, jv.nz, +1)
        if jv.exclusive:
            self.held_whole[idx] -= 1
            self.exclusive_jobs -= 1
        self._add_total(jv.total_l, +1)
        delta = self.delta_watts(jv, idx, counts)
        self.power_w -= delta
        return delta

    def release_many(self, items: Sequence[tuple[JobVec, IntArray, IntArray]]) -> None:
        """:meth:`release` of several jobs at once (one pass over the arrays; the pooled totals
        added once; the power summed in the items' order, as ``sum`` of :meth:`units_watts`)."""
        if len(items) == 1:
            self.release(*items[0])
            return
        if not items:
            return
        first_core = self.arrays.has_first_core
        was_busy = self.busy_units > 0 if first_core else None
        watts: float = 0
        t0 = t1 = t2 = t3 = 0
        free, busy = self.free, self.busy_units
        for jv, i, c in items:
            w = jv.flat_w
            if w is None:
                watts += self.units_watts(jv, i, c)
            else:
                watts += w * jv.units if len(c) else 0.0
            book(free, busy, i, c, jv.req, jv.nz, +1)
            t = jv.total_l
            t0 += t[0]
            t1 += t[1]
            t2 += t[2]
            t3 += t[3]
            if jv.exclusive:
                self.held_whole[i] -= 1
                self.exclusive_jobs -= 1
        f = self.free_total_l
        f[0] += t0
        f[1] += t1
        f[2] += t2
        f[3] += t3
        if was_busy is not None:
            idle_now = was_busy & (self.busy_units == 0)
            self.power_w -= watts + float(self.arrays.first_core_w[idle_now].sum())
        else:
            self.power_w -= watts

    def names_for(self, idx: IntArray, counts: IntArray) -> tuple[str, ...]:
        """One node name per unit, from a placement."""
        if len(idx) <= 16:  # small: Python is cheaper than numpy's calls
            il = idx.tolist()
            if len(il) == sum(counts.tolist()):  # one unit per node (counts are positive)
                names = self.arrays.names
                return tuple([names[i] for i in il])
        return tuple(self.arrays.names_arr[np.repeat(idx, counts)].tolist())

    # -- node orders -------------------------------------------------------------------------

    def order_efficiency_load(self) -> IntArray:
        """PRB's node order: more efficient first, then fuller (fewer free cores) first."""
        free_frac = self.free[:, 0] / np.maximum(self.arrays.capacity[:, 0], 1)
        return np.lexsort((np.arange(len(free_frac)), free_frac, -self.arrays.efficiency))

    def order_index(self) -> IntArray:
        """Nodes in their listed order (first fit; one read-only array per node list)."""
        return self.arrays.listed_order


def __getattr__(name: str) -> object:
    """``StateCache`` from :mod:`wattsched.scheduler.state_cache` (which imports this module:
    imported on first use, so that either module may be imported first)."""
    if name == "StateCache":
        from wattsched.scheduler.state_cache import StateCache

        globals()["StateCache"] = StateCache  # asked once
        return StateCache
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
