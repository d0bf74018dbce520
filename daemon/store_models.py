"""The daemon's SQL schema (SQLAlchemy 2.0 typed ORM). Alembic versions in ``migrations/``.

Times: ``time`` columns hold the cluster's clock (the snapshot time, integer epoch seconds; the
virtual clock on the simulated cluster); ``*_at`` columns hold the wall clock (UTC, epoch
seconds as float) at which the daemon wrote the row.
"""

from __future__ import annotations

from sqlalchemy import Float, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


class Base(DeclarativeBase):
    """Declarative base of every table."""


class NodeRow(Base):
    """A node as last seen."""

    __tablename__ = "nodes"

    name: Mapped[str] = mapped_column(String(128), primary_key=True)
    cores: Mapped[int] = mapped_column(Integer)
    mem_mb: Mapped[int] = mapped_column(Integer)
    gpus: Mapped[int] = mapped_column(Integer)
    mics: Mapped[int] = mapped_column(Integer)
    power_state: Mapped[str] = mapped_column(String(32))
    available: Mapped[bool]
    partition: Mapped[str | None] = mapped_column(String(128))
    busy_units: Mapped[int] = mapped_column(Integer, default=0)
    time: Mapped[int] = mapped_column(Integer)
    updated_at: Mapped[float] = mapped_column(Float)


class NodeStateRow(Base):
    """A change of a node's power state or availability (the history)."""

    __tablename__ = "node_states"
    __table_args__ = (Index("ix_node_states_node_time", "node", "time"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    node: Mapped[str] = mapped_column(String(128), ForeignKey("nodes.name"))
    time: Mapped[int] = mapped_column(Integer)
    power_state: Mapped[str] = mapped_column(String(32))
    available: Mapped[bool]
    recorded_at: Mapped[float] = mapped_column(Float)


class JobRow(Base):
    """A job and its lifecycle: seen, planned, started (by us or by the RMS), finished."""

    __tablename__ = "jobs"
    __table_args__ = (
        Index("ix_jobs_state", "state"),
        # GET /jobs pages by (submit, id), optionally within one state: no sort at read time.
        Index("ix_jobs_submit_id", "submit", "id"),
        Index("ix_jobs_state_submit_id", "state", "submit", "id"),
    )

    id: Mapped[str] = mapped_column(String(128), primary_key=True)
    state: Mapped[str] = mapped_column(String(16))
    """queued | running, then an end state: completed | cancelled | failed | timeout |
    node_fail | preempted | out_of_memory as the RMS reports it, or finished (ended, the RMS
    no longer says how)."""
    queue: Mapped[str] = mapped_column(String(128))
    user: Mapped[str | None] = mapped_column(String(128))
    units: Mapped[int] = mapped_column(Integer)
    unit_cores: Mapped[int] = mapped_column(Integer)
    unit_mem_mb: Mapped[int] = mapped_column(Integer)
    unit_gpus: Mapped[int] = mapped_column(Integer)
    unit_mics: Mapped[int] = mapped_column(Integer)
    walltime: Mapped[int] = mapped_column(Integer)
    submit: Mapped[int] = mapped_column(Integer)
    first_seen: Mapped[int] = mapped_column(Integer)
    last_seen: Mapped[int] = mapped_column(Integer)
    planned_start: Mapped[int | None] = mapped_column(Integer)
    planned_nodes: Mapped[str | None] = mapped_column(Text)
    started: Mapped[int | None] = mapped_column(Integer)
    started_by: Mapped[str | None] = mapped_column(String(16))
    """wattsched (we started it) | rms (the resource manager did)."""
    nodes: Mapped[str | None] = mapped_column(Text)
    finished: Mapped[int | None] = mapped_column(Integer)
    held_by: Mapped[str | None] = mapped_column(String(16))
    """Who holds a queued job: wattsched (its gate) | user | operator; None: not held."""
    restarts: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    """How many times the RMS requeued the job."""


class CycleRow(Base):
    """One control cycle: what was seen, the plan's solver statistics, how long it took."""

    __tablename__ = "cycles"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    time: Mapped[int | None] = mapped_column(Integer, index=True)
    started_at: Mapped[float] = mapped_column(Float)
    duration_s: Mapped[float] = mapped_column(Float)
    plan_seconds: Mapped[float] = mapped_column(Float, default=0.0)
    mode: Mapped[str] = mapped_column(String(16))
    ok: Mapped[bool]
    error: Mapped[str | None] = mapped_column(Text)
    queued: Mapped[int] = mapped_column(Integer, default=0)
    running: Mapped[int] = mapped_column(Integer, default=0)
    planned: Mapped[int] = mapped_column(Integer, default=0)
    starts_now: Mapped[int] = mapped_column(Integer, default=0)
    solver_status: Mapped[str | None] = mapped_column(String(32))
    objective: Mapped[float | None] = mapped_column(Float)
    bound: Mapped[float | None] = mapped_column(Float)
    solver_seconds: Mapped[float | None] = mapped_column(Float)
    iterations: Mapped[int | None] = mapped_column(Integer)
    planned_mean_wait_s: Mapped[float | None] = mapped_column(Float)


class PlanEntryRow(Base):
    """One assignment of the latest plan (older cycles keep only their statistics)."""

    __tablename__ = "plan_entries"

    cycle_id: Mapped[int] = mapped_column(Integer, ForeignKey("cycles.id"), primary_key=True)
    job_id: Mapped[str] = mapped_column(String(128), primary_key=True)
    start: Mapped[int] = mapped_column(Integer)
    end: Mapped[int] = mapped_column(Integer)
    nodes: Mapped[str] = mapped_column(Text)


class ActionRow(Base):
    """A command to the RMS, journaled before (``pending``) and after (``done``/``failed``)."""

    __tablename__ = "actions"
    __table_args__ = (
        Index("ix_actions_state", "state"),
        Index("ix_actions_job", "job_id"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    kind: Mapped[str] = mapped_column(String(16))
    """start | hold | release | requeue (seen, not an RMS command) | power_on | power_off."""
    job_id: Mapped[str | None] = mapped_column(String(128))
    nodes: Mapped[str | None] = mapped_column(Text)
    cycle_id: Mapped[int | None] = mapped_column(Integer)
    time: Mapped[int] = mapped_column(Integer)
    """The cluster clock when the action was decided."""
    created_at: Mapped[float] = mapped_column(Float, index=True)
    finished_at: Mapped[float | None] = mapped_column(Float)
    state: Mapped[str] = mapped_column(String(16))
    """pending | done | failed."""
    result: Mapped[str | None] = mapped_column(Text)
    error: Mapped[str | None] = mapped_column(Text)
    incarnation: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    """The job's restart count the action concerns (never two starts of one incarnation)."""


class PowerSampleRow(Base):
    """The cluster's IT power, cap and nodes on at one cycle."""

    __tablename__ = "power_samples"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    time: Mapped[int] = mapped_column(Integer, index=True)
    recorded_at: Mapped[float] = mapped_column(Float)
    it_power_w: Mapped[float] = mapped_column(Float)
    cap_w: Mapped[float | None] = mapped_column(Float)
    nodes_on: Mapped[int] = mapped_column(Integer)
