"""PRB's compiled queue scans against the numpy formulas they replaced (hypothesis), and
``pass_kernels.warm()`` loading every signature a PRB replay uses."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from wattsched.scheduler.node_arrays import BoolArray, FloatArray, IntArray
from wattsched.scheduler.pass_kernels import efficiency_load_order, fitting_ranked, usable_max


def _old_candidates(
    alive: BoolArray,
    totals: IntArray,
    units: IntArray,
    rank: FloatArray,
    n: int,
    free_total: IntArray,
    free_max: IntArray,
) -> IntArray:
    # QueueIndex.candidates before the kernel (numpy filter, then a stable argsort of ranks).
    ok = alive[:n] & (totals[:n, 0] <= free_total[0]) & (units[:n, 0] <= free_max[0])
    cand = np.flatnonzero(ok)
    if cand.size:
        full = (totals[cand] <= free_total).all(axis=1) & (units[cand] <= free_max).all(axis=1)
        cand = cand[full]
    if cand.size > 1:
        cand = cand[np.argsort(rank[cand], kind="stable")]
    return cand


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_fitting_ranked_is_the_numpy_filter_in_rank_order(data: Any) -> None:
    size = data.draw(st.integers(0, 40))
    n = data.draw(st.integers(0, size))
    small = st.integers(0, 6)
    units = np.array(
        [[data.draw(small) for _ in range(4)] for _ in range(size)], dtype=np.int64
    ).reshape(size, 4)
    totals = units * np.array([data.draw(st.integers(1, 4)) for _ in range(size)]).reshape(-1, 1)
    alive = np.array([data.draw(st.booleans()) for _ in range(size)], dtype=np.bool_)
    # Few distinct ranks, so ties (kept in index order) occur.
    rank = np.array([float(data.draw(st.integers(-3, 3))) / 2 for _ in range(size)])
    free_total = np.array([data.draw(st.integers(0, 20)) for _ in range(4)], dtype=np.int64)
    free_max = np.array([data.draw(small) for _ in range(4)], dtype=np.int64)
    out = np.full(size, -1, dtype=np.int64)
    k = fitting_ranked(alive, totals, units, rank, n, free_total, free_max, out)
    want = _old_candidates(alive, totals, units, rank, n, free_total, free_max)
    assert out[:k].tolist() == want.tolist()


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_usable_max_is_the_numpy_max_over_usable_nodes(data: Any) -> None:
    n = data.draw(st.integers(0, 12))
    free = np.array(
        [[data.draw(st.integers(-2, 9)) for _ in range(4)] for _ in range(n)], dtype=np.int64
    ).reshape(n, 4)
    usable = np.array([data.draw(st.booleans()) for _ in range(n)], dtype=np.bool_)
    out = np.full(4, 77, dtype=np.int64)
    usable_max(free, usable, out)
    rows = free[usable]
    want = rows.max(axis=0) if len(rows) else np.zeros(4, dtype=np.int64)
    assert out.tolist() == want.tolist()


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_efficiency_load_order_is_the_lexsort_from_any_last_order(data: Any) -> None:
    n = data.draw(st.integers(0, 14))
    capacity = np.array(
        [[data.draw(st.sampled_from([0, 1, 3, 4, 32]))] * 4 for _ in range(n)], dtype=np.int64
    ).reshape(n, 4)
    free = np.array(
        [[data.draw(st.integers(-1, int(c[0]) + 1))] * 4 for c in capacity], dtype=np.int64
    ).reshape(n, 4)
    # Few distinct efficiencies and loads, so ties (kept in index order) occur; -0.0 too.
    efficiency = np.array([data.draw(st.sampled_from([0.0, -0.0, 0.5, 2.0])) for _ in range(n)])
    order = np.array(data.draw(st.permutations(range(n))), dtype=np.int64)
    free_frac = free[:, 0] / np.maximum(capacity[:, 0], 1)
    want = np.lexsort((np.arange(n), free_frac, -efficiency))  # ClusterState's formula
    efficiency_load_order(free, capacity, efficiency, order)
    assert order.tolist() == want.tolist()


WARM_THEN_PRB = """
from wattsched.connectors.simulated import SimulatedCluster
from wattsched.daemon.replay import replay
from wattsched.scheduler import dispatcher as registry
from wattsched.scheduler import pass_kernels as pk
from wattsched.scheduler.model import Job, Node, NodePowerModel, PowerCap, Resources

pk.warm()
kernels = (pk.next_candidate, pk.fitting_ranked, pk.usable_max, pk.efficiency_load_order)
loaded = {k: list(k.signatures) for k in kernels}
nodes = [Node(f"n{i}", Resources(cores=4, mem_mb=8000), NodePowerModel(idle_w=20, core_w=5))
         for i in range(3)]
jobs = [Job(str(j), 10 * j, 600, 1 + j % 2, Resources(cores=1 + j % 4), runtime=300)
        for j in range(20)]
replay(SimulatedCluster(nodes, jobs, PowerCap.unlimited()), registry.create("prb"))
print(all(list(k.signatures) == s and s for k, s in loaded.items()))
"""


def test_warm_loads_the_pass_kernels_a_prb_replay_uses() -> None:
    out = subprocess.run(
        [sys.executable, "-c", WARM_THEN_PRB], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "True", out.stderr
