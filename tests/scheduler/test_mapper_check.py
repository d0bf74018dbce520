"""``ClusterState.check``: the last look at a planned start before it is carried out."""

from __future__ import annotations

import numpy as np
import pytest

from wattsched.scheduler.mapper import StateCache
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

PM = NodePowerModel(idle_w=10, first_core_w=5, core_w=2, transition_w=20)


def snapshot(cap: float = 1000.0) -> Snapshot:
    nodes = (
        Node("a", Resources(cores=4), PM),
        Node("b", Resources(cores=4), PM),
        Node("c", Resources(cores=4), PM, available=False),  # drained
        Node("d", Resources(cores=4), PM, state=PowerState.OFF),
    )
    busy = Job("r", 0, 100, 1, Resources(cores=3))
    return Snapshot(10, nodes, (RunningJob(busy, 0, ("a",), 100),), (), PowerCap.constant(cap))


@pytest.mark.parametrize(
    ("nodes", "cap", "why"),
    [
        (["b", "b"], 1000.0, ""),  # two 2-core units fit on the empty node
        (["a", "b"], 1000.0, "a node lacks room"),  # a has 1 core left (the running job)
        (["b"], 1000.0, "wrong number of units"),  # one node for two units
        (["b", "c"], 1000.0, "a node is not usable"),  # c is drained
        (["b", "d"], 1000.0, "a node is not usable"),  # d is off
        # static 10+10+10+0 = 30, a busy: 5 + 3*2 = 11 -> 41; the job adds 5 + 4*2 = 13 -> 54
        (["b", "b"], 53.0, "over the power cap"),
        (["b", "b"], 54.0, ""),
    ],
)
def test_check(nodes: list[str], cap: float, why: str) -> None:
    snap = snapshot(cap)
    cache = StateCache()
    state = cache.state(snap)
    job = Job("j", 0, 50, 2, Resources(cores=2))
    jv = cache.vec(job)
    names = state.arrays.index
    counts: dict[int, int] = {}
    for n in nodes:
        counts[names[n]] = counts.get(names[n], 0) + 1
    idx = np.array(list(counts), dtype=np.int64)
    cnt = np.array(list(counts.values()), dtype=np.int64)
    assert state.check(jv, idx, cnt, snap.time) == why
