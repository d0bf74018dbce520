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
        self._all_ks = np.arange(cap.shape[0])
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
        self.starts: list[int] = []
        """Slots where some booking starts, sorted: free capacity only goes down there, so
        the least of a window is at its first slot or at one of these."""
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
        if not window or d <= 2:
            free = self.free[:, :, t : t + d].min(axis=2) if window else self.free[:, :, t]
            return self._placeable(j, self._per_node(free, need))
        # Cheap necessary condition first: the first and last slots of the window. A node
        # holds no more over the window than at its ends, so only the nodes that hold some
        # unit at both ends need the minimum over the whole window.
        at_ends = self._placeable(
            j, self._per_node(np.minimum(self.free[:, :, t], self.free[:, :, t + d - 1]), need)
        )
        units = int(self.p.units[j])
        out = np.zeros(self.free.shape[1], dtype=np.int64)
        if int(np.minimum(at_ends, units).sum()) < units:
            return out
        some = np.flatnonzero(at_ends)
        out[some] = self._placeable(j, self._per_node(self._window_min(some, t, d), need))
        return out

    def _window_min(self, nodes: IntArray, t: int, d: int) -> IntArray:
        """The least free capacity of each of ``nodes`` over slots ``[t, t + d)``: over the
        first slot and the booking starts inside (see :attr:`starts`)."""
        lo = bisect.bisect_right(self.starts, t)
        hi = bisect.bisect_left(self.starts, t + d, lo)
        at = np.array([t, *self.starts[lo:hi]], dtype=np.int64)
        return np.asarray(self.free[np.ix_(self._all_ks, nodes, at)].min(axis=2))

    @staticmethod
    def _per_node(free: IntArray, need: IntArray) -> IntArray:
        """Units of ``need`` each node (column of ``free``) holds."""
        per = np.where(need[:, None] > 0, free // np.maximum(need[:, None], 1), _BIG)
        return np.asarray(per.min(axis=0))

    def _placeable(self, j: int, per: IntArray) -> IntArray:
        """``per`` (units per node) under job j's placement rule:
        scattered units one a node; packed units all on one node."""
        if self.p.max_per_node is not None:
            per = np.minimum(per, self.p.max_per_node[j])
        if self.p.pack is not None and self.p.pack[j]:
            per = np.where(per >= self.p.units[j], per, 0)
        return per

    def unit_capacity(self, need: IntArray, t: int) -> int:
        """How many units of ``need`` (over this profile's resources) fit at slot t in all."""
        free = self.free[:, :, t]
        per = np.where(need[:, None] > 0, free // np.maximum(need[:, None], 1), _BIG)
        return int(per.min(axis=0).sum())

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
        lo, chunk = 0, 16
        while lo < cands.size:
            # Chunks grow: most jobs fit early, the others scan many candidates.
            part = cands[lo : lo + chunk]
            lo, chunk = lo + chunk, min(2 * chunk, 512)
            # Necessary, for a whole chunk at once: the units fit in the window's first and
            # last slots.
            ends = np.minimum(self.free[:, :, part], self.free[:, :, part + d - 1])
            per = np.where(need > 0, ends // np.maximum(need, 1), _BIG).min(axis=0)
            fit = np.minimum(per, units).sum(axis=0) >= units
            t = self._first_fit(j, part[fit], d, units)
            if t is not None:
                alloc = self.allocate(j, t, pooled_checked=True)
                assert alloc is not None, "the window check and the allocation disagree"
                return t, alloc
        # After the last end everything is free: it fits there (DayProblem.build checked).
        t = max(r, self.events[-1] if self.events else r)
        if limit is not None and t >= limit:
            return None
        alloc = self.allocate(j, t)
        if alloc is None:  # pragma: no cover - a job too big for the cluster is refused earlier
            raise RuntimeError(f"job {self.p.jobs[j].id} fits nowhere on an empty cluster")
        return t, alloc

    def _first_fit(self, j: int, part: IntArray, d: int, units: int) -> int | None:
        """The first slot of ``part`` (increasing) where job j's units fit on the nodes for
        its whole duration, under its placement rule (the test :meth:`allocate` makes), or
        None. The windows overlap: the units each node holds are computed once, at the slots
        where some window's least can be (the candidates and the booking starts between)."""
        if part.size == 0:
            return None
        lo = bisect.bisect_right(self.starts, int(part[0]))
        hi = bisect.bisect_left(self.starts, int(part[-1]) + d, lo)
        at = np.union1d(part, np.asarray(self.starts[lo:hi], dtype=np.int64))
        need = self.p.need[j, self.ks][:, None, None]
        held = np.where(need > 0, self.free[:, :, at] // np.maximum(need, 1), _BIG).min(axis=0)
        held = self._placeable(j, held)  # (nodes, slots of at)
        first = np.searchsorted(at, part)
        last = np.searchsorted(at, part + d)
        for t, a, b in zip(part.tolist(), first.tolist(), last.tolist(), strict=True):
            if int(np.minimum(held[:, a:b].min(axis=1), units).sum()) >= units:
                return int(t)
        return None

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
        i = bisect.bisect_left(self.starts, t)
        if i == len(self.starts) or self.starts[i] != t:
            self.starts.insert(i, t)
