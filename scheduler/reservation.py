"""A reservation for a starving wide job: what greedy priority rules lack (issue 16).

PRB starts, at each event, in its order, every job that fits now. A wide job (several whole
nodes) of the most urgent queue fits only when as many nodes are idle at once and the power
cap leaves room for all of them; under a steady flow of smaller jobs that moment may not come
until the queue drains. On the ``hist_400_20140403`` Eurora traces 11-node ``reservation``
jobs that run seconds waited 27 h under PRB (about half of PRB's objective), and the hybrid,
whose mapper and fill are greedy too, lost to PRB there.

Here the first job in PRB's order that is *starving* gets a reservation, as EASY backfilling
gives its head one: the earliest time at which, with the running jobs ending at their end
estimates (the walltimes the RMS knows), its units fit and the cap holds (the *shadow time*),
and the nodes it would use then. A later start must then not delay it: it ends (by its
walltime) before the shadow time, or it avoids those nodes and leaves the head its power at
the shadow time. A job is starving when it is wide (at least ``wide`` units, or with
``wide_cores`` units needing that many cores in all: the hybrid's default, a whole node's
worth, since a flow of one-core jobs rarely leaves a node empty either; or, with
``also_wide``, a job that needs all the GPUs or MICs of a node, :func:`whole_node_accelerators`:
a flow of one-GPU jobs rarely leaves both GPUs of a node free), has waited
``k`` times its queue's expected wait time, and is worth its room: its weight over its
predicted area (units x cores x predicted runtime, the Smith-rule index the hybrid's
orderings use) is in the top ``1 - quantile`` of the last ``ARRIVALS`` jobs to arrive. The
last condition keeps a 6-hour 11-node job from stalling the cluster for jobs worth more
(measured on ``hist_400_20140331_145003``: without it the reservation loses 0.37-0.80 to
PRB). It ranks against the arrivals, not the queue (as first built, session 20): the queue
is what the dispatcher left waiting, so the test changed with the dispatcher's own choices
(the hybrid leaves other jobs waiting than PRB), and it flipped as the queue changed (on
``hist_400_20140403_094530`` the hybrid's head went from an 11-node job to a 2-node one, to
none, and back, while the jobs started in between pushed its shadow time back). Ranked
against the queue, prb-reserve was below PRB on 5 of the 22 ``hist_400`` traces (0.980-0.999)
and 2.0-2.3x on four heavy ones; against the last 50 arrivals it is below PRB on none and
1.1-1.9x on those (a window of 25, 75, 100 or 200 arrivals: one trace at 0.991-0.999 and
lower gains; ``bench/results/hybrid_eurora.md``, "Session 21"). With the predictor's
``min_runs`` 2 (session 23) it is below PRB on one (151528, 0.979) and 1.16-2.01x on the
seven 20140403 traces.

Measured (``bench/hybrid_reserve.py``, greedy PRB with the reservation, ``k`` = 2, predicted
runtimes learned online): see ``bench/results/hybrid_reserve.md``.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from wattsched.scheduler.dispatcher import Dispatcher, prb_order, register
from wattsched.scheduler.mapper import ClusterState, StateCache
from wattsched.scheduler.model import Assignment, Job, Node, Plan, Snapshot, SolverStats
from wattsched.scheduler.node_arrays import EPS_W, IntArray, JobVec
from wattsched.scheduler.prb import prb_node_order
from wattsched.scheduler.runtime_predictor import RuntimePredictor

K = 2.0
"""A wide job starves after waiting this many times its queue's expected wait time."""
QUANTILE = 0.8
"""... and if its weight over predicted area is at least this quantile of the queue's."""
WIDE = 2
"""... and if it has at least this many units."""
ARRIVALS = 50
"""The quantile is of the indexes of the last this many jobs to arrive."""

Predict = Callable[[Job], int]


@dataclass
class Reservation:
    """The head's reservation: its nodes (indexes) and shadow time, and the cluster as it
    will be at the shadow time (the head booked, and every start since that runs past it)."""

    job: Job
    nodes: IntArray
    shadow: int
    at_shadow: ClusterState
    names: tuple[str, ...] = ()
    """The head's node per unit at the shadow time."""
    placement: tuple[IntArray, IntArray] | None = None
    """The head's placement at the shadow time (node indexes, units per node)."""

    def assignment(self) -> Assignment:
        """The reservation as a later start of the plan (what the API publishes, as EASY's):
        the head starts at the shadow time at the latest, on these nodes."""
        return Assignment(self.job.id, self.shadow, self.names)

    def admits(self, jv: JobVec, idx: IntArray, cnt: IntArray, now: int, walltime: int) -> bool:
        """True when starting a job on ``idx`` now cannot delay the head: it ends by the
        shadow time, or it avoids the head's nodes and leaves it its power then."""
        if now + walltime <= self.shadow:
            return True
        if np.isin(idx, self.nodes).any():
            return False
        limit = self.at_shadow.cap.min_over(self.shadow, now + walltime)
        return self.at_shadow.power_w + self.at_shadow.delta_watts(jv, idx, cnt) <= limit + EPS_W

    def book(self, jv: JobVec, idx: IntArray, cnt: IntArray, now: int, walltime: int) -> None:
        """Note a start (one :meth:`admits` accepted): it still runs at the shadow time?"""
        if now + walltime > self.shadow:
            self.at_shadow.commit(jv, idx, cnt)


class Reservations:
    """The reservations of a cycle, each for a starving job in PRB's order (one, or up to the
    hybrid's ``reservations``): a start now must delay none of them. With several, conservative
    backfilling for the starving jobs only: each later reservation is computed with the
    earlier ones' jobs holding their nodes from now on (:func:`reserve`), so it never takes
    their room."""

    def __init__(self, items: Sequence[Reservation]) -> None:
        if not items:
            raise ValueError("Reservations: at least one reservation")
        self.items = list(items)

    @property
    def job(self) -> Job:
        """The first reservation's job (the most urgent starving job that does not fit)."""
        return self.items[0].job

    @property
    def shadow(self) -> int:
        """The first reservation's shadow time."""
        return self.items[0].shadow

    def assignments(self) -> list[Assignment]:
        """Every reservation as a later start of the plan (:meth:`Reservation.assignment`)."""
        return [r.assignment() for r in self.items]

    def admits(self, jv: JobVec, idx: IntArray, cnt: IntArray, now: int, walltime: int) -> bool:
        """True when the start delays no reservation (:meth:`Reservation.admits`)."""
        return all(r.admits(jv, idx, cnt, now, walltime) for r in self.items)

    def book(self, jv: JobVec, idx: IntArray, cnt: IntArray, now: int, walltime: int) -> None:
        """Note a start in every reservation (:meth:`Reservation.book`)."""
        for r in self.items:
            r.book(jv, idx, cnt, now, walltime)

    def place(
        self, state: ClusterState, jv: JobVec, now: int, walltime: int
    ) -> tuple[IntArray, IntArray] | None:
        """A placement now (PRB's node order, off the nodes of every reservation whose shadow
        time it would run past) that :meth:`admits`, or None."""
        order = prb_node_order(state)
        blocked = [r.nodes for r in self.items if now + walltime > r.shadow]
        if blocked:
            order = order[~np.isin(order, np.concatenate(blocked))]
            if len(order) == 0:
                return None
        got = state.place(jv, order, now)
        if got is None or not self.admits(jv, got[0], got[1], now, walltime):
            return None
        return got


class Arrivals:
    """The last ``size`` jobs seen to arrive (first seen queued): the reference the value test
    of :func:`starving` ranks a job against. The jobs that arrive do not depend on what the
    dispatcher did before, whereas the queue does (a dispatcher that leaves other jobs waiting
    would reserve for other jobs)."""

    def __init__(self, size: int = ARRIVALS) -> None:
        self.jobs: deque[Job] = deque(maxlen=size)
        self._ids: set[str] = set()

    def observe(self, snap: Snapshot) -> None:
        """Note the jobs of ``snap`` not seen before (a job still queued is known even when it
        has left the window: a long queue does not come back in as new arrivals)."""
        for j in snap.queued:
            if j.id not in self._ids:
                self.jobs.append(j)
                self._ids.add(j.id)
        self._ids = {j.id for j in self.jobs}
        self._ids.update(j.id for j in snap.queued)


def whole_node_cores(nodes: Sequence[Node]) -> int:
    """The cores of the largest of ``nodes`` (0: none): a job whose units need that many is
    wide for the hybrid's reservation by default (it needs a whole node)."""
    return max((n.capacity.cores for n in nodes), default=0)


def whole_node_accelerators(nodes: Sequence[Node]) -> Callable[[Job], bool]:
    """The test of a job wide by its accelerators (``also_wide`` of :func:`starving`): its units
    need, in all, as many GPUs as the node with the most has, or as many MICs (a resource no
    node has makes no job wide)."""
    gpus = max((n.capacity.gpus for n in nodes), default=0)
    mics = max((n.capacity.mics for n in nodes), default=0)
    return lambda j: ((gpus > 0 and j.units * j.unit.gpus >= gpus)
                      or (mics > 0 and j.units * j.unit.mics >= mics))  # fmt: skip


def waited(snap: Snapshot, j: Job, k: float) -> bool:
    """Whether ``j`` has waited at least ``k`` times its queue's expected wait time by
    ``snap``'s time (the test of :func:`starving` and of the hybrid's ``urgent_wait``)."""
    return snap.time - j.submit >= k * j.ewt


def starving(snap: Snapshot, predict: Predict, *, k: float = K, quantile: float = QUANTILE,
             wide: int = WIDE, reference: Sequence[Job] = (),
             wide_cores: int = 0,
             pays: Callable[[Job], bool] | None = None,
             also_wide: Callable[[Job], bool] | None = None) -> list[Job]:  # fmt: skip
    """The starving jobs of ``snap`` in PRB's order (see the module doc); ``reference``: the
    jobs the value test ranks against (empty: the queue); ``wide_cores`` > 0: a job of fewer
    than ``wide`` units is wide too when its units need that many cores in all (a whole
    node's: under a flow of one-core jobs a node rarely empties by itself); ``pays``: a wide
    waited job that fails the value test starves too when ``pays(job)`` (the hybrid's judged
    reservations, :mod:`wattsched.scheduler.hybrid.holds`); ``also_wide``: a job for which it
    says True is wide too (:func:`whole_node_accelerators`)."""
    queued = prb_order(snap.queued)
    if not queued:
        return []

    def index(j: Job) -> float:
        return 1.0 / j.ewt / (max(predict(j), 1) * j.units * max(j.unit.cores, 1))

    ranked = sorted(index(j) for j in (reference or queued))
    bar = ranked[int(quantile * (len(ranked) - 1))]

    def is_wide(j: Job) -> bool:
        return (j.units >= wide or (wide_cores > 0 and j.units * j.unit.cores >= wide_cores)
                or (also_wide is not None and also_wide(j)))  # fmt: skip

    return [j for j in queued
            if is_wide(j) and waited(snap, j, k)
            and (index(j) >= bar or (pays is not None and pays(j)))]  # fmt: skip


def reserve(
    snap: Snapshot,
    cache: StateCache,
    state: ClusterState,
    head: Job,
    earlier: Sequence[Reservation] = (),
) -> Reservation | None:
    """``head``'s reservation from ``state`` (the cluster now, ``cache`` having seen
    ``snap``): the running jobs released in the order of their end estimates until it fits;
    None when it never does. The jobs of the ``earlier`` reservations hold their nodes from
    now on (conservative: the head never takes their room), and each of those that the head
    runs beside at its shadow time has the head's power booked there."""
    jv = cache.vec(head)
    placements = cache.running_placements()
    later = state.copy()
    for r in earlier:
        assert r.placement is not None
        later.commit(cache.vec(r.job), *r.placement)
    for rj in sorted(snap.running, key=lambda r: (r.end_estimate, r.job.id)):
        booked = placements.get(rj.job.id)
        if booked is None:
            continue
        later.release(*booked)
        t = max(rj.end_estimate, snap.time)
        got = later.place(jv, prb_node_order(later), t)
        if got is not None:
            names = later.names_for(*got)
            later.commit(jv, *got)
            for r in earlier:
                if t <= r.shadow < t + head.walltime:
                    r.at_shadow.commit(jv, *got)
            return Reservation(head, np.unique(got[0]), t, later, names, got)
    return None


def heads_first(
    snap: Snapshot,
    cache: StateCache,
    state: ClusterState,
    predict: Predict,
    reference: Sequence[Job] = (),
    wide_cores: int = 0,
    limit: int = 1,
    pays: Callable[[Job], bool] | None = None,
    also_wide: Callable[[Job], bool] | None = None,
) -> tuple[list[Assignment], Reservations | None]:
    """The starving jobs that fit now, started in PRB's order (booked in ``state``), and the
    reservations of the first ``limit`` that do not (None: none; the starving jobs after the
    last reserved one wait); ``reference``, ``wide_cores`` and ``also_wide`` as for
    :func:`starving`. A starving job after a reserved one starts now only if it delays no
    reservation."""
    out: list[Assignment] = []
    held: list[Reservation] = []
    now = snap.time
    for job in starving(snap, predict, reference=reference, wide_cores=wide_cores, pays=pays,
                        also_wide=also_wide):  # fmt: skip
        jv = cache.vec(job)
        if held:
            got = Reservations(held).place(state, jv, now, job.walltime)
        else:
            got = state.place(jv, prb_node_order(state), now)
        if got is None:
            r = reserve(snap, cache, state, job, held)
            if r is None:
                break
            held.append(r)
            if len(held) >= limit:
                break
            continue
        state.commit(jv, *got)
        for r in held:
            r.book(jv, got[0], got[1], now, job.walltime)
        out.append(Assignment(job.id, now, state.names_for(*got)))
    return out, (Reservations(held) if held else None)


def greedy_starts(
    snap: Snapshot,
    cache: StateCache,
    state: ClusterState,
    jobs: Sequence[Job],
    res: Reservations | None,
) -> list[Assignment]:
    """``jobs`` (in their order) that fit now and do not delay the reservation ``res``,
    each booked in ``state`` (and in ``res``)."""
    out: list[Assignment] = []
    now = snap.time
    for job in jobs:
        jv = cache.vec(job)
        if res is None:
            got = state.place(jv, prb_node_order(state), now)
        else:
            got = res.place(state, jv, now, job.walltime)
        if got is None:
            continue
        state.commit(jv, *got)
        if res is not None:
            res.book(jv, got[0], got[1], now, job.walltime)
        out.append(Assignment(job.id, now, state.names_for(*got)))
    return out


class PRBReserveDispatcher(Dispatcher):
    """PRB with a reservation for its first starving wide job (see the module doc); the
    runtimes of the starving test are learned online (a
    :class:`~wattsched.scheduler.runtime_predictor.RuntimePredictor`)."""

    name = "prb-reserve"

    def __init__(self, predictor: RuntimePredictor | None = None) -> None:
        super().__init__()
        self.predictor = predictor or RuntimePredictor()
        self.arrivals = Arrivals()
        """The recent arrivals, the value test's reference (:func:`starving`)."""

    def plan(self, snap: Snapshot) -> Plan:
        self.predictor.observe(snap)
        state = self.cache.state(snap)
        self.arrivals.observe(snap)
        out, res = heads_first(snap, self.cache, state, self.predictor.predict,
                               self.arrivals.jobs)  # fmt: skip
        first = {a.job_id for a in out}
        rest = [j for j in prb_order(snap.queued) if j.id not in first]
        out += greedy_starts(snap, self.cache, state, rest, res)
        queued = {j.id: j for j in snap.queued}
        self.predictor.started((queued[a.job_id], snap.time) for a in out)
        extra: dict[str, float | int | str] = {}
        if res is not None:  # published as a later start, as EASY's
            extra = {"reserved": res.job.id, "shadow": res.shadow}
            out += res.assignments()
        return Plan(snap.time, tuple(out), SolverStats(status="heuristic", extra=extra))


register("prb-reserve", PRBReserveDispatcher)
