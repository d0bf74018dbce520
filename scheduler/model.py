"""The domain model: nodes, jobs, snapshots and plans (plans in :mod:`.plan`, re-exported).

Plain frozen dataclasses, validated at construction, in integer seconds and watts (watts may
be fractional). Every dispatcher takes a :class:`Snapshot` and returns a :class:`Plan`; nothing
here does I/O.

Resources are a fixed vector ``(cores, mem_mb, gpus, mics)`` (:data:`RESOURCES`): a node's
capacity and a job unit's requirement are both :class:`Resources`.

A job is made of ``units`` identical units; each unit runs on one node. Its
:class:`Placement` says how the units may share nodes: ``free`` (several units of the job on one
node when it has room: PBS ``place=free``, the Eurora traces), ``scatter`` (every unit on a
distinct node: Slurm ``-N k``, PBS ``place=scatter``) or ``pack`` (all units on one node: PBS
``place=pack``, Grid Engine ``$pe_slots``); ``exclusive`` jobs take their nodes whole (Slurm
``--exclusive``, PBS ``excl``). :attr:`Assignment.nodes` lists one node per unit, so a node may
appear more than once for a ``free`` job; :func:`placement_error` checks a node list.
"""

from __future__ import annotations

import bisect
import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from wattsched.scheduler.plan import Assignment as Assignment
from wattsched.scheduler.plan import Plan as Plan
from wattsched.scheduler.plan import SolverStats as SolverStats

RESOURCES: tuple[str, ...] = ("cores", "mem_mb", "gpus", "mics")
"""The resource types, in the order used by every vector and array."""


class ModelError(ValueError):
    """A model object was built from invalid values; the message names the field and value."""


def _check(cond: bool, owner: str, name: str, value: object, rule: str) -> None:
    if not cond:
        raise ModelError(f"{owner}: {name}={value!r} {rule}")


@dataclass(frozen=True, slots=True)
class Resources:
    """An amount of each resource type (a node's capacity or a unit's requirement)."""

    cores: int = 0
    mem_mb: int = 0
    gpus: int = 0
    mics: int = 0

    def __post_init__(self) -> None:
        for name in RESOURCES:
            value = getattr(self, name)
            _check(isinstance(value, int), "Resources", name, value, "must be an integer")
            _check(value >= 0, "Resources", name, value, "must be >= 0")

    def as_tuple(self) -> tuple[int, int, int, int]:
        """The amounts in :data:`RESOURCES` order."""
        return (self.cores, self.mem_mb, self.gpus, self.mics)

    def fits_in(self, other: Resources) -> bool:
        """True when every amount is at most the other's."""
        return all(a <= b for a, b in zip(self.as_tuple(), other.as_tuple(), strict=True))

    def scaled(self, k: int) -> Resources:
        """These amounts times ``k``."""
        return Resources(self.cores * k, self.mem_mb * k, self.gpus * k, self.mics * k)


class Placement(enum.StrEnum):
    """How a job's units may share nodes (see the module docstring)."""

    FREE = "free"
    SCATTER = "scatter"
    PACK = "pack"


class PowerState(enum.StrEnum):
    """A node's power state (transitions: :mod:`~wattsched.scheduler.power_transitions`).
    ``unknown``: a power command timed out; nothing is placed there, it counts at its idle
    draw, until seen again."""

    ON = "on"
    OFF = "off"
    BOOTING = "booting"
    SHUTTING_DOWN = "shutting_down"
    FAILED = "failed"
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class NodePowerModel:
    """How much a node draws.

    Off: ``off_w`` (a BMC's standby draw, default 0). Booting or shutting down:
    ``transition_w``. On: ``idle_w``, plus, while at least one core is busy, ``first_core_w``
    once (the extra cost of waking the package: the non-linear first core of the power-capping
    paper), plus each busy unit's power. A unit's power is the job's own estimate when it has
    one, else ``core_w`` per core, ``gpu_w`` per GPU and ``mic_w`` per MIC it uses.
    """

    idle_w: float = 95.0
    first_core_w: float = 0.0
    core_w: float = 3.0
    gpu_w: float = 0.0
    mic_w: float = 0.0
    transition_w: float = 95.0
    off_w: float = 0.0

    def __post_init__(self) -> None:
        for name in ("idle_w", "first_core_w", "core_w", "gpu_w", "mic_w", "transition_w", "off_w"):
            value = getattr(self, name)
            _check(value >= 0, "NodePowerModel", name, value, "must be >= 0")

    def state_watts(self, state: PowerState) -> float:
        """The draw of a node with no busy core, in this power state.

        A failed node counts at its idle draw: a node whose RMS daemon died usually still
        draws power (only a BMC that says off makes it ``off``).
        """
        if state in (PowerState.ON, PowerState.FAILED, PowerState.UNKNOWN):
            return self.idle_w
        if state in (PowerState.BOOTING, PowerState.SHUTTING_DOWN):
            return self.transition_w
        return self.off_w

    def unit_watts(self, unit: Resources) -> float:
        """The draw of one job unit computed from this model (no per-job estimate)."""
        return unit.cores * self.core_w + unit.gpus * self.gpu_w + unit.mics * self.mic_w


@dataclass(frozen=True, slots=True)
class Node:
    """A compute node: static description plus its current power state."""

    name: str
    capacity: Resources
    power: NodePowerModel = field(default_factory=NodePowerModel)
    state: PowerState = PowerState.ON
    boot_s: int = 150
    shutdown_s: int = 6
    efficiency: float = 1.0
    """Higher is more efficient; dispatchers prefer efficient nodes."""
    available: bool = True
    """False when an admin drained or reserved the node: nothing new is placed on it."""
    last_power_failure: int | None = None
    rack: int | None = None
    slot: int | None = None
    partition: str | None = None

    def __post_init__(self) -> None:
        _check(bool(self.name), "Node", "name", self.name, "must not be empty")
        _check(self.boot_s >= 0, f"Node {self.name}", "boot_s", self.boot_s, "must be >= 0")
        _check(
            self.shutdown_s >= 0, f"Node {self.name}", "shutdown_s", self.shutdown_s, "must be >= 0"
        )
        _check(
            self.efficiency > 0, f"Node {self.name}", "efficiency", self.efficiency, "must be > 0"
        )
        _check(
            isinstance(self.state, PowerState), f"Node {self.name}", "state", self.state, "unknown"
        )


@dataclass(frozen=True, slots=True)
class Job:
    """A job: ``units`` identical units, each needing ``unit`` on one node."""

    id: str
    submit: int
    walltime: int
    units: int
    unit: Resources
    unit_power_w: float | None = None
    """Estimated power of one unit; None: computed from the node's power model."""
    queue: str = "default"
    ewt: int = 3600
    """Expected wait time of the job's queue, in seconds (the weighting of the objective)."""
    value_per_core_s: float = 0.0
    runtime: int | None = None
    """The real runtime (traces and the simulated cluster only); never seen by dispatchers."""
    user: str | None = None
    held: bool = False
    """Someone else holds the job (its user, an operator): it is never planned."""
    partition: str | None = None
    held_by: str | None = None
    """Who holds the job: ``wattsched`` (its gate: the job waits to be started by us),
    ``user``, ``operator``; None when the RMS may start it by itself."""
    restarts: int = 0
    """How many times the RMS requeued the job (Slurm's restart count): its incarnation."""
    placement: Placement = Placement.FREE
    """How the units may share nodes (the RMS's rule; ``free`` for the traces)."""
    exclusive: bool = False
    """The job's nodes run nothing else while it runs."""

    def __post_init__(self) -> None:
        owner = f"Job {self.id}"
        _check(bool(self.id), "Job", "id", self.id, "must not be empty")
        _check(self.submit >= 0, owner, "submit", self.submit, "must be >= 0")
        _check(self.walltime > 0, owner, "walltime", self.walltime, "must be > 0")
        _check(self.units >= 1, owner, "units", self.units, "must be >= 1")
        _check(self.ewt > 0, owner, "ewt", self.ewt, "must be > 0")
        _check(any(self.unit.as_tuple()), owner, "unit", self.unit, "must request a resource")
        if self.unit_power_w is not None:
            _check(self.unit_power_w >= 0, owner, "unit_power_w", self.unit_power_w, "must be >= 0")
        if self.runtime is not None:
            _check(self.runtime >= 0, owner, "runtime", self.runtime, "must be >= 0")

    @property
    def total(self) -> Resources:
        """What all the units need together."""
        return self.unit.scaled(self.units)

    def demand(self) -> float:
        """The job demand of the PRB rule: requirements (all resources, all units) x walltime."""
        u = self.unit
        return float((u.cores + u.mem_mb + u.gpus + u.mics) * self.units) * self.walltime


@dataclass(frozen=True, slots=True)
class RunningJob:
    """A job that runs: where, since when, and until when at the latest."""

    job: Job
    start: int
    nodes: tuple[str, ...]
    end_estimate: int

    def __post_init__(self) -> None:
        # The checks first, the messages only when one fails: a replay makes one per start.
        if len(self.nodes) != self.job.units:
            raise ModelError(
                f"RunningJob {self.job.id}: nodes={self.nodes!r} "
                f"must name one node per unit ({self.job.units})"
            )
        if self.end_estimate < self.start:
            raise ModelError(
                f"RunningJob {self.job.id}: end_estimate={self.end_estimate!r} >= start"
            )


@dataclass(frozen=True, slots=True)
class PowerCap:
    """The cluster's power cap: a step function of time (``steps`` sorted by time).

    Before the first step the first step's value applies. ``PowerCap.constant(w)`` for a fixed
    cap; ``float('inf')`` for none.
    """

    steps: tuple[tuple[int, float], ...]
    _times: tuple[int, ...] = field(init=False, repr=False, compare=False)
    """The step times (bisected by every query: a replay asks millions of them)."""
    limited: bool = field(init=False, repr=False, compare=False)
    """False when every step is infinite (no cap): no draw can then break it, so a caller
    may skip computing one."""

    def __post_init__(self) -> None:
        _check(len(self.steps) > 0, "PowerCap", "steps", self.steps, "must not be empty")
        times = [t for t, _ in self.steps]
        _check(times == sorted(times), "PowerCap", "steps", times, "must be sorted by time")
        for t, w in self.steps:
            _check(w > 0, "PowerCap", f"watts at {t}", w, "must be > 0")
        object.__setattr__(self, "_times", tuple(times))
        object.__setattr__(self, "limited", any(w != float("inf") for _, w in self.steps))

    @classmethod
    def constant(cls, watts: float) -> PowerCap:
        """A cap that never changes."""
        return cls(((0, float(watts)),))

    @classmethod
    def unlimited(cls) -> PowerCap:
        """No cap."""
        return cls.constant(float("inf"))

    def shifted(self, origin: int) -> PowerCap:
        """The same profile with its offsets counted from ``origin``."""
        return PowerCap(tuple((origin + t, w) for t, w in self.steps))

    def at(self, t: int) -> float:
        """The cap in force at time ``t``."""
        if len(self.steps) == 1:
            return self.steps[0][1]
        i = bisect.bisect_right(self._times, t) - 1
        return self.steps[i if i > 0 else 0][1]

    def min_over(self, t0: int, t1: int) -> float:
        """The lowest cap in force anywhere in ``[t0, t1)`` (``at(t0)`` when empty)."""
        steps = self.steps
        if len(steps) == 1:
            return steps[0][1]
        times = self._times
        i = bisect.bisect_right(times, t0)
        low = steps[i - 1 if i > 0 else 0][1]
        j = bisect.bisect_left(times, t1, lo=i)  # the steps starting inside (t0, t1)
        return min([low, *(w for _, w in steps[i:j])])

    def next_change(self, t: int) -> int | None:
        """The first time after ``t`` at which the cap changes, or None."""
        if len(self.steps) == 1:
            return None
        times = self._times
        i = bisect.bisect_right(times, t)
        return times[i] if i < len(times) else None


END_STATES = frozenset(
    {"completed", "cancelled", "failed", "timeout", "node_fail", "preempted", "out_of_memory"}
)
"""The end states a job can have in the store and the API (besides ``finished``: ended, state
unknown)."""


@dataclass(frozen=True, slots=True)
class EndedJob:
    """A job the RMS reports as ended: its id, end state (one of :data:`END_STATES`) and end."""

    job_id: str
    state: str
    end: int | None = None


@dataclass(frozen=True, slots=True)
class Snapshot:
    """What a dispatcher sees: the cluster at one instant."""

    time: int
    nodes: tuple[Node, ...]
    running: tuple[RunningJob, ...]
    queued: tuple[Job, ...]
    cap: PowerCap = field(default_factory=PowerCap.unlimited)
    outside_temp_c: tuple[tuple[int, float], ...] = ()
    """Forecast of the outside temperature: ``(time, celsius)`` steps (cooling-aware dispatch)."""
    ended: tuple[EndedJob, ...] = ()
    """Jobs the RMS still reports after their end, with its end state (Slurm keeps them for
    ``MinJobAge``); empty when the RMS does not say."""
    queued_index: Mapping[str, Job] | None = field(default=None, compare=False, repr=False)
    """Job id -> queued job, when the connector keeps one (the simulated cluster): spares the
    cycle a scan of a long queue. None: look through :attr:`queued`."""
    queue_edits: int | None = field(default=None, compare=False, repr=False)
    """How many times the connector has replaced a queued job's object in place (a hold or a
    release), when it keeps its job objects from one snapshot to the next (the simulated
    cluster). A dispatcher that keeps the queue across cycles (:class:`~wattsched.scheduler.
    queueindex.QueueIndex`) rebuilds when it moves: such a change leaves the queue's length
    and ends as they were. None: the connector builds new objects at every snapshot (a real
    RMS), or does not say."""

    def node_index(self) -> dict[str, int]:
        """Node name -> position in :attr:`nodes` (the solver-index boundary)."""
        return {n.name: i for i, n in enumerate(self.nodes)}

    def max_ewt(self) -> int:
        """The largest expected wait time among the queued jobs (1 when none)."""
        return max((j.ewt for j in self.queued), default=1)


def placement_error(job: Job, nodes: Sequence[str]) -> str:
    """Why ``nodes`` (one per unit) break the job's placement rule ("" when they do not).

    Exclusivity depends on the other jobs and is checked where they are known (the mapper,
    the validator, the simulated cluster).
    """
    if len(nodes) != job.units:
        return f"names {len(nodes)} nodes for {job.units} units"
    if job.placement is Placement.SCATTER and len(set(nodes)) != len(nodes):
        return f"puts several units on one node ({','.join(nodes)}) but its units are scattered"
    if job.placement is Placement.PACK and len(set(nodes)) > 1:
        return f"spreads its units ({','.join(nodes)}) but they are packed on one node"
    return ""
