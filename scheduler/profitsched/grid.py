"""Free capacity over time, per node and resource, on the slot grid of a :class:`DayProblem`.

The profile answers the two questions every scheduler of this package asks: *can job j start
at slot t* (all its units fit on the nodes, in node order, for its whole duration, and its
power within the budget), and *what is the earliest such slot at or after r*. Capacity only
comes back when a job ends, so the earliest start is the release or some job's end: the
search visits those slots only, and checks the pooled free capacity (one vector per
resource) before the per-node windows. Everything is numpy over nodes and slots.
"""

from __future__ import annotations

import bisect

import numpy as np

from wattsched.scheduler.profitsched.problem import DayProblem, IntArray

_BIG = np.int64(1) << np.int64(40)


class Profile:
    """Free capacity ``free[k, n, s]`` of resource k on node n in slot s, plus the pooled
    totals and the power budget left per slot; slots grow on demand (beyond the last booking
    everything is free)."""

    def __init__(
        self, problem: DayProblem, slots: int | None = None, limit: int | None = None
    ) -> None:
        self.p = problem
        self.ks = list(problem.resources)
        cap = problem.capacity[self.ks]  # (K, N)
        self.cap = cap
        horizon = slots or int(
            max(1, problem.release.max(initial=0) + problem.duration.sum() // 4 + 1)
        )
        if limit is not None and slots is None:
            # No start at or after ``limit``: no booking reaches past limit + the longest job.
            horizon = min(horizon, limit + int(problem.duration.max(initial=1)) + 1)
        self.free = np.repeat(cap[:, :, None], horizon, axis=2)
        self.total = self.free.sum(axis=1)  # (K, S)
        budget = problem.power_budget_w
        self.power = np.full(horizon, np.inf if budget is None else budget, dtype=float)
        self.events: list[int] = []
        index = {name: i for i, name in enumerate(problem.node_names)}
        for b in problem.busy:
            end = max(0, -(-(b.end - problem.origin) // problem.slot_s))
            if end <= 0:
                continue
            self._grow(end)
            n = index[b.node]
            need = np.array([b.need[k] for k in self.ks], dtype=np.int64)
            self.free[:, n, :end] -= need[:, None]
            self.total[:, :end] -= need[:, None]
            self.power[:end] -= b.power_w
            self._event(end)

    @property
    def slots(self) -> int:
        """Slots currently held in the arrays."""
        return int(self.free.shape[2])

    def _grow(self, upto: int) -> None:
        if upto <= self.slots:
            return
        extra = max(upto - self.slots, self.slots // 2, 64)
        self.free = np.concatenate(
            [self.free, np.repeat(self.cap[:, :, None], extra, axis=2)], axis=2
        )
        self.total = np.concatenate([self.total, np.repeat(self.cap.sum(axis=1)[:, None],
                                                           extra, axis=1)], axis=1)  # fmt: skip
        budget = self.p.power_budget_w
        self.power = np.concatenate(
            [self.power, np.full(extra, np.inf if budget is None else budget)]
        )

    def _event(self, slot: int) -> None:
        i = bisect.bisect_left(self.events, slot)
        if i == len(self.events) or self.events[i] != slot:
            self.events.insert(i, slot)

    def units_fitting(self, j: int, t: int, window: bool = True) -> IntArray:
        """How many units of job j each node can hold from slot t on (over the job's whole
        duration when ``window``; at slot t alone otherwise)."""
        d = int(self.p.duration[j])
        need = self.p.need[j, self.ks]
        self._grow(t + d)
        if window and d > 2:
            # Cheap necessary condition first: the first and last slots of the window.
            ends = np.minimum(self.free[:, :, t], self.free[:, :, t + d - 1])
            if not self._enough(ends, need, int(self.p.units[j])):
                return np.zeros(self.free.shape[1], dtype=np.int64)
        free = self.free[:, :, t : t + d].min(axis=2) if window else self.free[:, :, t]
        with np.errstate(divide="ignore"):
            per = np.where(need[:, None] > 0, free // np.maximum(need[:, None], 1), _BIG)
        out = per.min(axis=0)
        # Placement rules: scattered units one a node; packed units all on one node.
        if self.p.max_per_node is not None:
            out = np.minimum(out, self.p.max_per_node[j])
        if self.p.pack is not None and self.p.pack[j]:
            out = np.where(out >= self.p.units[j], out, 0)
        return np.asarray(out)

    def unit_capacity(self, need: IntArray, t: int) -> int:
        """How many units of ``need`` (over this profile's resources) fit at slot t in all."""
        free = self.free[:, :, t]
        per = np.where(need[:, None] > 0, free // np.maximum(need[:, None], 1), _BIG)
        return int(per.min(axis=0).sum())

    @staticmethod
    def _enough(free: IntArray, need: IntArray, units: int) -> bool:
        per = np.where(need[:, None] > 0, free // np.maximum(need[:, None], 1), _BIG).min(axis=0)
        return int(np.minimum(per, units).sum()) >= units

    def pooled_ok(self, j: int, t: int, window: bool = True) -> bool:
        """The necessary condition on the totals: enough of each resource and power."""
        d = int(self.p.duration[j])
        self._grow(t + d)
        want = self.p.need[j, self.ks] * self.p.units[j]
        tot = self.total[:, t : t + d].min(axis=1) if window else self.total[:, t]
        if np.any(tot < want):
            return False
        pw = self.power[t : t + d].min() if window else self.power[t]
        return bool(pw >= self.p.power_w[j] - 1e-9)

    def allocate(
        self, j: int, t: int, window: bool = True, pooled_checked: bool = False
    ) -> IntArray | None:
        """Nodes for the units of job j at slot t, filling nodes in order (None: no fit)."""
        if not pooled_checked and not self.pooled_ok(j, t, window):
            return None
        per = self.units_fitting(j, t, window)
        units = int(self.p.units[j])
        if int(np.minimum(per, units).sum()) < units:
            return None
        take = np.minimum(per, units)
        cum = np.cumsum(take)
        last = int(np.searchsorted(cum, units))
        take[last + 1 :] = 0
        take[last] -= int(cum[last]) - units
        return np.repeat(np.arange(take.size), take)

    def _pooled_candidates(self, j: int, r: int, limit: int | None = None) -> IntArray:
        """The release and the later end slots (before ``limit``) at which the pooled totals
        and the power budget hold over the job's whole duration, in increasing order
        (vectorised)."""
        d = int(self.p.duration[j])
        ev = np.asarray(self.events, dtype=np.int64)
        cands = np.concatenate([[r], ev[ev > r]])
        if limit is not None:
            cands = cands[cands < limit]
            if cands.size == 0:
                return cands
        self._grow(int(cands[-1]) + d)
        want = self.p.need[j, self.ks] * self.p.units[j]
        ok = np.all(self.total[:, r:] >= want[:, None], axis=0)
        ok &= self.power[r:] >= self.p.power_w[j] - 1e-9
        bad = np.flatnonzero(~ok) + r
        if bad.size == 0:
            return cands
        nxt = np.searchsorted(bad, cands)
        first_bad = np.where(
            nxt < bad.size, bad[np.minimum(nxt, bad.size - 1)], np.iinfo(np.int64).max
        )
        return cands[first_bad >= cands + d]

    def earliest(
        self, j: int, release: int | None = None, limit: int | None = None
    ) -> tuple[int, IntArray] | None:
        """The earliest slot at or after the job's release where it fits, and its nodes;
        None when it fits at no slot before ``limit`` (when given)."""
        r = int(self.p.release[j] if release is None else release)
        cands = self._pooled_candidates(j, r, limit)
        d = int(self.p.duration[j])
        need = self.p.need[j, self.ks][:, None, None]
        units = int(self.p.units[j])
        chunk = 16
        for lo in range(0, cands.size, chunk):
            part = cands[lo : lo + chunk]
            # Necessary, for a whole chunk at once: the units fit in the window's first and
            # last slots.
            ends = np.minimum(self.free[:, :, part], self.free[:, :, part + d - 1])
            per = np.where(need > 0, ends // np.maximum(need, 1), _BIG).min(axis=0)
            fit = np.minimum(per, units).sum(axis=0) >= units
            for t in part[fit]:
                alloc = self.allocate(j, int(t), pooled_checked=True)
                if alloc is not None:
                    return int(t), alloc
        # After the last end everything is free: it fits there (DayProblem.build checked).
        t = max(r, self.events[-1] if self.events else r)
        if limit is not None and t >= limit:
            return None
        alloc = self.allocate(j, t)
        if alloc is None:  # pragma: no cover - a job too big for the cluster is refused earlier
            raise RuntimeError(f"job {self.p.jobs[j].id} fits nowhere on an empty cluster")
        return t, alloc

    def book(self, j: int, t: int, nodes: IntArray) -> None:
        """Hold job j's units on ``nodes`` from slot t for its duration."""
        d = int(self.p.duration[j])
        self._grow(t + d)
        need = self.p.need[j, self.ks]
        counts = np.bincount(nodes, minlength=self.free.shape[1])
        used = counts.nonzero()[0]
        self.free[:, used, t : t + d] -= (need[:, None] * counts[used][None, :])[:, :, None]
        self.total[:, t : t + d] -= (need * int(self.p.units[j]))[:, None]
        self.power[t : t + d] -= self.p.power_w[j]
        self._event(t + d)
