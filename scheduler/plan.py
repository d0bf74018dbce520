"""A dispatcher's answer: :class:`Plan`, its :class:`Assignment` of each job and the
:class:`SolverStats` of the search behind it (re-exported by :mod:`wattsched.scheduler.model`)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Assignment:
    """A decision for one job: when it starts, and one node per unit."""

    job_id: str
    start: int
    nodes: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class SolverStats:
    """What a search-based dispatcher reports about its last plan."""

    status: str = "heuristic"
    objective: float | None = None
    bound: float | None = None
    seconds: float = 0.0
    iterations: int = 0
    cuts: int = 0
    extra: Mapping[str, float | int | str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Plan:
    """A dispatcher's answer: a start time and nodes for the jobs it scheduled.

    Only the assignments with ``start == time`` are carried out now; later ones are the plan the
    API publishes. A job missing from the plan waits for a later cycle.
    """

    time: int
    assignments: tuple[Assignment, ...] = ()
    stats: SolverStats = field(default_factory=SolverStats)
    wake_at: int | None = None
    """When the dispatcher wants the next cycle even if no event happens (its next planned
    start); None: at the next event. The replay and the daemon run a cycle then."""

    def starts_now(self) -> Iterator[Assignment]:
        """The assignments to carry out at this cycle."""
        return (a for a in self.assignments if a.start <= self.time)

    def by_job(self) -> dict[str, Assignment]:
        """Job id -> assignment."""
        return {a.job_id: a for a in self.assignments}
