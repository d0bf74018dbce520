"""Plan reuse for the hybrid dispatcher: the stored plan, and whether the cluster still
follows it (issue 16, "Safe plan reuse"). A mixin of :class:`.dispatcher.HybridDispatcher`.
"""

from __future__ import annotations

from wattsched.scheduler.hybrid.retime import refit
from wattsched.scheduler.mapper import StateCache
from wattsched.scheduler.model import Assignment, Snapshot


class PlanMemory:
    """The stored plan of a dispatcher and the cluster it was made for."""

    mode: str
    cache: StateCache
    _schedule: dict[str, Assignment]
    _expect: tuple[tuple[object, ...], ...] | None
    _nodes: object
    _cap: object
    _walltime: dict[str, int]
    _running_ends: dict[str, int]
    _running: dict[str, tuple[int, tuple[str, ...]]]
    full_plan: bool
    _vcache: StateCache | None = None
    """The cache of the predicted views (:mod:`.predicted`); None: plans on the snapshots."""

    @property
    def _pc(self) -> StateCache:
        """The cache of the snapshots the plans are made on."""
        return self.cache if self._vcache is None else self._vcache

    def _still_on_plan(self, snap: Snapshot) -> bool:
        """True when the cluster is where the stored plan put it, so its later starts hold.

        Every running job must be one the plan knows, from the start and on the nodes it
        knows (a planned job: its planned nodes, and its planned start online; offline a start
        delayed to a later event is accepted). A job past its end estimate that still runs
        breaks the plan (it assumed the job would be gone by now). Online also: no planned
        start was missed, and exactly the jobs the plan expects to run now do.
        """
        if not self._schedule or snap.nodes is not self._nodes or snap.cap != self._cap:
            return False
        for rj in snap.running:
            if rj.end_estimate <= snap.time:
                return False  # overrunning: it holds its nodes until the RMS says otherwise
            a = self._schedule.get(rj.job.id)
            if a is not None:
                late = rj.start > a.start and self.mode == "offline"
                if tuple(rj.nodes) != a.nodes or (rj.start != a.start and not late):
                    return False  # it runs elsewhere, earlier or later than planned: stale
            elif self._running.get(rj.job.id) != (rj.start, tuple(rj.nodes)):
                return False  # unknown, or requeued and started again elsewhere
        queued = {j.id for j in snap.queued}
        if not queued <= self._schedule.keys():
            return False
        if self.mode == "offline":
            # Jobs that end before their walltime only free room; a start planned at an
            # instant that is no event any more is carried out at the next event.
            return True
        for jid, a in self._schedule.items():
            if jid in queued and a.start < snap.time:
                return False  # planned earlier but not started
        expected = {jid for jid, end in self._running_ends.items() if end > snap.time}
        for jid, a in self._schedule.items():
            if a.start <= snap.time < a.start + self._walltime[jid] and jid not in queued:
                expected.add(jid)
        running = {rj.job.id for rj in snap.running}
        return running == expected

    def _remember(self, snap: Snapshot, assignments: tuple[Assignment, ...]) -> None:
        self._schedule = {a.job_id: a for a in assignments}
        self._nodes = snap.nodes
        self._cap = snap.cap
        self._walltime = {j.id: j.walltime for j in snap.queued}
        self._running_ends = {rj.job.id: rj.end_estimate for rj in snap.running}
        self._running = {rj.job.id: (rj.start, tuple(rj.nodes)) for rj in snap.running}

    def _refit(self, snap: Snapshot, now: tuple[Assignment, ...]) -> tuple[Assignment, ...]:
        """Store the plan as carried out (:func:`.retime.refit`); its later starts."""
        if not self._schedule:
            return ()
        stored, later = refit(snap, self._pc, self._schedule, now)
        self._schedule = stored
        return later

    def _overran(self, snap: Snapshot) -> bool:
        """True when a running job of the plan is past the end the plan expected of it (it
        still runs: the plan's later starts assumed its room; with walltimes as durations
        the cluster says so itself, with predicted ones only the plan knows)."""
        for rj in snap.running:
            end = self._running_ends.get(rj.job.id)
            if end is None and rj.job.id in self._walltime:
                end = rj.start + self._walltime[rj.job.id]
            if end is not None and end <= snap.time:
                return True
        return False

    def _wake(self, snap: Snapshot) -> int | None:
        """The stored plan's next start after now (the cycle must run then to carry it out:
        a planned start need not fall on a job end or an arrival)."""
        later = [a.start for a in self._schedule.values() if a.start > snap.time]
        return min(later, default=None)

    def _select(
        self, snap: Snapshot, assignments: tuple[Assignment, ...]
    ) -> tuple[Assignment, ...]:
        if self.full_plan:
            return tuple(sorted(assignments, key=lambda a: (a.start, a.job_id)))
        return tuple(a for a in assignments if a.start <= snap.time)
