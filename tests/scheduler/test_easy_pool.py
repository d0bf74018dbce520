"""EASY's exact pool pass (``scheduler/easy_pool.py``, ``pool_kernels.easy_pool``) against
EASY's general path (``exact_pool=False``), which it replaces where every unit is one whole
node, there is no cap and no exclusive job.

Random replays (whole-node clusters with nodes off, and ones where the pool is not exact:
shared nodes, exclusive and packed jobs, caps, nodes of two sizes) check every plan, and the
reservation each plan keeps for the next cycle (shadow time, spare per node, spare power, the
head's nodes), bit for bit; the running book's node ends against the running jobs.
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wattsched.connectors.simulated import SimulatedCluster
from wattsched.daemon.replay import replay
from wattsched.scheduler.dispatcher import Dispatcher
from wattsched.scheduler.easy import EASYDispatcher
from wattsched.scheduler.easy_pool import whole_kind
from wattsched.scheduler.easy_reserve import Reservation
from wattsched.scheduler.model import (
    Job,
    Node,
    NodePowerModel,
    Placement,
    Plan,
    PowerCap,
    PowerState,
    Resources,
    RunningJob,
    Snapshot,
)
from wattsched.scheduler.running_book import NO_END


def _res(extra: object) -> object:
    """A memo's reservation as plain values (None, or the head and its figures)."""
    if not isinstance(extra, tuple):
        return extra
    head, res = extra
    if not isinstance(res, Reservation):
        return (head, res)
    return (head, res.shadow, res.spare.tolist(), res.power_spare, res.nodes, res.idx.tolist())


class Both(Dispatcher):
    """EASY with and without the exact pool pass; records every cycle where they differ."""

    def __init__(self, full_plan: bool) -> None:
        super().__init__()
        self.fast = EASYDispatcher(full_plan=full_plan)
        self.slow = EASYDispatcher(full_plan=full_plan, exact_pool=False)
        self.diffs: list[tuple[object, object]] = []
        self.pooled = 0
        self.reserved = 0
        self.wrong_ends: list[tuple[int, int, int]] = []
        run = self.fast._pool.run

        def counted(*a: object) -> object:
            got = run(*a)  # type: ignore[arg-type]
            self.pooled += got is not None
            return got

        self.fast._pool.run = counted  # type: ignore[method-assign]

    def plan(self, snap: Snapshot) -> Plan:
        got = self.fast.plan(snap)
        want = self.slow.plan(snap)
        if got.assignments != want.assignments:
            self.diffs.append((got, want))
        a, b = self.fast._memo, self.slow._memo
        assert a is not None and b is not None
        if _res(a.extra) != _res(b.extra):
            self.diffs.append((_res(a.extra), _res(b.extra)))
        self.reserved += any(x.start > snap.time for x in got.assignments)
        self._check_ends(snap)
        return got

    def _check_ends(self, snap: Snapshot) -> None:
        """Each node with one running unit: the book's end is that job's end estimate."""
        cache = self.fast.cache
        if cache._book._ends is None:
            return
        ends = cache.node_ends()
        on: dict[str, list[int]] = {}
        for rj in snap.running:
            for name in rj.nodes:
                on.setdefault(name, []).append(rj.end_estimate)
        index = cache._arrays.index  # type: ignore[union-attr]
        for name, got in on.items():
            i = index[name]
            if len(got) == 1 and ends[i] != NO_END and ends[i] != got[0]:
                self.wrong_ends.append((i, int(ends[i]), got[0]))


@st.composite
def replays(draw: st.DrawFn) -> tuple[list[Node], list[Job], PowerCap]:
    n = draw(st.integers(1, 14))
    cores = draw(st.sampled_from([1, 1, 1, 2, 4]))
    big = draw(st.sampled_from([False] * 5 + [True]))  # one node of another size
    nodes = [
        Node(
            f"n{i}",
            Resources(cores=2 * cores if big and i == 0 else cores, mem_mb=128),
            NodePowerModel(idle_w=95, core_w=95.7),
            state=draw(st.sampled_from([PowerState.ON] * 6 + [PowerState.OFF])),
        )
        for i in range(n)
    ]
    whole = draw(st.booleans())  # only whole-node jobs (mostly exact), or any
    jobs = []
    t = 0
    for j in range(draw(st.integers(1, 40))):
        t += draw(st.integers(0, 30))
        wall = draw(st.integers(1, 300))
        c = cores if whole else draw(st.integers(1, cores))
        if cores == 4 and whole:
            c = draw(st.sampled_from([3, 4]))  # more than half the cores: still whole
        jobs.append(
            Job(
                str(j),
                t,
                wall,
                draw(st.integers(1, n)),
                Resources(cores=c, mem_mb=draw(st.sampled_from([0, 0, 64, 128]))),
                runtime=draw(st.integers(0, wall)),
                placement=draw(
                    st.sampled_from([Placement.FREE, Placement.FREE, Placement.SCATTER])
                    if whole
                    else st.sampled_from(list(Placement))
                ),
                exclusive=not whole and draw(st.sampled_from([False] * 6 + [True])),
            )
        )
    cap = draw(st.sampled_from([PowerCap.unlimited()] * 4 + [PowerCap.constant(95.0 * n + 300)]))
    return nodes, jobs, cap


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(inst=replays(), full_plan=st.booleans())
def test_the_pool_pass_plans_as_the_general_path(inst: tuple, full_plan: bool) -> None:
    nodes, jobs, cap = inst
    both = Both(full_plan)
    result = replay(SimulatedCluster(nodes, jobs, cap), both, max_cycles=10_000)
    assert both.diffs == []
    assert both.wrong_ends == []
    assert result.start_errors == 0


def test_the_comparison_takes_the_pool_pass() -> None:
    """Not vacuous: on 1-core nodes (some off) most cycles are planned by the pool pass, with
    reservations and backfills past them."""
    rng = np.random.default_rng(7)
    nodes = [
        Node(
            f"n{i}",
            Resources(cores=1, mem_mb=128),
            NodePowerModel(idle_w=95, core_w=95.7),
            state=PowerState.OFF if i % 7 == 3 else PowerState.ON,
        )
        for i in range(20)
    ]
    jobs = []
    for j in range(300):
        wall = int(rng.integers(10, 400))
        jobs.append(
            Job(
                str(j),
                3 * j,
                wall,
                int(rng.integers(1, 12)),
                Resources(cores=1),
                runtime=int(rng.integers(0, wall + 1)),
            )
        )
    for full_plan in (False, True):
        both = Both(full_plan)
        result = replay(SimulatedCluster(nodes, jobs, PowerCap.unlimited()), both)
        assert both.diffs == [] and both.wrong_ends == []
        assert both.pooled > result.cycles // 2
        assert both.reserved > 50


@st.composite
def snapshots(draw: st.DrawFn) -> Snapshot:
    """One cycle's snapshot as a real RMS may show it: running jobs past their end estimate,
    units that leave room on their node, held jobs."""
    now = 1000
    n = draw(st.integers(1, 12))
    cores = draw(st.sampled_from([1, 1, 2, 3]))
    nodes = tuple(
        Node(
            f"n{i}",
            Resources(cores=cores, mem_mb=128),
            NodePowerModel(idle_w=95, core_w=95.7),
            state=draw(st.sampled_from([PowerState.ON] * 5 + [PowerState.OFF])),
        )
        for i in range(n)
    )
    on = [i for i in range(n) if nodes[i].state is PowerState.ON]
    taken = draw(st.lists(st.sampled_from(on), unique=True) if on else st.just([]))
    running = []
    k = 0
    while taken:
        units = draw(st.integers(1, len(taken)))
        mine, taken = taken[:units], taken[units:]
        job = Job(f"r{k}", 0, 500, units, Resources(cores=draw(st.integers(1, cores))))
        start = draw(st.integers(0, now))
        end = draw(st.integers(max(start, now - 50), now + 400))  # some past due
        running.append(RunningJob(job, start, tuple(f"n{i}" for i in mine), end))
        k += 1
    queued = []
    for j in range(draw(st.integers(0, 12))):
        whole = draw(st.sampled_from([True] * 5 + [False]))
        queued.append(
            Job(
                str(j),
                draw(st.integers(0, now)),
                draw(st.integers(1, 600)),
                draw(st.integers(1, n)),
                Resources(cores=cores if whole else draw(st.integers(1, cores))),
                placement=draw(st.sampled_from([Placement.FREE, Placement.SCATTER])),
                held_by="admin" if draw(st.integers(0, 9)) == 0 else None,
            )
        )
    return Snapshot(now, nodes, tuple(running), tuple(queued), PowerCap.unlimited())


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(snap=snapshots(), full_plan=st.booleans())
def test_the_pool_pass_plans_a_snapshot_as_the_general_path(
    snap: Snapshot, full_plan: bool
) -> None:
    fast = EASYDispatcher(full_plan=full_plan)
    slow = EASYDispatcher(full_plan=full_plan, exact_pool=False)
    assert fast.plan(snap).assignments == slow.plan(snap).assignments
    a, b = fast._memo, slow._memo
    assert a is not None and b is not None
    assert _res(a.extra) == _res(b.extra)


@settings(max_examples=200, deadline=None)
@given(
    unit=st.tuples(*[st.integers(0, 5)] * 4),
    units=st.integers(1, 4),
    rule=st.sampled_from(list(Placement)),
    exclusive=st.booleans(),
    node=st.tuples(*[st.integers(0, 5)] * 4),
)
def test_a_whole_kind_fits_once_on_an_empty_node_and_never_beside_one(
    unit: tuple[int, ...], units: int, rule: Placement, exclusive: bool, node: tuple[int, ...]
) -> None:
    """The rule the pass relies on, against the counting it stands for: one unit of a whole
    kind fits on an empty node, none on a node holding a unit of any whole kind, and the rule
    gives no other count."""
    key = (unit, units, None, rule, exclusive)
    if not whole_kind(key, node):
        return
    assert not exclusive and (rule is not Placement.PACK or units == 1)
    need = [r for r in range(4) if unit[r]]
    assert need and min(node[r] // unit[r] for r in need) == 1
    for other in [(c, *unit[1:]) for c in range(node[0] // 2 + 1, node[0] + 1)]:
        left = [node[r] - other[r] for r in range(4)]  # a node holding a unit of ``other``
        assert any(left[r] < unit[r] for r in need)


WARM_THEN_REPLAY = """
from wattsched.connectors.simulated import SimulatedCluster
from wattsched.daemon.replay import replay
from wattsched.scheduler import fit_kernels, pool_kernels
from wattsched.scheduler.easy import EASYDispatcher
from wattsched.scheduler.model import Job, Node, NodePowerModel, PowerCap, Resources

fit_kernels.warm()
kernels = (pool_kernels.easy_pool, fit_kernels.book)  # book: the pass's read-only counts
loaded = [list(k.signatures) for k in kernels]
nodes = [Node(f"n{i}", Resources(cores=1, mem_mb=128), NodePowerModel(idle_w=95, core_w=95))
         for i in range(8)]
for n_jobs in (20, 200):  # short queues (rows) and long ones (the table made)
    jobs = [Job(str(j), j, 600, 1 + j % 3, Resources(cores=1), runtime=300)
            for j in range(n_jobs)]
    easy = EASYDispatcher()
    calls = []
    run = easy._pool.run
    easy._pool.run = lambda *a: calls.append(run(*a)) or calls[-1]
    replay(SimulatedCluster(nodes, jobs, PowerCap.unlimited()), easy)
    assert sum(c is not None for c in calls) > 10
print(len(loaded[0]) == 1 and [list(k.signatures) for k in kernels] == loaded)
"""


def test_warm_loads_the_pool_kernel_a_replay_uses() -> None:
    """``fit_kernels.warm()`` loads the pass with the argument types EASY passes, and the
    booking of its placements: a replay planned by it compiles nothing more."""
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-c", WARM_THEN_REPLAY], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "True", out.stderr


class Kept(EASYDispatcher):
    """EASY noting every reservation it keeps, and every pass that wrote into the array of
    one kept before."""

    def __init__(self) -> None:
        super().__init__()
        self.kept: list[np.ndarray] = []
        self.reused = 0
        self.written = 0
        run = self._pool.run

        def checked(*a: object) -> object:
            before = self._pool.spare
            got = run(*a)  # type: ignore[arg-type]
            if got is not None:  # the pass's kernel wrote its spare
                spare = self._pool.spare
                self.reused += spare is before
                self.written += any(spare is k for k in self.kept)
            return got

        self._pool.run = checked  # type: ignore[method-assign]

    def plan(self, snap: Snapshot) -> Plan:
        got = super().plan(snap)
        memo = self._memo
        extra = memo.extra if memo is not None else None
        if isinstance(extra, tuple) and isinstance(extra[1], Reservation):
            res = extra[1]
            if not any(res.spare is k for k in self.kept):
                self.kept.append(res.spare)
        return got


def test_a_kept_reservations_spare_is_not_written_by_later_passes() -> None:
    """The pass writes its spare into the same array from pass to pass until a reservation
    takes it (``PoolPass.take_spare``): no later pass writes into an array a reservation
    keeps."""
    rng = np.random.default_rng(11)
    nodes = [Node(f"n{i}", Resources(cores=1, mem_mb=128)) for i in range(12)]
    jobs = [
        Job(str(j), 5 * j, 300, int(rng.integers(1, 9)), Resources(cores=1), runtime=200)
        for j in range(200)
    ]
    easy = Kept()
    replay(SimulatedCluster(nodes, jobs, PowerCap.unlimited()), easy)
    assert len(easy.kept) > 20 and easy.reused > 20  # not vacuous: both happen
    assert easy.written == 0
