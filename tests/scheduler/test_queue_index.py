"""The queue index PRB keeps across cycles gives, every cycle, what a scan of the snapshot's
queue gives: the eligible jobs that may fit, in key order (equal keys in queue order)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from wattsched.scheduler.dispatcher import prb_key
from wattsched.scheduler.model import Job, Resources
from wattsched.scheduler.queueindex import QueueIndex


def _fitting(queued: tuple[Job, ...], free_total: list[int], free_max: list[int]) -> list[Job]:
    out = [
        j
        for j in queued
        if not j.held
        and all(a <= f for a, f in zip(j.total.as_tuple(), free_total, strict=True))
        and all(a <= f for a, f in zip(j.unit.as_tuple(), free_max, strict=True))
    ]
    return sorted(out, key=prb_key)  # stable: equal keys keep the queue's order


steps = st.lists(
    st.tuples(
        st.integers(0, 6),  # arrivals
        st.integers(0, 4),  # starts (the oldest jobs' positions, taken mod the queue)
        st.booleans(),  # hold or release one job (a new tuple with a new object)
        st.booleans(),  # reorder the queue (the index must rebuild)
        st.tuples(st.integers(0, 40), st.integers(0, 8)),  # free total cores, free max cores
    ),
    min_size=1,
    max_size=30,
)


@settings(max_examples=300, deadline=None)
@given(steps, st.data())
def test_fitting_is_a_scan_of_the_queue_in_key_order(steps: Any, data: st.DataObject) -> None:
    index = QueueIndex(prb_key)
    queue: list[Job] = []
    started: list[str] = []
    n = edits = 0
    for arrivals, starts, toggle, reorder, (total, most) in steps:
        for _ in range(arrivals):
            n += 1
            queue.append(
                Job(
                    str(n),
                    submit=data.draw(st.integers(0, 3)),  # ties, broken by demand, then id
                    walltime=data.draw(st.sampled_from([60, 600])),
                    units=data.draw(st.integers(1, 4)),
                    unit=Resources(cores=data.draw(st.integers(1, 4))),
                    ewt=data.draw(st.sampled_from([3600.0, 86400.0])),
                )
            )
        if toggle and queue:
            k = data.draw(st.integers(0, len(queue) - 1))
            queue[k] = replace(queue[k], held=not queue[k].held)
            edits += 1  # a hold or release: the connector says so (Snapshot.queue_edits)
        if reorder and len(queue) > 1:
            queue = queue[1:] + queue[:1]
        snapshot = tuple(queue)
        index.sync(snapshot, started, edits)
        got = index.fitting(np.array([total, 0, 0, 0]), np.array([most, 0, 0, 0]))
        assert [j.id for j in got] == [
            j.id for j in _fitting(snapshot, [total, 0, 0, 0], [most, 0, 0, 0])
        ]
        assert len(index) == len(queue)
        # The plan starts some of the jobs that may fit: they leave the next snapshot.
        started = [j.id for j in got[:starts]]
        queue = [j for j in queue if j.id not in set(started)]


def test_ranks_renumbered_when_arrivals_keep_splitting_one_gap() -> None:
    """Each arrival sorts just after the 100th job (rank 99; a submit time between its and the
    previous arrival's), halving one gap between ranks until no float lies in it (about 45
    halvings at that magnitude): the ranks are renumbered, and the order stays the scan's."""
    index = QueueIndex(prb_key)
    queue = [Job(str(k + 1), k, 60, 1, Resources(cores=1)) for k in range(100)]
    queue.append(Job("101", 10**6, 60, 1, Resources(cores=1)))
    index.sync(tuple(queue), [])
    for k in range(80):
        queue.append(Job(str(k + 102), 100_000 - k, 60, 1, Resources(cores=1)))
        index.sync(tuple(queue), [])
    assert index._rank.max() > 100  # renumbered: else the last job keeps its rank, 100
    free = np.array([10**6, 0, 0, 0])
    got = [j.id for j in index.fitting(free, free)]
    assert got == [j.id for j in _fitting(tuple(queue), [10**6, 0, 0, 0], [10**6, 0, 0, 0])]
    assert got[99] == "100" and got[100] == "181" and got[-1] == "101"
