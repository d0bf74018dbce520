"""PRB's online pass off its queue index (:func:`start_now`, one compiled scan per placement
tried) starts, on any cluster, the very jobs, times and nodes of the list scheduler's pass
over a scan of the queue in key order (the path it replaced)."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from wattsched.scheduler.dispatcher import prb_key, prb_order
from wattsched.scheduler.listsched import list_schedule
from wattsched.scheduler.mapper import StateCache
from wattsched.scheduler.model import (
    Job,
    Node,
    NodePowerModel,
    Placement,
    PowerCap,
    Resources,
    RunningJob,
    Snapshot,
)
from wattsched.scheduler.pass_kernels import next_candidate
from wattsched.scheduler.prb import prb_node_order
from wattsched.scheduler.prb_pass import start_now
from wattsched.scheduler.queueindex import QueueIndex

POWER = NodePowerModel(idle_w=50, core_w=10, first_core_w=30, gpu_w=100)


def _job(data: st.DataObject, n: int) -> Job:
    return Job(
        str(n),
        submit=data.draw(st.integers(0, 5)),
        walltime=data.draw(st.sampled_from([60, 600, 3600])),
        units=data.draw(st.integers(1, 5)),
        unit=Resources(
            cores=data.draw(st.integers(1, 4)),
            mem_mb=data.draw(st.sampled_from([0, 1000, 4000])),
            gpus=data.draw(st.sampled_from([0, 0, 1])),
        ),
        unit_power_w=data.draw(st.sampled_from([None, 25.0])),
        held=data.draw(st.booleans()) and data.draw(st.booleans()),
        placement=data.draw(st.sampled_from(list(Placement))),
        exclusive=data.draw(st.sampled_from([False, False, True])),
    )


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_start_now_is_the_list_schedulers_pass_over_the_queue(data: Any) -> None:
    nodes = tuple(
        Node(
            f"n{i}",
            Resources(cores=data.draw(st.sampled_from([4, 8])), mem_mb=8000, gpus=i % 2),
            POWER,
        )
        for i in range(data.draw(st.integers(1, 5)))
    )
    cap = data.draw(st.sampled_from([None, 300.0, 600.0, 1200.0]))
    jobs = [_job(data, n) for n in range(data.draw(st.integers(0, 40)))]
    # Some jobs run already (one core of one node each), the rest wait.
    running = tuple(
        RunningJob(Job(f"r{i}", 0, 600, 1, Resources(cores=k)), 0, (nodes[i].name,), 600)
        for i, k in enumerate(data.draw(st.lists(st.integers(1, 4), max_size=len(nodes))))
    )
    snap = Snapshot(
        10,
        nodes,
        running,
        tuple(jobs),
        PowerCap.unlimited() if cap is None else PowerCap.constant(cap),
    )
    index = QueueIndex(prb_key)
    index.sync(snap.queued, [])
    cache = StateCache()
    state = cache.state(snap)
    usable = state.free[state.arrays.usable]
    free_max = usable.max(axis=0)
    got = start_now(state, cache, index, snap.time, free_max, node_order=prb_node_order)

    ref_cache = StateCache()
    ref_state = ref_cache.state(snap)
    want = list_schedule(
        ref_state,
        ref_cache,
        prb_order(snap.queued),
        snap.time,
        {},
        node_order=prb_node_order,
        full=False,
    ).assignments
    assert got == want
    assert state.free_total_l == ref_state.free_total_l
    assert (state.free == ref_state.free).all()


def test_next_candidate_skips_failed_shapes_and_totals_over_the_free() -> None:
    totals = np.array([[4, 0, 0, 0], [1, 0, 0, 0], [2, 100, 0, 0], [2, 0, 0, 0]], np.int64)
    shapes = np.array([0, 1, 2, 1], np.int64)
    cand = np.array([0, 1, 2, 3], np.int64)
    failed = np.zeros(3, np.bool_)
    assert next_candidate(cand, totals, shapes, failed, 0, 3, 50, 0, 0) == 1
    failed[1] = True
    assert next_candidate(cand, totals, shapes, failed, 0, 3, 50, 0, 0) == -1
    assert next_candidate(cand, totals, shapes, failed, 0, 3, 100, 0, 0) == 2
    assert next_candidate(cand, totals, shapes, failed, 0, 4, 0, 0, 0) == 0
    assert next_candidate(cand, totals, shapes, failed, 1, 4, 0, 0, 0) == -1
