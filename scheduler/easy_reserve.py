"""EASY's reservation (:class:`Reservation`) and its scans: the running ends, how many must
pass before the head fits pooled, and the times to try after that (pure functions of plain
lists, used by :mod:`wattsched.scheduler.easy`)."""

from __future__ import annotations

from collections.abc import Iterator

from wattsched.scheduler.model import PowerCap, Snapshot
from wattsched.scheduler.node_arrays import IntArray, JobVec


class Reservation:
    """The head job's reservation: shadow time, spare resources per node, spare power.

    ``idx`` are the head's node indexes: an exclusive head leaves no spare on them, and an
    exclusive job backfilled past the shadow time may not go there.
    """

    __slots__ = ("idx", "nodes", "power_spare", "shadow", "spare")

    def __init__(
        self,
        shadow: int,
        spare: IntArray,
        power_spare: float,
        nodes: tuple[str, ...],
        idx: IntArray,
    ):
        self.shadow = shadow
        self.spare = spare
        self.power_spare = power_spare
        self.nodes = nodes
        self.idx = idx

    def copy(self) -> Reservation:
        """A copy whose spare resources may change (a backfill past the shadow time)."""
        return Reservation(self.shadow, self.spare.copy(), self.power_spare, self.nodes, self.idx)


def cap_times(cap: PowerCap, now: int, pending: list[tuple[int, str]]) -> set[int]:
    """``now`` and the cap's steps up to the last pending end."""
    out: set[int] = {now}
    last = pending[-1][0] if pending else now
    t: int | None = now
    while t is not None and t <= last:
        t = cap.next_change(t)
        if t is not None:
            out.add(t)
    return out


def ends_of(
    snap: Snapshot, now: int, started: dict[str, tuple[JobVec, IntArray, IntArray]]
) -> list[tuple[int, str]]:
    """(end estimate, job id) of every running job and of the jobs this plan starts now."""
    ends = [(e if (e := rj.end_estimate) > now else now, rj.job.id) for rj in snap.running]
    ends.extend((now + jv.walltime, jid) for jid, (jv, _, _) in started.items())
    return ends


def pooled_fit(
    pending: list[tuple[int, str]],
    started: dict[str, tuple[JobVec, IntArray, IntArray]],
    placements: dict[str, tuple[JobVec, IntArray, IntArray]],
    free: list[int],
    need: tuple[int, ...],
    into: list[tuple[JobVec, IntArray, IntArray]] | None = None,
) -> int | None:
    """How many of the ``pending`` ends (in order) must pass before ``need`` fits in the free
    resources pooled (0: it fits now), or None if it never does; ``into`` (when given) gets
    the placements of the ends looked at, in order (those to release first)."""
    d0, d1, d2, d3 = (n - f for n, f in zip(need, free, strict=True))
    if d0 <= 0 and d1 <= 0 and d2 <= 0 and d3 <= 0:
        return 0
    for k, (_, jid) in enumerate(pending, 1):
        placed = started.get(jid) or placements[jid]
        if into is not None:
            into.append(placed)
        t = placed[0].total_l
        d0 -= t[0]
        d1 -= t[1]
        d2 -= t[2]
        d3 -= t[3]
        if d0 <= 0 and d1 <= 0 and d2 <= 0 and d3 <= 0:
            return k
    return None


def times_from(t0: int, pending: list[tuple[int, str]], k0: int, caps: list[int]) -> Iterator[int]:
    """In increasing order and each once: ``t0``, the end times of ``pending[k0:]`` and the
    cap steps ``caps`` (sorted, all after ``t0``). Lazily: the caller stops at the first
    time the head fits, mostly the first."""
    yield t0
    last = t0
    c = 0
    nc = len(caps)
    for t, _ in pending[k0:] if k0 < len(pending) else ():
        while c < nc and caps[c] < t:
            if caps[c] > last:
                last = caps[c]
                yield last
            c += 1
        if t > last:
            last = t
            yield t
    for cap_t in caps[c:]:
        if cap_t > last:
            last = cap_t
            yield cap_t
