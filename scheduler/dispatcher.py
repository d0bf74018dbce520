"""The dispatcher interface and the registry of dispatchers by name."""

from __future__ import annotations

import abc
from collections.abc import Callable

from wattsched.scheduler.mapper import StateCache
from wattsched.scheduler.model import Job, Plan, Snapshot


class Dispatcher(abc.ABC):
    """Decides when and where waiting jobs start; never exceeds the power cap.

    ``plan`` is called once per control cycle with the cluster as it is now. Implementations
    keep no state that changes their decisions between cycles other than caches derived from
    the snapshots (so that the daemon can restart at any time).
    """

    name: str = "dispatcher"

    def __init__(self) -> None:
        self.cache = StateCache()

    @abc.abstractmethod
    def plan(self, snap: Snapshot) -> Plan:
        """The plan for this snapshot: the jobs to start now (and, where known, later)."""


def submit_order(jobs: tuple[Job, ...] | list[Job]) -> list[Job]:
    """Jobs by submit time, then by id (first come, first served)."""
    return sorted(jobs, key=lambda j: (j.submit, _id_key(j.id)))


def prb_order(jobs: tuple[Job, ...] | list[Job]) -> list[Job]:
    """PRB's job order: expected wait time of the queue, then demand, then submit time."""
    return sorted(jobs, key=lambda j: (j.ewt, j.demand(), j.submit, _id_key(j.id)))


def _id_key(job_id: str) -> tuple[int, str]:
    return (int(job_id), "") if job_id.isdigit() else (0, job_id)


DispatcherFactory = Callable[..., Dispatcher]
_REGISTRY: dict[str, DispatcherFactory] = {}


def register(name: str, factory: DispatcherFactory) -> None:
    """Make a dispatcher available by name (CLI, config)."""
    _REGISTRY[name] = factory


def names() -> list[str]:
    """The registered dispatcher names."""
    _load_builtin()
    return sorted(_REGISTRY)


def create(name: str, **params: object) -> Dispatcher:
    """A new dispatcher by name; raises ValueError naming the known ones otherwise."""
    _load_builtin()
    try:
        factory = _REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown dispatcher {name!r}; known: {', '.join(sorted(_REGISTRY))}") from None
    return factory(**params)


def _load_builtin() -> None:
    # Imported lazily so that the registry has no import cycle with the dispatchers.
    import importlib

    for mod in ("fifo", "easy", "prb", "hybrid"):
        try:
            importlib.import_module(f"wattsched.scheduler.{mod}")
        except ModuleNotFoundError as exc:  # a dispatcher not written yet
            if exc.name != f"wattsched.scheduler.{mod}":
                raise
