"""The offline day problem of the profit paper, on a grid of time slots.

A :class:`DayProblem` holds what one scheduling run needs: the nodes (in the paper's
lexicographic order), the jobs to place with their release, duration, units, per-unit needs,
power and revenue rate, the capacity still held by jobs already running, and an optional
budget for the jobs' power. Times are slots of ``slot_s`` seconds from ``origin`` (starts are
slot-aligned; durations round up, so a planned job never overlaps the next one on its node).

A :class:`DaySchedule` is one solution: a start slot and one node per unit for each job
(``-1``: not placed within the horizon).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from wattsched.scheduler.model import RESOURCES, Job, Node, Placement

IntArray = np.ndarray
FloatArray = np.ndarray


class ProblemError(ValueError):
    """The day problem cannot be built from these inputs; the message names what and why."""


def natural_key(name: str) -> tuple[object, ...]:
    """Sort key that orders ``n2`` before ``n10`` (the lexicographic node rank of the paper,
    read as people number nodes)."""
    out: list[object] = []
    num = ""
    text = ""
    for ch in name:
        if ch.isdigit():
            if text:
                out.append(text)
                text = ""
            num += ch
        else:
            if num:
                out.append(int(num))
                num = ""
            text += ch
    out.append(int(num) if num else text)
    return tuple((0, x) if isinstance(x, int) else (1, x) for x in out)


@dataclass(frozen=True, slots=True)
class Busy:
    """Capacity held on one node by a job already running: ``need`` until ``end`` (seconds)."""

    node: str
    need: tuple[int, ...]
    end: int
    power_w: float = 0.0


@dataclass(slots=True)
class DayProblem:
    """Jobs to place on nodes from ``origin`` on (see the module docstring)."""

    origin: int
    slot_s: int
    node_names: tuple[str, ...]
    capacity: IntArray
    """(resources, nodes) capacity."""
    jobs: tuple[Job, ...]
    release: IntArray
    duration: IntArray
    """Planned duration in slots (rounded up)."""
    seconds: IntArray
    """The duration in seconds as given (what the profit evaluator counts)."""
    units: IntArray
    need: IntArray
    """(jobs, resources) need of one unit."""
    power_w: FloatArray
    """Power of the whole job while it runs."""
    rate: FloatArray
    """Revenue per second of run (all units)."""
    busy: tuple[Busy, ...] = ()
    power_budget_w: float | None = None
    """The jobs' power may not exceed this at any instant (None: no budget)."""
    resources: tuple[int, ...] = field(default=())
    """Indices into :data:`RESOURCES` of the resources that matter (some job needs them)."""
    max_per_node: IntArray | None = None
    """Units of each job one node may hold (1 for a job whose units scatter; None: any)."""
    pack: FloatArray | None = None
    """True for a job whose units must all be on one node."""

    @classmethod
    def build(
        cls,
        nodes: Sequence[Node],
        jobs: Sequence[Job],
        *,
        origin: int,
        slot_s: int = 60,
        durations: Sequence[int] | None = None,
        power_w: Sequence[float],
        rate: Sequence[float],
        busy: Sequence[Busy] = (),
        power_budget_w: float | None = None,
    ) -> DayProblem:
        """A problem from model objects. ``durations`` default to the jobs' walltimes."""
        if slot_s < 1:
            raise ProblemError(f"slot_s={slot_s}: must be >= 1")
        if not nodes:
            raise ProblemError("no node")
        order = sorted(nodes, key=lambda n: natural_key(n.name))
        names = tuple(n.name for n in order)
        cap = np.array([n.capacity.as_tuple() for n in order], dtype=np.int64).T
        dur_s = [j.walltime for j in jobs] if durations is None else list(durations)
        if len(dur_s) != len(jobs) or len(power_w) != len(jobs) or len(rate) != len(jobs):
            raise ProblemError("durations, power_w and rate need one value per job")
        need = np.array([j.unit.as_tuple() for j in jobs], dtype=np.int64).reshape(-1, 4)
        used = [k for k in range(len(RESOURCES)) if need[:, k].any()] or [0]
        scatter = np.array([j.placement is Placement.SCATTER for j in jobs], dtype=bool)
        pack = np.array([j.placement is Placement.PACK for j in jobs], dtype=bool)
        for i, j in enumerate(jobs):
            q = need[i, used, None]
            per_node = np.where(q > 0, cap[used] // np.maximum(q, 1), j.units).min(axis=0)
            if scatter[i]:
                per_node = np.minimum(per_node, 1)
            if pack[i]:
                per_node = np.where(per_node >= j.units, per_node, 0)
            if int(np.minimum(per_node, j.units).sum()) < j.units:
                raise ProblemError(f"job {j.id}: its {j.units} units of {j.unit} never fit")
            if power_budget_w is not None and power_w[i] > power_budget_w:
                raise ProblemError(
                    f"job {j.id}: power {power_w[i]} W above the budget {power_budget_w} W"
                )
        known = set(names)
        for b in busy:
            if b.node not in known:
                raise ProblemError(f"running job on unknown node {b.node!r}")
        release = np.array(
            [max(0, math.ceil((j.submit - origin) / slot_s)) for j in jobs], dtype=np.int64
        )
        duration = np.array([max(1, math.ceil(d / slot_s)) for d in dur_s], dtype=np.int64)
        return cls(
            origin=origin,
            slot_s=slot_s,
            node_names=names,
            capacity=cap,
            jobs=tuple(jobs),
            release=release,
            duration=duration,
            seconds=np.asarray(dur_s, dtype=np.int64),
            units=np.array([j.units for j in jobs], dtype=np.int64),
            need=need,
            power_w=np.asarray(power_w, dtype=float),
            rate=np.asarray(rate, dtype=float),
            busy=tuple(busy),
            power_budget_w=power_budget_w,
            resources=tuple(used),
            max_per_node=np.where(scatter, 1, np.array([j.units for j in jobs], dtype=np.int64)),
            pack=pack,
        )

    @property
    def n_jobs(self) -> int:
        """How many jobs to place."""
        return len(self.jobs)


@dataclass(slots=True)
class DaySchedule:
    """Start slot and nodes (indices into ``node_names``, one per unit) of each job."""

    start: IntArray
    nodes: list[IntArray]

    @classmethod
    def empty(cls, n: int) -> DaySchedule:
        """No job placed yet."""
        return cls(np.full(n, -1, dtype=np.int64), [np.empty(0, dtype=np.int64)] * n)

    def start_s(self, problem: DayProblem) -> IntArray:
        """Start times in seconds (``-1`` where not placed)."""
        return np.where(self.start >= 0, problem.origin + self.start * problem.slot_s, -1)

    def makespan_slot(self, problem: DayProblem) -> int:
        """The slot after the last planned end (0 with nothing placed)."""
        placed = self.start >= 0
        if not placed.any():
            return 0
        return int((self.start[placed] + problem.duration[placed]).max())
