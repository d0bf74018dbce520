"""The journal: every command to the RMS written ``pending`` before it is carried out and
``done``/``failed`` after, and what the daemon reads back from it (never-twice, refusals,
requeues seen). A mixin of :class:`~wattsched.daemon.store.Store`."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable

from sqlalchemy import delete, func, select, update
from sqlalchemy.orm import sessionmaker

from wattsched.daemon.job_records import StartRecord
from wattsched.daemon.store_models import ActionRow, CycleRow, SettingRow

RECONCILED = "reconciled:"
"""Prefix of the error of an action that a restart found pending (interrupted, not refused)."""


def _join(nodes: Iterable[str]) -> str:
    return ",".join(nodes)


class Journal:
    """The journal's reads and writes (``sessions`` and ``clock`` come from the store)."""

    sessions: sessionmaker
    clock: Callable[[], float]

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

    # -- settings changed over the API ---------------------------------------------------------

    def save_setting(self, key: str, value: object, by: str, *, time_: int) -> None:
        """Keep ``key = value`` (set over the API by ``by``) and journal it, in one commit."""
        now = self.clock()
        with self.sessions.begin() as s:
            s.merge(SettingRow(key=key, value=json.dumps(value), set_at=now, set_by=by))
            s.add(
                ActionRow(
                    kind="setting", job_id=None, nodes=None, cycle_id=None, time=time_,
                    created_at=now, finished_at=now, state="done",
                    result=f"{key} = {json.dumps(value)} by {by}",
                )
            )  # fmt: skip

    def settings(self) -> dict[str, tuple[object, float, str]]:
        """The settings changed over the API: key -> (value, when, by whom)."""
        with self.sessions() as s:
            return {
                r.key: (json.loads(r.value), r.set_at, r.set_by)
                for r in s.scalars(select(SettingRow))
            }

    def reset_settings(self, by: str, *, time_: int) -> list[str]:
        """Forget every setting changed over the API (journaled); the keys that were set."""
        now = self.clock()
        with self.sessions.begin() as s:
            keys = list(s.scalars(select(SettingRow.key)))
            s.execute(delete(SettingRow))
            if keys:
                s.add(
                    ActionRow(
                        kind="setting", job_id=None, nodes=None, cycle_id=None, time=time_,
                        created_at=now, finished_at=now, state="done",
                        result=f"reset {', '.join(sorted(keys))} by {by}",
                    )
                )  # fmt: skip
        return keys
