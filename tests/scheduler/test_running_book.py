"""The kept state of :class:`~wattsched.scheduler.mapper.StateCache` (its running jobs brought
from one snapshot to the next by the jobs that started and ended) against a state built from
scratch, over random sequences of snapshots; and :func:`left_and_appended` against its
definition."""

from __future__ import annotations

import dataclasses
import math
import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from wattsched.scheduler.mapper import ClusterState, StateCache
from wattsched.scheduler.model import (
    Job,
    Node,
    NodePowerModel,
    PowerCap,
    PowerState,
    Resources,
    RunningJob,
    Snapshot,
)
from wattsched.scheduler.running_book import NO_END, RunningBook
from wattsched.scheduler.tuple_diff import left_and_appended

PM = NodePowerModel(idle_w=10, first_core_w=5, core_w=2, transition_w=20)
PM2 = NodePowerModel(idle_w=12, first_core_w=0, core_w=3, transition_w=20)
NAMES = ("a", "b", "c", "d", "e")


def _nodes(off: frozenset[str] = frozenset(), names: tuple[str, ...] = NAMES) -> tuple[Node, ...]:
    return tuple(
        Node(
            n,
            Resources(cores=8, mem_mb=64),
            PM if i % 2 else PM2,
            state=PowerState.OFF if n in off else PowerState.ON,
        )
        for i, n in enumerate(names)
    )


def _job(rng: random.Random, k: int) -> Job:
    units = rng.randint(1, 3)
    return Job(
        str(k),
        k,
        rng.choice((50, 100, 200)),
        units,
        Resources(cores=rng.randint(1, 2), mem_mb=rng.choice((0, 4))),
        unit_power_w=rng.choice((None, 7.5)),
        exclusive=rng.random() < 0.1,
    )


def _run(rng: random.Random, job: Job, t: int, names: tuple[str, ...]) -> RunningJob:
    nodes = tuple(rng.choice(names) for _ in range(job.units))
    return RunningJob(job, t, nodes, t + job.walltime)


def _same(a: ClusterState, b: ClusterState) -> None:
    assert a.free.tolist() == b.free.tolist()
    assert a.busy_units.tolist() == b.busy_units.tolist()
    assert a.held_whole.tolist() == b.held_whole.tolist()
    assert a.exclusive_jobs == b.exclusive_jobs
    assert a.free_total_l == b.free_total_l
    assert math.isclose(a.power_w, b.power_w, rel_tol=1e-12, abs_tol=1e-9)
    assert a.arrays.usable.tolist() == b.arrays.usable.tolist()


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(5, 40))
def test_the_kept_state_equals_a_state_built_from_scratch(seed: int, steps: int) -> None:
    by_id = RunningBook._apply_by_id
    fallbacks: list[int] = []

    def counted(self: RunningBook, *args: Any) -> None:
        if self._of is not None:  # not a book's first snapshot
            fallbacks.append(1)
        by_id(self, *args)

    RunningBook._apply_by_id = counted
    try:
        _replay_snapshots(seed, steps, fallbacks)
    finally:
        RunningBook._apply_by_id = by_id


def _replay_snapshots(seed: int, steps: int, fallbacks: list[int]) -> None:
    rng = random.Random(seed)
    cache = StateCache()
    names: tuple[str, ...] = NAMES
    nodes = _nodes()
    running: list[RunningJob] = []
    k = 0
    plain = 0
    ask_ends = rng.randrange(steps)  # the node ends are kept from the first time asked
    for t in range(steps):
        move = rng.random()
        if move < 0.5:  # starts and ends: the replay's plain difference
            plain += 1
            for rj in rng.sample(running, rng.randint(0, min(3, len(running)))):
                running.remove(rj)
            for _ in range(rng.randint(0, 3)):
                k += 1
                running.append(_run(rng, _job(rng, k), t, names))
        elif move < 0.6 and running:  # a job requeued and restarted elsewhere (same id)
            i = rng.randrange(len(running))
            running[i] = _run(rng, running[i].job, t, names)
        elif move < 0.67 and running:  # the same run, a new object (same start and nodes)
            i = rng.randrange(len(running))
            later = running[i].end_estimate + rng.choice((0, 0, 30))  # walltime extended
            running[i] = dataclasses.replace(running[i], end_estimate=later)
        elif move < 0.74:  # listed in another order
            rng.shuffle(running)
        elif move < 0.81:  # a real RMS: every object built anew (some walltimes extended)
            running = [
                dataclasses.replace(rj, end_estimate=rj.end_estimate + rng.choice((0, 0, 30)))
                for rj in running
            ]
        elif move < 0.88:  # a node switched (restated arrays)
            nodes = _nodes(frozenset(rng.sample(names, rng.randint(0, 2))), names)
        elif move < 0.92:  # the node set renamed: the cache starts over
            names = tuple(f"{n}{t}" for n in NAMES)
            nodes = _nodes(names=names)
            running = [_run(rng, rj.job, rj.start, names) for rj in running]
        elif running:  # a job ended and was listed again (the same id twice is not allowed)
            running.append(running.pop(0))
        snap = Snapshot(t, nodes, tuple(running), (), PowerCap.unlimited())
        got = cache.state(snap)
        want = StateCache().state(snap)
        _same(got, want)
        placed = cache.running_placements()
        assert set(placed) == {rj.job.id for rj in running}
        if t >= ask_ends:
            _check_node_ends(cache, running)
    assert len(fallbacks) <= steps - plain  # the plain differences were applied as such


def _check_node_ends(cache: StateCache, running: list[RunningJob]) -> None:
    """A node holding one unit has its job's end estimate, or none known (EASY's pool pass
    then plans by the general path); a node with no unit is not looked at."""
    ends = cache.node_ends()
    units: dict[str, list[int]] = {}
    for rj in running:
        for name in rj.nodes:
            units.setdefault(name, []).append(rj.end_estimate)
    index = cache._arrays.index  # type: ignore[union-attr]
    for name, got in units.items():
        e = int(ends[index[name]])
        assert len(got) > 1 or e in (NO_END, got[0])


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(0, 30), unique=True, max_size=20),
    st.data(),
)
def test_left_and_appended_describes_the_new_tuple(old_ids: list[int], data: st.DataObject) -> None:
    objs = {i: object() for i in range(60)}
    old = tuple(objs[i] for i in old_ids)
    kept = [o for o in old if data.draw(st.booleans())]
    if data.draw(st.booleans()):
        kept = data.draw(st.permutations(kept))
    extra = data.draw(st.lists(st.integers(31, 59), unique=True, max_size=5))
    new = tuple(kept) + tuple(objs[i] for i in extra)
    most = data.draw(st.integers(0, 25))
    got = left_and_appended(old, new, most)
    if got is None:
        return
    left, appended = got
    assert len(left) <= most
    gone = {id(o) for o in left}
    assert [o for o in old if id(o) not in gone] + list(appended) == list(new)
    assert len(gone) == len(left)


def test_node_ends_follow_objects_made_anew() -> None:
    """A real RMS builds every running job anew at each snapshot (the book goes by job id):
    an end estimate moved (a walltime extended) is the node's end at once."""
    names = tuple(f"n{i}" for i in range(16))
    nodes = tuple(Node(n, Resources(cores=1, mem_mb=64), PM) for n in names)
    jobs = [Job(str(k), 0, 100, 1, Resources(cores=1)) for k in range(12)]
    running = tuple(RunningJob(j, 0, (names[k],), 100) for k, j in enumerate(jobs))
    cache = StateCache()
    cache.state(Snapshot(0, nodes, running, (), PowerCap.unlimited()))
    assert cache.node_ends()[:12].tolist() == [100] * 12
    anew = tuple(dataclasses.replace(rj, end_estimate=100 + k) for k, rj in enumerate(running))
    cache.state(Snapshot(1, nodes, anew, (), PowerCap.unlimited()))
    assert cache.node_ends()[:12].tolist() == [100 + k for k in range(12)]
    assert (cache.node_ends()[12:] == NO_END).all()
