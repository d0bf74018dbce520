"""The dispatcher interface and the registry of dispatchers by name."""

from __future__ import annotations

import abc
import operator
from collections.abc import Callable

from wattsched.scheduler.model import Job, Plan, PowerCap, Snapshot
from wattsched.scheduler.state_cache import StateCache


class Dispatcher(abc.ABC):
    """Decides when and where waiting jobs start; never exceeds the power cap.

    ``plan`` is called once per control cycle with the cluster as it is now. Implementations
    keep no state that changes their decisions between cycles other than caches derived from
    the snapshots (so that the daemon can restart at any time).
    """

    name: str = "dispatcher"
    skips_exact: bool = False
    """True when a plan that started nothing would start nothing again on the same cluster
    (same running jobs, nodes and cap, later time) with only new jobs queued that do not fit
    in what is free, when the dispatcher plans only starts the cluster accepts and no wake-up
    (``Plan.wake_at``), and when what it keeps between cycles is exact whatever cycles it
    saw: then a replay may skip such cycles, and those in which no job fits in what is free
    (:mod:`wattsched.daemon.replay`). Greedy dispatchers (FIFO, EASY, PRB) are; a search that
    may postpone a job that fits is not."""

    def __init__(self) -> None:
        self.cache = StateCache()
        self._memo: _Memo | None = None

    @abc.abstractmethod
    def plan(self, snap: Snapshot) -> Plan:
        """The plan for this snapshot: the jobs to start now (and, where known, later)."""

    def _unchanged_prefix(self, snap: Snapshot, ids: list[str]) -> int:
        """How many of ``ids`` (this cycle's eligible queue, in dispatch order) the last plan
        already tried on exactly the same cluster, or 0.

        Valid only when the last plan started nothing now, the running jobs, the nodes and the
        cap are the very same objects, no cap step fell in between, and the last queue is a
        prefix of this one (only arrivals since). Then every job tried last time fails again,
        and only the new ones need trying: the decisions are those of a full pass.
        """
        m = self._memo
        if m is None or not m.ids or not self._same_cluster(snap):
            return 0
        n = len(m.ids)
        return n if ids[:n] == m.ids else 0

    def _same_cluster(self, snap: Snapshot) -> bool:
        """True when the last plan started nothing and saw the very same running jobs, nodes
        and cap, with no cap step since: every job it could not start still cannot."""
        m = self._memo
        if (
            m is None
            or m.started_any
            or m.running is not snap.running
            or m.nodes is not snap.nodes
            or m.cap is not snap.cap
        ):
            return False
        nc = snap.cap.next_change(m.time)  # same object as m.cap
        return nc is None or nc > snap.time

    def _started_last(self) -> list[str]:
        """The jobs the last plan started now."""
        m = self._memo
        return list(m.started) if m is not None else []

    def _remember(self, snap: Snapshot, ids: list[str], plan: Plan, extra: object = None) -> None:
        t = plan.time
        self._memo = _Memo(
            snap.time,
            snap.running,
            snap.nodes,
            snap.cap,
            ids,
            [a.job_id for a in plan.assignments if a.start <= t],  # plan.starts_now()
            extra,
        )


class _Memo:
    """What the last plan saw (identity of the snapshot's parts) and decided."""

    __slots__ = ("cap", "extra", "ids", "nodes", "running", "started", "started_any", "time")

    def __init__(
        self,
        time: int,
        running: tuple[object, ...],
        nodes: tuple[object, ...],
        cap: PowerCap,
        ids: list[str],
        started: list[str],
        extra: object,
    ) -> None:
        self.time = time
        self.running = running
        self.nodes = nodes
        self.cap = cap
        self.ids = ids
        self.started = started
        self.started_any = bool(started)
        self.extra = extra


def submit_order(jobs: tuple[Job, ...] | list[Job]) -> list[Job]:
    """Eligible (not held) jobs by submit time, ties in the order the RMS lists them."""
    return sorted((j for j in jobs if not j.held), key=_SUBMIT)


def prb_key(job: Job) -> tuple[float, float, int, int, str]:
    """PRB's priority: expected wait time of the queue, then demand, then submit time."""
    return (job.ewt, job.demand(), job.submit, *_id_key(job.id))


def prb_order(jobs: tuple[Job, ...] | list[Job]) -> list[Job]:
    """Eligible (not held) jobs in PRB's order (see :func:`prb_key`)."""
    return sorted((j for j in jobs if not j.held), key=prb_key)


_SUBMIT = operator.attrgetter("submit")


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
    if name not in _REGISTRY:
        _load_builtin(_BUILTIN.get(name))
    try:
        factory = _REGISTRY[name]
    except KeyError:
        raise ValueError(
            f"unknown dispatcher {name!r}; known: {', '.join(sorted(_REGISTRY))}"
        ) from None
    return factory(**params)


_BUILTIN = {
    "fifo": "fifo",
    "easy": "easy",
    "prb": "prb",
    "prb-reserve": "reservation",
    "hybrid": "hybrid",
    "hybrid-nofb": "hybrid",
    "profit": "profitsched.dispatcher",
}
"""The module of each built-in dispatcher: creating one imports only its own (the hybrid's
pulls in OR-Tools, most of a second at start-up)."""


def _load_builtin(only: str | None = None) -> None:
    # Imported lazily so that the registry has no import cycle with the dispatchers.
    import importlib

    for mod in (only,) if only else dict.fromkeys(_BUILTIN.values()):
        try:
            importlib.import_module(f"wattsched.scheduler.{mod}")
        except ModuleNotFoundError as exc:  # a dispatcher not written yet
            if exc.name != f"wattsched.scheduler.{mod}":
                raise
