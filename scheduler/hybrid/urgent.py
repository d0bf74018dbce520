"""The most urgent queue first (the hybrid's ``urgent_first``, online, opt-in).

The hybrid may keep a job of the most urgent queue (the smallest expected wait time, the
highest weight) waiting although it fits now, when its plan finds the time better spent on
others: right when the durations it plans on are right, costly when they are not. On the
``hist_400`` traces the predictions of a burst of high-weight jobs can be hours where the
jobs run seconds (issue 16: hist_400_20140403_111002, 2-node jobs of the ``reservation``
queue fitting now yet kept waiting for up to 30 cycles and 10,000 s). With
``urgent_first`` every job of the most urgent queue present that fits now starts now, in
PRB's order, before the plan's starts (PRB's own rule, for that queue only); the plan's
starts that no longer fit wait, and the plan is searched again at the next cycle.

``urgent_wait`` k > 0 narrows it to the urgent queue's jobs that have waited at least k times
their queue's expected wait time: the search keeps reordering the urgent queue where that
gains (hist_400_20140331_145006, hist_400_20140403_111002 lose 5-9 % with every urgent job
first), and a job it has kept waiting long (a whole-node job of
hist_400_20140402_154719, 26,539 s against PRB's 12,097 s) is started as PRB would.
"""

from __future__ import annotations

from wattsched.scheduler.dispatcher import prb_order
from wattsched.scheduler.mapper import ClusterState, StateCache
from wattsched.scheduler.model import Assignment, Snapshot
from wattsched.scheduler.reservation import Reservations, greedy_starts, waited


def urgent_starts(
    snap: Snapshot,
    cache: StateCache,
    state: ClusterState,
    res: Reservations | None = None,
    wait: float = 0.0,
) -> list[Assignment]:
    """The jobs of the most urgent queue in ``snap`` (not held) that fit now, in PRB's order,
    each booked in ``state`` (the real nodes and the cap) as it is placed; none that would
    delay the reservation ``res``; with ``wait`` > 0 only those that have waited at least
    ``wait`` times their queue's expected wait time."""
    queued = [j for j in snap.queued if not j.held]
    if not queued:
        return []
    top = min(j.ewt for j in queued)
    urgent = prb_order([j for j in queued if j.ewt == top and waited(snap, j, wait)])
    return greedy_starts(snap, cache, state, urgent, res)
