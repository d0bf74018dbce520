"""EASY's kept queue (:class:`~wattsched.scheduler.easy_queue.EasyQueue`) against the submit
order and rows made afresh, over random sequences of queues; the backfill's compiled scan
(:func:`~wattsched.scheduler.fit_kernels.next_try`) against the Python loop it replaced."""

from __future__ import annotations

import bisect
import dataclasses
import random
import subprocess
import sys

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from wattsched.scheduler.dispatcher import submit_order
from wattsched.scheduler.easy_queue import EasyQueue, next_try_py
from wattsched.scheduler.fit_kernels import first_pooled, next_try
from wattsched.scheduler.model import Job, Placement, Resources


def _job(rng: random.Random, k: int, submit: int) -> Job:
    return Job(
        str(k),
        submit,
        rng.choice((60, 600)),
        rng.randint(1, 2),
        Resources(cores=rng.randint(1, 2)),
        unit_power_w=rng.choice((None, 5.0)),
        placement=rng.choice((Placement.FREE, Placement.SCATTER)),
        exclusive=rng.random() < 0.2,
        held=rng.random() < 0.1,
    )


def _kind_key(j: Job) -> tuple[object, ...]:
    return (j.unit.as_tuple(), j.units, j.unit_power_w, j.placement, j.exclusive)


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 40), st.sampled_from((3, 60)))
def test_the_kept_queue_is_the_submit_order_made_afresh(seed: int, steps: int, size: int) -> None:
    rng = random.Random(seed)
    q = EasyQueue()
    queue: list[Job] = []
    k = t = 0
    kinds: dict[int, tuple[object, ...]] = {}
    for _ in range(steps):
        move = rng.random()
        if rng.random() < 0.2 and q.jobs:  # positions noted whatever happens next
            q.started = rng.sample(range(len(q.jobs)), min(2, len(q.jobs)))
        if move < 0.6:  # jobs started (anywhere) and arrived (after the others)
            for j in rng.sample(queue, rng.randint(0, min(3, len(queue)))):
                queue.remove(j)
                # As EASY notes its starts (their positions in the kept order), and sometimes
                # a start the cluster refused (noted, yet still queued).
                q.started += [p for p, x in enumerate(q.jobs) if x is j]
            if q.jobs and rng.random() < 0.1:
                q.started.append(rng.randrange(len(q.jobs)))
            t += rng.randint(0, 2)
            for _ in range(rng.randint(0, size)):
                k += 1
                queue.append(_job(rng, k, t))
        elif move < 0.7 and queue:  # held or released in place
            i = rng.randrange(len(queue))
            queue[i] = dataclasses.replace(queue[i], held=not queue[i].held)
        elif move < 0.8:  # a job listed late but submitted early (a requeue)
            k += 1
            queue.append(_job(rng, k, rng.randint(0, t)))
        elif move < 0.9:  # every object anew (a real RMS)
            queue = [dataclasses.replace(j) for j in queue]
        else:  # listed in another order
            rng.shuffle(queue)
        snap = tuple(queue)
        q.sync(snap)
        want = submit_order(snap)
        assert q.jobs == want
        assert [a is b for a, b in zip(q.jobs, want, strict=True)] == [True] * len(want)
        assert q.ids == [j.id for j in want]
        assert q.table.shape == (len(want), 6)
        for row, j in zip(q.table.tolist(), want, strict=True):
            assert row[:4] == [a * j.units for a in j.unit.as_tuple()]
            assert row[4] == j.walltime
            assert kinds.setdefault(row[5], _kind_key(j)) == _kind_key(j)  # one key per id
    assert len(set(kinds.values())) == len(kinds)  # one id per key


def test_noted_starts_are_checked_against_the_next_queue() -> None:
    # EASY notes the positions of the jobs it started; the next queue is taken as the last
    # one less those only when it is: a start the cluster refused (the job still queued), a
    # job gone that was not noted, or a noted position that is not the job the tuple had
    # there all fall back to the difference by identity, with the same result.
    jobs = [Job(str(i), i, 60, 1, Resources(cores=1)) for i in range(60)]
    late = [Job(f"n{i}", 100 + i, 60, 1, Resources(cores=1)) for i in range(3)]
    cases = [
        ([5], (*jobs[:5], *jobs[6:], late[0])),  # as noted
        ([5, 9], (*jobs[:5], *jobs[6:9], *jobs[10:], *late)),  # as noted, several
        ([5], (*jobs, late[0])),  # refused: still queued
        ([5], (*jobs[:5], *jobs[7:], late[0])),  # one more gone than noted
        ([5, 6], (*jobs[:5], *jobs[7:])),  # noted, nothing new
        ([59], (*jobs[:59], *late)),  # the last one
    ]
    for started, queued in cases:
        q = EasyQueue()
        q.sync(tuple(jobs))
        q.started = list(started)
        q.sync(queued)
        want = submit_order(queued)
        assert q.jobs == want and q.ids == [j.id for j in want]
        assert q.table.tolist() == EasyQueue()._rows(want)
        assert q.started == []


def test_the_memo_keeps_the_last_ids() -> None:
    # EASY's memo keeps the ids list of the last cycle: a later sync must not change it.
    jobs = [Job(str(i), i, 60, 1, Resources(cores=1)) for i in range(60)]
    q = EasyQueue()
    q.sync(tuple(jobs))
    kept = q.ids
    copy = list(kept)
    q.sync((*jobs[1:], Job("x", 99, 60, 1, Resources(cores=1))))
    assert kept == copy and q.ids != copy


def _scan_py(
    lo: int,
    table: list[list[int]],
    free: list[int],
    failed: set[tuple[int, int, float]],
    now: int,
    shadow: int | None,
    caps: list[tuple[int, float]],
) -> int:
    """The backfill loop's skips as they were: pooled totals, then the failed kinds (keyed by
    the lowest cap over the job's run, as ``PowerCap.min_over``)."""
    times = [c for c, _ in caps]
    for p in range(lo, len(table)):
        row = table[p]
        if any(row[r] > free[r] for r in range(4)):
            continue
        short = shadow is None or now + row[4] <= shadow
        i = bisect.bisect_right(times, now)
        j = bisect.bisect_left(times, now + row[4], lo=i)
        low = min([caps[i - 1][1] if i else caps[0][1], *(w for _, w in caps[i:j])])
        if (row[5], short, low) not in failed:
            return p
    return len(table)


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_next_try_skips_as_the_python_loop(data: st.DataObject) -> None:
    n = data.draw(st.integers(0, 25))
    kinds = data.draw(st.integers(1, 4))
    table = [
        [
            *data.draw(st.lists(st.integers(0, 4), min_size=4, max_size=4)),
            data.draw(st.integers(1, 50)),
            data.draw(st.integers(0, kinds - 1)),
        ]
        for _ in range(n)
    ]
    free = data.draw(st.lists(st.integers(0, 5), min_size=4, max_size=4))
    now = 10
    shadow = data.draw(st.one_of(st.none(), st.integers(0, 70)))
    cap_times = sorted(set(data.draw(st.lists(st.integers(0, 70), max_size=4))) | {0})
    caps = [(c, float(data.draw(st.integers(1, 3)))) for c in cap_times]
    after = np.array([c for c in cap_times if c > now], dtype=np.int64)
    stride = len(after) + 1
    arr = np.array(table, dtype=np.int64).reshape(n, 6)
    params = np.array([*free, now, -1 if shadow is None else shadow, shadow is not None, 1])
    failed = np.zeros(2 * kinds * stride, dtype=np.bool_)
    failed_py: set[tuple[int, int, float]] = set()
    lo = 0
    while True:  # fail every job the scan offers, one after another
        p, key = next_try(lo, arr, params.astype(np.int64), failed, after)
        figures = (now, -1 if shadow is None else shadow, shadow is not None, True)
        assert next_try_py(lo, table, free, figures, failed, after.tolist()) == (p, key)
        want = _scan_py(lo, table, free, failed_py, now, shadow, caps)
        # The compiled key is finer (cap steps counted, not the lowest cap): it may offer a job
        # the loop skipped, never skip one the loop offered; without cap steps ahead, the same.
        assert p <= want
        if not len(after):
            assert p == want
        if p == n:
            break
        row = table[p]
        short = shadow is None or now + row[4] <= shadow
        i = bisect.bisect_right(cap_times, now)
        j = bisect.bisect_left(cap_times, now + row[4], lo=i)
        assert key == (row[5] * 2 + short) * stride + (j - i)
        failed[key] = True
        failed_py.add((row[5], short, min([caps[i - 1][1], *(w for _, w in caps[i:j])])))
        lo = p + 1
    first = next((p for p in range(n) if all(table[p][r] <= free[r] for r in range(4))), n)
    assert first_pooled(0, arr[:, :4], np.array(free, dtype=np.int64)) == first
    q = EasyQueue()
    q.rows = table  # both ways of EasyQueue.first_fitting: over the rows, then the table
    assert q.first_fitting(0, free) == first
    assert q.table.tolist() == table
    assert q.first_fitting(0, free) == first


WARM_THEN_REPLAY = """
from wattsched.connectors.simulated import SimulatedCluster
from wattsched.daemon.replay import replay
from wattsched.scheduler import dispatcher as registry
from wattsched.scheduler import fit_kernels as fk
from wattsched.scheduler.model import Job, Node, NodePowerModel, PowerCap, Resources

fk.warm()
kernels = (fk.first_pooled, fk.next_try)
loaded = {k: list(k.signatures) for k in kernels}
nodes = [Node(f"n{i}", Resources(cores=4, mem_mb=8000), NodePowerModel(idle_w=20, core_w=5))
         for i in range(3)]
jobs = [Job(str(j), 10 * j, 600, 1 + j % 2, Resources(cores=1 + j % 4), runtime=300)
        for j in range(80)]
replay(SimulatedCluster(nodes, jobs, PowerCap.unlimited()), registry.create("easy"))
print(all(list(k.signatures) == s for k, s in loaded.items()))
"""


def test_warm_loads_the_scan_kernels_an_easy_replay_uses() -> None:
    out = subprocess.run(
        [sys.executable, "-c", WARM_THEN_REPLAY], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "True", out.stderr
