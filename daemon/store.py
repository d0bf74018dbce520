"""The daemon's SQL store: engine factory, migrations, schema check, and the writes of a cycle.

SQLite by default (WAL journal, one file), PostgreSQL supported. The schema is owned by the
Alembic versions in :mod:`wattsched.migrations`; :func:`migrate` applies them and
:func:`check_schema` refuses to run on an old (or newer, unknown) schema.

Every RMS command is journaled: :meth:`Store.begin_action` writes it ``pending`` before it is
carried out, :meth:`Store.finish_action` its outcome after; a restart reconciles the pending
ones against the RMS (:mod:`wattsched.daemon.loop`).
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, create_engine, delete, event, func, insert, select, update
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker

from wattsched.daemon.job_records import StartRecord, job_changes
from wattsched.daemon.store_models import (
    ActionRow,
    CycleRow,
    JobRow,
    NodeRow,
    NodeStateRow,
    PlanEntryRow,
    PowerSampleRow,
)
from wattsched.scheduler.model import Plan, Snapshot

Clock = Callable[[], float]


class StoreError(Exception):
    """Base of the store's errors."""


class SchemaError(StoreError):
    """The database schema is not the one this version of wattsched needs."""

    def __init__(self, url: str, current: str | None, head: str) -> None:
        self.url = url
        self.current = current
        self.head = head
        super().__init__(
            f"database {url} is at schema revision {current or '<empty>'}, this wattsched needs "
            f"{head}; run `wattsched migrate -c CONFIG` first"
        )


def make_engine(url: str) -> Engine:
    """An engine for ``url``; for SQLite the file's folder is created and WAL is switched on."""
    u = make_url(url)
    if u.get_backend_name() == "sqlite":
        if u.database and u.database != ":memory:":
            path = Path(u.database)
            path.parent.mkdir(parents=True, exist_ok=True)
            # The journal and the plan are the operators' business: owner-only from birth
            # (SQLite gives its -wal and -shm files the database file's mode).
            os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})

        @event.listens_for(engine, "connect")
        def _pragmas(dbapi_conn: Any, _record: Any) -> None:
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.close()

        return engine
    return create_engine(url, pool_pre_ping=True, pool_size=10, max_overflow=10)


def _alembic_config() -> Config:
    import wattsched.migrations as migrations_pkg

    cfg = Config()
    cfg.set_main_option("script_location", str(Path(migrations_pkg.__file__).parent))
    return cfg


def head_revision() -> str:
    """The schema revision this version of wattsched needs."""
    head = ScriptDirectory.from_config(_alembic_config()).get_current_head()
    if head is None:  # pragma: no cover - the package ships its versions
        raise StoreError("no migration versions found")
    return head


def current_revision(engine: Engine) -> str | None:
    """The revision the database is at (None: an empty database)."""
    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def migrate(engine: Engine, revision: str = "head") -> str | None:
    """Apply the migrations up to ``revision``; returns the revision the database is at."""
    cfg = _alembic_config()
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, revision)
    return current_revision(engine)


def check_schema(engine: Engine) -> str:
    """Raise :class:`SchemaError` unless the database is at the head revision."""
    head = head_revision()
    current = current_revision(engine)
    if current != head:
        raise SchemaError(engine.url.render_as_string(hide_password=True), current, head)
    return head


@dataclass(frozen=True, slots=True)
class CycleRecord:
    """What one cycle saw and planned, as the store keeps it."""

    snapshot: Snapshot
    plan: Plan
    started_at: float
    duration_s: float
    plan_seconds: float
    mode: str
    it_power_w: float
    nodes_on: int
    planned_mean_wait_s: float | None


RECONCILED = "reconciled:"
"""Prefix of the error of an action that a restart found pending (interrupted, not refused)."""


def _join(nodes: Iterable[str]) -> str:
    return ",".join(nodes)


def _finite(x: float | None) -> float | None:
    return None if x is None or not math.isfinite(x) else float(x)


class Store:
    """Reads and writes of the daemon. Thread-safe: each call uses its own session."""

    def __init__(self, engine: Engine, clock: Clock = time.time) -> None:
        self.engine = engine
        self.sessions = sessionmaker(engine, expire_on_commit=False)
        self.clock = clock
        self._job_state: dict[str, str] | None = None
        self._node_state: dict[str, tuple[str, bool, int]] | None = None
        db = engine.url.database if engine.url.get_backend_name() == "sqlite" else None
        self.path: Path | None = Path(db).resolve() if db and db != ":memory:" else None
        self._identity = self._stat_identity()

    def _stat_identity(self) -> tuple[int, int] | None:
        if self.path is None:
            return None
        try:
            st = self.path.stat()
        except FileNotFoundError:
            return None
        return (st.st_dev, st.st_ino)

    def file_problem(self) -> str:
        """Why the SQLite file is not the one opened ("" when it is, or for PostgreSQL): it
        was deleted or replaced (another inode at the path), so writes would go to an
        unlinked file and the journal would be lost."""
        if self.path is None:
            return ""
        if self._identity is None:  # created after start: take it as ours from now on
            self._identity = self._stat_identity()
            return ""
        now = self._stat_identity()
        if now is None:
            return f"the database file {self.path} was deleted"
        if now != self._identity:
            return f"the database file {self.path} was replaced"
        return ""

    def reset_caches(self) -> None:
        """Forget what was read of the nodes and jobs (after a failed write): reread next time."""
        self._job_state = None
        self._node_state = None

    # -- actions (the journal) ---------------------------------------------------------------

    def begin_action(
        self,
        kind: str,
        *,
        time_: int,
        job_id: str | None = None,
        nodes: Iterable[str] = (),
        cycle_id: int | None = None,
        incarnation: int = 0,
    ) -> int:
        """Journal an action as ``pending`` (committed) before it is carried out; its id."""
        with self.sessions.begin() as s:
            row = ActionRow(
                kind=kind,
                job_id=job_id,
                nodes=_join(nodes) or None,
                cycle_id=cycle_id,
                time=time_,
                created_at=self.clock(),
                state="pending",
                incarnation=incarnation,
            )
            s.add(row)
            s.flush()
            return row.id

    def begin_actions(
        self,
        actions: Iterable[tuple[str, str | None, Iterable[str]]],
        *,
        time_: int,
        cycle_id: int | None = None,
        incarnations: Iterable[int] | None = None,
    ) -> list[int]:
        """Journal several ``(kind, job_id, nodes)`` actions as ``pending`` in one commit
        (``incarnations``: each job's restart count, 0 by default)."""
        now = self.clock()
        acts = list(actions)
        incs = list(incarnations) if incarnations is not None else [0] * len(acts)
        with self.sessions.begin() as s:
            rows = [
                ActionRow(
                    kind=kind,
                    job_id=job_id,
                    nodes=_join(nodes) or None,
                    cycle_id=cycle_id,
                    time=time_,
                    created_at=now,
                    state="pending",
                    incarnation=inc,
                )
                for (kind, job_id, nodes), inc in zip(acts, incs, strict=True)
            ]
            s.add_all(rows)
            s.flush()
            return [r.id for r in rows]

    def finish_actions(self, outcomes: Iterable[tuple[int, str, str | None, str | None]]) -> None:
        """Record several ``(id, state, result, error)`` outcomes in one commit."""
        now = self.clock()
        rows = []
        for action_id, state, result, error in outcomes:
            if state not in ("done", "failed"):
                raise ValueError(f"action state {state!r} must be done or failed")
            rows.append(
                {
                    "id": action_id,
                    "state": state,
                    "result": result,
                    "error": error,
                    "finished_at": now,
                }
            )
        if rows:
            with self.sessions.begin() as s:
                s.execute(update(ActionRow), rows)

    def finish_action(
        self, action_id: int, state: str, *, result: str | None = None, error: str | None = None
    ) -> None:
        """Record the outcome (``done`` or ``failed``) of a journaled action."""
        if state not in ("done", "failed"):
            raise ValueError(f"action state {state!r} must be done or failed")
        with self.sessions.begin() as s:
            s.execute(
                update(ActionRow)
                .where(ActionRow.id == action_id)
                .values(state=state, result=result, error=error, finished_at=self.clock())
            )

    def pending_actions(self) -> list[ActionRow]:
        """Actions journaled without an outcome (the daemon died while carrying them out)."""
        with self.sessions() as s:
            return list(s.scalars(select(ActionRow).where(ActionRow.state == "pending")))

    def done_starts(self) -> list[ActionRow]:
        """Successful starts, oldest first."""
        with self.sessions() as s:
            return list(
                s.scalars(
                    select(ActionRow)
                    .where(ActionRow.kind == "start", ActionRow.state == "done")
                    .order_by(ActionRow.id)
                )
            )

    def start_records(self) -> dict[str, StartRecord]:
        """Each job's last successful start (its incarnation, time and nodes)."""
        return {
            a.job_id: StartRecord(a.incarnation, a.time, tuple((a.nodes or "").split(",")))
            for a in self.done_starts()
            if a.job_id
        }

    def requeues_seen(self) -> set[tuple[str, int]]:
        """``(job, incarnation)`` of every requeue already journaled."""
        with self.sessions() as s:
            rows = s.execute(
                select(ActionRow.job_id, ActionRow.incarnation).where(ActionRow.kind == "requeue")
            )
            return {(str(j), int(i)) for j, i in rows}

    def failed_start_counts(self, job_ids: Iterable[str]) -> dict[str, int]:
        """How many starts of each of these jobs the RMS refused (starts interrupted by a
        crash, which reconciliation marks failed, are not refusals and do not count)."""
        ids = list(job_ids)
        if not ids:
            return {}
        out: dict[str, int] = {}
        with self.sessions() as s:
            for i in range(0, len(ids), 500):
                rows = s.execute(
                    select(ActionRow.job_id, func.count())
                    .where(
                        ActionRow.kind == "start",
                        ActionRow.state == "failed",
                        ActionRow.job_id.in_(ids[i : i + 500]),
                        func.coalesce(ActionRow.error, "").not_like(f"{RECONCILED}%"),
                    )
                    .group_by(ActionRow.job_id)
                )
                out.update({str(j): int(n) for j, n in rows})
        return out

    def is_empty(self) -> bool:
        """True for a store that never recorded a cycle nor an action (a new, or lost, one)."""
        with self.sessions() as s:
            return (
                s.scalar(select(func.count()).select_from(CycleRow)) == 0
                and s.scalar(select(func.count()).select_from(ActionRow)) == 0
            )

    def last_cycle_time(self) -> int | None:
        """The cluster time of the last successful cycle (None before the first)."""
        with self.sessions() as s:
            return s.scalar(select(func.max(CycleRow.time)).where(CycleRow.ok.is_(True)))

    # -- cycles --------------------------------------------------------------------------------

    def record_failed_cycle(
        self, started_at: float, duration_s: float, mode: str, error: str
    ) -> int:
        """A cycle that could not observe or plan: its error."""
        with self.sessions.begin() as s:
            row = CycleRow(
                time=None,
                started_at=started_at,
                duration_s=duration_s,
                plan_seconds=0.0,
                mode=mode,
                ok=False,
                error=error[:2000],
            )
            s.add(row)
            s.flush()
            return row.id

    def set_cycle_duration(self, cycle_id: int, duration_s: float) -> None:
        """Set the full duration of a cycle (observe, plan, record and act)."""
        with self.sessions.begin() as s:
            s.execute(update(CycleRow).where(CycleRow.id == cycle_id).values(duration_s=duration_s))

    def record_cycle(self, rec: CycleRecord, starts: Mapping[str, StartRecord]) -> int:
        """Write one cycle: nodes (+ history), jobs' lifecycle, the plan, a power sample."""
        snap, plan = rec.snapshot, rec.plan
        now = self.clock()
        try:
            return self._record_cycle(rec, snap, plan, now, starts)
        except Exception:
            self.reset_caches()  # they may hold what the rolled-back transaction wrote
            raise

    def _record_cycle(
        self,
        rec: CycleRecord,
        snap: Snapshot,
        plan: Plan,
        now: float,
        starts: Mapping[str, StartRecord],
    ) -> int:
        with self.sessions.begin() as s:
            self._load_caches(s)
            cycle = CycleRow(
                time=snap.time,
                started_at=rec.started_at,
                duration_s=rec.duration_s,
                plan_seconds=rec.plan_seconds,
                mode=rec.mode,
                ok=True,
                error=None,
                queued=len(snap.queued),
                running=len(snap.running),
                planned=len(plan.assignments),
                starts_now=sum(1 for _ in plan.starts_now()),
                solver_status=plan.stats.status,
                objective=_finite(plan.stats.objective),
                bound=_finite(plan.stats.bound),
                solver_seconds=plan.stats.seconds,
                iterations=plan.stats.iterations,
                planned_mean_wait_s=rec.planned_mean_wait_s,
            )
            s.add(cycle)
            s.flush()
            self._write_nodes(s, snap, now)
            self._write_jobs(s, snap, plan, starts)
            s.execute(delete(PlanEntryRow))
            jobs = {j.id: j for j in snap.queued}
            entries = [
                {
                    "cycle_id": cycle.id,
                    "job_id": a.job_id,
                    "start": a.start,
                    "end": a.start + (jobs[a.job_id].walltime if a.job_id in jobs else 0),
                    "nodes": _join(a.nodes),
                }
                for a in plan.assignments
            ]
            if entries:
                s.execute(insert(PlanEntryRow), entries)
            s.add(
                PowerSampleRow(
                    time=snap.time,
                    recorded_at=now,
                    it_power_w=rec.it_power_w,
                    cap_w=_finite(snap.cap.at(snap.time)),
                    nodes_on=rec.nodes_on,
                )
            )
            return cycle.id

    def _load_caches(self, s: Session) -> None:
        if self._job_state is None:
            self._job_state = {
                jid: st
                for jid, st in s.execute(
                    select(JobRow.id, JobRow.state).where(JobRow.state.in_(("queued", "running")))
                )
            }
        if self._node_state is None:
            self._node_state = {
                n: (ps, av, bu)
                for n, ps, av, bu in s.execute(
                    select(NodeRow.name, NodeRow.power_state, NodeRow.available, NodeRow.busy_units)
                )
            }

    def _write_nodes(self, s: Session, snap: Snapshot, now: float) -> None:
        assert self._node_state is not None
        busy: dict[str, int] = {}
        for rj in snap.running:
            for n in rj.nodes:
                busy[n] = busy.get(n, 0) + 1
        new_rows: list[dict[str, Any]] = []
        changed: list[dict[str, Any]] = []
        history: list[dict[str, Any]] = []
        for node in snap.nodes:
            key = (node.state.value, node.available, busy.get(node.name, 0))
            old = self._node_state.get(node.name)
            if old == key:
                continue
            row = {
                "name": node.name,
                "cores": node.capacity.cores,
                "mem_mb": node.capacity.mem_mb,
                "gpus": node.capacity.gpus,
                "mics": node.capacity.mics,
                "power_state": key[0],
                "available": key[1],
                "partition": node.partition,
                "busy_units": key[2],
                "time": snap.time,
                "updated_at": now,
            }
            (new_rows if old is None else changed).append(row)
            if old is None or old[:2] != key[:2]:
                history.append(
                    {
                        "node": node.name,
                        "time": snap.time,
                        "power_state": key[0],
                        "available": key[1],
                        "recorded_at": now,
                    }
                )
            self._node_state[node.name] = key
        if new_rows:
            s.execute(insert(NodeRow), new_rows)
        if changed:
            s.execute(update(NodeRow), changed)
        if history:
            s.execute(insert(NodeStateRow), history)

    def _write_jobs(
        self, s: Session, snap: Snapshot, plan: Plan, starts: Mapping[str, StartRecord]
    ) -> None:
        assert self._job_state is not None
        inserts, updates = job_changes(self._job_state, snap, plan, starts)
        if inserts:
            s.execute(insert(JobRow), inserts)
        if updates:
            # Bulk UPDATE by primary key, grouped by the set of keys (executemany per group).
            groups: dict[tuple[str, ...], list[dict[str, Any]]] = {}
            for u in updates:
                groups.setdefault(tuple(sorted(u)), []).append(u)
            for rows in groups.values():
                s.execute(update(JobRow), rows)
