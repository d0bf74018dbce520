"""How the control cycle starts jobs, the same in the daemon and in replays (the node power
commands: :mod:`wattsched.daemon.power_cycle`).

:func:`start_planned` carries out a plan's starts of this instant with the safety rules of
DESIGN.md: only jobs the RMS reports pending and that nobody holds, never two starts of one
job incarnation, no more tries after ``max_start_attempts`` refusals, and every start
journaled *before* the RMS call (``pending``) and *after* (``done``/``failed``).

The journal is the daemon's SQL store (:class:`~wattsched.daemon.store.Store`, durable:
a crash between the two writes is reconciled at restart) or, in replays, a
:class:`MemoryJournal`, so that a replay runs the very rules production depends on at replay
speed.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Set
from dataclasses import dataclass, field
from typing import Protocol

from wattsched.connectors.base import Connector, ConnectorError
from wattsched.daemon.job_records import StartRecord
from wattsched.scheduler.model import Assignment, Job, Plan, Snapshot
from wattsched.scheduler.slots import new as _new
from wattsched.scheduler.slots import slot_setters

log = logging.getLogger(__name__)

_rec_incarnation, _rec_time, _rec_nodes = slot_setters(StartRecord)


def start_record(incarnation: int, time_: int, nodes: tuple[str, ...]) -> StartRecord:
    """``StartRecord(incarnation, time_, nodes)`` (it has no checks), its slots set directly:
    a frozen dataclass's ``__init__`` calls ``object.__setattr__`` once per field, and a replay
    makes one record per start."""
    rec = _new(StartRecord)
    _rec_incarnation(rec, incarnation)
    _rec_time(rec, time_)
    _rec_nodes(rec, nodes)
    return rec


JOURNAL_BATCH = 64
"""Starts journaled per commit (pending before the RMS calls, outcomes after)."""

Outcome = tuple[int, str, str | None, str | None]
"""``(action id, done|failed, result, error)``."""


class StartJournal(Protocol):
    """What :func:`start_planned` needs of a journal."""

    def begin_actions(
        self,
        actions: Iterable[tuple[str, str | None, Iterable[str]]],
        *,
        time_: int,
        cycle_id: int | None = None,
        incarnations: Iterable[int] | None = None,
    ) -> list[int]:
        """Journal the actions ``pending``; their ids."""
        ...

    def finish_actions(self, outcomes: Iterable[Outcome]) -> None:
        """Record their outcomes."""
        ...

    def failed_start_counts(self, job_ids: Iterable[str]) -> dict[str, int]:
        """How many starts of each job the RMS refused."""
        ...


@dataclass
class MemoryJournal:
    """The journal of a replay, in memory: the same interface as the store's."""

    actions: list[list[object]] = field(default_factory=list)
    """``[kind, job_id, nodes, time, state, result, error]`` by action id."""
    refusals: dict[str, int] = field(default_factory=dict)

    def begin_actions(
        self,
        actions: Iterable[tuple[str, str | None, Iterable[str]]],
        *,
        time_: int,
        cycle_id: int | None = None,
        incarnations: Iterable[int] | None = None,
    ) -> list[int]:
        rows = self.actions
        first = len(rows)
        for kind, job_id, nodes in actions:  # a loop: mostly one action (no comprehension)
            rows.append([kind, job_id, tuple(nodes), time_, "pending", None, None])
        return [*range(first, len(rows))]

    def finish_actions(self, outcomes: Iterable[Outcome]) -> None:
        for action_id, state, result, error in outcomes:
            row = self.actions[action_id]
            row[4], row[5], row[6] = state, result, error
            if state == "failed" and row[0] == "start" and row[1] is not None:
                job = str(row[1])
                self.refusals[job] = self.refusals.get(job, 0) + 1

    def failed_start_counts(self, job_ids: Iterable[str]) -> dict[str, int]:
        if not self.refusals:
            return {}
        return {j: self.refusals[j] for j in job_ids if j in self.refusals}

    def pending(self) -> int:
        """Actions without an outcome (0 after every cycle)."""
        return sum(1 for a in self.actions if a[4] == "pending")


@dataclass(slots=True)
class StartOutcome:
    """What :func:`start_planned` did this cycle."""

    started: list[Assignment] = field(default_factory=list)
    errors: list[tuple[Assignment, ConnectorError]] = field(default_factory=list)
    refused_twice: list[str] = field(default_factory=list)
    """Jobs pending again in the incarnation we started: not started twice."""
    gave_up: list[str] = field(default_factory=list)
    """Jobs refused ``max_start_attempts`` times: no more tries."""


def start_planned(
    connector: Connector,
    journal: StartJournal,
    snap: Snapshot,
    plan: Plan,
    starts: dict[str, StartRecord],
    *,
    max_start_attempts: int,
    keep_back: Set[str] = frozenset(),
    cycle_id: int | None = None,
) -> StartOutcome:
    """Carry out ``plan``'s starts of now (see the module docstring); ``starts`` (our last
    start of each job) is updated with the jobs started."""
    t = plan.time
    now: list[Assignment] = []
    for a in plan.assignments:  # plan.starts_now(), without a generator (mostly 1 or 2)
        if a.start <= t:
            now.append(a)
    out = StartOutcome([], [], [], [])  # no default factories to call
    if not now:
        return out
    # The jobs of this instant's starts, as the RMS reports them (pending, not held, not kept
    # back): from the snapshot's index when the connector keeps one, else a scan that stops
    # once it found them all (starts are mostly of the oldest jobs).
    queued: dict[str, Job] = {}
    index = snap.queued_index
    if index is not None:
        for a in now:
            j = index.get(a.job_id)
            if j is not None and not j.held and j.id not in keep_back:
                queued[j.id] = j
    else:
        want = {a.job_id for a in now}
        for j in snap.queued:
            if j.id in want:
                if not j.held and j.id not in keep_back:
                    queued[j.id] = j
                want.discard(j.id)
                if not want:
                    break
    # Mostly every start of now is of a job found (and of distinct jobs): the list as it is.
    todo = now if len(queued) == len(now) else [a for a in now if a.job_id in queued]
    if not todo:
        return out
    failures = journal.failed_start_counts(queued)  # the job ids of todo (the dict's keys)
    ready: list[Assignment] = []
    actions: list[tuple[str, str | None, Iterable[str]]] = []  # their journal rows
    incarnations: list[int] = []
    for a in todo:
        job_id = a.job_id
        restarts = queued[job_id].restarts
        prev = starts.get(job_id)
        if prev is not None and prev.incarnation >= restarts:
            # Pending again in the incarnation we started (not a requeue): never twice.
            out.refused_twice.append(job_id)
            continue
        if failures.get(job_id, 0) >= max_start_attempts:
            out.gave_up.append(job_id)
            continue
        ready.append(a)
        actions.append(("start", job_id, a.nodes))
        incarnations.append(restarts)
    # Journal a batch as pending (one commit) before any of its RMS calls, then record the
    # outcomes (one commit). A crash in between leaves them pending: the restart reconciles
    # them against the RMS, so nothing is lost nor started twice.
    time_, start, started = snap.time, connector.start, out.started
    for i in range(0, len(ready), JOURNAL_BATCH):
        if len(ready) <= JOURNAL_BATCH:
            batch, rows, incs = ready, actions, incarnations
        else:
            j = i + JOURNAL_BATCH
            batch, rows, incs = ready[i:j], actions[i:j], incarnations[i:j]
        ids = journal.begin_actions(rows, time_=time_, cycle_id=cycle_id, incarnations=incs)
        outcomes: list[Outcome] = []
        try:
            for action_id, a, inc in zip(ids, batch, incs, strict=True):
                try:
                    start(a.job_id, a.nodes)
                except ConnectorError as exc:
                    log.warning(
                        "start of job %s on %s failed: %s", a.job_id, ",".join(a.nodes), exc
                    )
                    outcomes.append((action_id, "failed", None, f"{type(exc).__name__}: {exc}"))
                    out.errors.append((a, exc))
                    continue
                outcomes.append((action_id, "done", "started", None))
                starts[a.job_id] = start_record(inc, time_, a.nodes)
                started.append(a)
        finally:
            journal.finish_actions(outcomes)
    return out
