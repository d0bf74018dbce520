"""The API's response and request models (pydantic)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from wattsched.daemon.limits import PowerWatts

JobState = Literal[
    "queued",
    "running",
    "finished",
    "completed",
    "cancelled",
    "failed",
    "timeout",
    "node_fail",
    "preempted",
    "out_of_memory",
]
"""queued, running, then the RMS's end state, or finished (ended, the RMS no longer says how)."""


class Health(BaseModel):
    """Liveness: the process answers and the database too."""

    status: Literal["ok"]
    schema_revision: str


class ErrorOut(BaseModel):
    """An error: what went wrong (a text, or the validation errors by location)."""

    detail: str | list[dict[str, Any]]


MUTATION_ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorOut, "description": "a body that is not JSON (not even UTF-8)"},
    401: {"model": ErrorOut, "description": "no bearer token"},
    403: {"model": ErrorOut, "description": "wrong token, or mutations disabled"},
    413: {"model": ErrorOut, "description": "body too large"},
}
"""The answers every mutation (a route with a body, behind the bearer token) may give before
its own code runs; a route adds its own codes to these."""


def short(text: str, limit: int = 80) -> str:
    """``text`` cut to ``limit`` characters (an error never echoes a huge input back)."""
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} chars)"


class Ready(BaseModel):
    """Readiness: the daemon runs its cycle (503 with the reason otherwise)."""

    ready: bool
    reason: str
    """Empty when ready; else why not (a stale or failing cycle, a replaced database)."""


class Status(BaseModel):
    """The daemon at a glance."""

    mode: Literal["advise", "enforce"]
    role: Literal["leader", "standby"] = "leader"
    """``standby``: another daemon leads on this store; this one serves the API read-only."""
    dispatcher: str
    cycle_seconds: float
    cycles: int
    last_cycle_at: float | None = Field(description="wall clock, epoch seconds")
    last_cycle_duration_s: float | None
    last_cycle_ok: bool | None
    last_error: str | None
    cluster_time: int | None = Field(description="the cluster clock at the last cycle")
    power_w: float | None
    cap_w: float | None
    queue_length: int
    running: int
    planned: int
    planned_mean_wait_s: float | None
    nodes_by_state: dict[str, int]
    errors: dict[str, int]
    sources: dict[str, str] = Field(
        default_factory=dict, description="where each setting comes from: file, environment, "
        "default, or api"
    )  # fmt: skip
    celsius: float | None = None
    """Outside temperature at the last cycle (with a ``[cooling]`` table)."""
    pue: float | None = None
    """PUE at the estimated IT power and that temperature."""
    cooling_w: float | None = None
    """Cooling power: IT power x (PUE - 1)."""
    profit_per_h: float | None = None
    """What the running jobs earn per hour less the IT and cooling energy cost per hour."""
    power_decision: PowerDecisionOut | None = None
    """The node power policy's decision at the last cycle (in advise mode: what it would do)."""


class PowerDecisionOut(BaseModel):
    """What the node power policy decided at a cycle."""

    policy: str
    off: list[str]
    on: list[str]
    reason: str
    carried_out: bool
    """False in advise mode: published, not sent."""


class PowerCommandOut(BaseModel):
    """A node's last power command, from the journal."""

    action_id: int
    command: str
    """``power_on`` or ``power_off``."""
    state: str
    """``pending``, ``done`` or ``failed``."""
    time: int
    result: str | None = None
    error: str | None = None


class NodeOut(BaseModel):
    """A node as last seen."""

    model_config = ConfigDict(from_attributes=True)

    name: str
    cores: int
    mem_mb: int
    gpus: int
    mics: int
    power_state: str
    available: bool
    partition: str | None
    busy_units: int
    time: int
    last_power_command: PowerCommandOut | None = None
    """The last power command sent to the node (by the policy, an operator or Slurm)."""
    outlet_celsius: float | None = None
    """Outlet temperature at the last cycle (with a ``[thermal]`` table)."""
    outlet_source: str | None = None
    """Where it comes from: ``reading`` (the readings source) or ``model``."""


class NodeStateOut(BaseModel):
    """One change of a node's power state or availability."""

    model_config = ConfigDict(from_attributes=True)

    time: int
    power_state: str
    available: bool


class NodeDetail(NodeOut):
    """A node with its recent state history (newest first)."""

    history: list[NodeStateOut]


class JobOut(BaseModel):
    """A job and its lifecycle."""

    model_config = ConfigDict(from_attributes=True)

    id: str
    state: JobState
    queue: str
    user: str | None
    units: int
    unit_cores: int
    unit_mem_mb: int
    unit_gpus: int
    unit_mics: int
    walltime: int
    submit: int
    first_seen: int
    last_seen: int
    planned_start: int | None
    planned_nodes: str | None
    started: int | None
    started_by: str | None
    nodes: str | None
    finished: int | None
    held_by: str | None = None
    """Who holds a queued job: wattsched (its gate), user, operator; null: not held."""
    restarts: int = 0
    """How many times the RMS requeued the job."""


class JobPage(BaseModel):
    """A page of jobs."""

    total: int
    limit: int
    offset: int
    items: list[JobOut]


class ActionOut(BaseModel):
    """A journaled RMS command."""

    model_config = ConfigDict(from_attributes=True)

    id: int
    kind: str
    job_id: str | None
    nodes: str | None
    cycle_id: int | None
    time: int
    created_at: float
    finished_at: float | None
    state: str
    result: str | None
    error: str | None


class JobDetail(JobOut):
    """A job with the actions taken on it."""

    actions: list[ActionOut]


class PlanEntry(BaseModel):
    """One job of the plan: when, until when at the latest, where (what a Gantt chart needs)."""

    model_config = ConfigDict(from_attributes=True)

    job_id: str
    start: int
    end: int
    nodes: list[str]


class PlanOut(BaseModel):
    """The current plan with its solver statistics."""

    cycle_id: int | None
    time: int | None
    solver_status: str | None
    objective: float | None
    bound: float | None
    solver_seconds: float | None
    planned_mean_wait_s: float | None
    entries: list[PlanEntry]


class PowerSampleOut(BaseModel):
    """IT power, cap and nodes on at one cycle."""

    model_config = ConfigDict(from_attributes=True)

    time: int
    recorded_at: float
    it_power_w: float
    cap_w: float | None
    nodes_on: int


class PowerCapIn(BaseModel):
    """A new constant power cap in watts (1 W to 1 GW, a JSON number; null: none)."""

    model_config = ConfigDict(extra="forbid")

    watts: PowerWatts | None


class ModeIn(BaseModel):
    """The new mode."""

    model_config = ConfigDict(extra="forbid")

    mode: Literal["advise", "enforce"]


class ConfigOut(BaseModel):
    """The settings the API can change, as now in force."""

    mode: Literal["advise", "enforce"]
    cap_w: float | None
    sources: dict[str, str] = Field(
        default_factory=dict, description="where each setting comes from: file, environment, "
        "default, or api (changed over the API, kept across restarts)"
    )  # fmt: skip


class CycleOut(BaseModel):
    """What a cycle run on demand did."""

    cycle_id: int | None
    ok: bool
    error: str | None
    duration_s: float
    time: int | None
    planned: int
    started: int


class NodePowerIn(BaseModel):
    """A power command for one node."""

    model_config = ConfigDict(extra="forbid")

    on: bool = Field(strict=True, description="true: power on; false: power off")


class NodePowerOut(BaseModel):
    """A power command carried out (its action id in ``/actions``)."""

    node: str
    on: bool
    action_id: int
