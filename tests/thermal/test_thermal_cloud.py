"""The Cloud setting's search (:mod:`cloud_search`) and the reach programme (:mod:`reach`):
optima known by enumeration, valid work caps, and the validator on every Cloud schedule."""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from wattsched.scheduler.thermal import cloud_search, milp_cp, reach
from wattsched.scheduler.thermal.heuristics import coolest, spatio_temporal, unrunnable_jobs
from wattsched.scheduler.thermal.instance import ThermalInstance, check_schedule, makespan

Q = 10


def _one_node_cloud_optimum(inst: ThermalInstance, limit: int = 30) -> int:
    """The shortest Cloud schedule of a one-node instance, by enumerating every step's shares
    (``a_j`` in tenths, ``sum a_j <= 10``), keeping per amount of work left the coolest
    outlet (on one node a cooler outlet allows whatever a hotter one does)."""
    assert inst.n_nodes == 1
    gain = inst.r + float(inst.d[0, 0])
    cap = inst.t_thresh + 1e-6
    shares = [a for a in itertools.product(range(Q + 1), repeat=inst.n_jobs) if 0 < sum(a) <= Q]
    frontier = {tuple(int(w) * Q for w in inst.work): inst.t_sup}
    for steps in range(1, limit + 1):
        nxt: dict[tuple[int, ...], float] = {}
        for left, t_out in frontier.items():
            for a in [(0,) * inst.n_jobs, *shares]:
                if any(x > lft for x, lft in zip(a, left, strict=True)):
                    continue
                power = 0.0 if not any(a) else inst.p_idle + float(np.dot(a, inst.power)) / Q
                target = inst.t_sup + gain * power
                t2 = target + (t_out - target) * inst.f
                if t2 > cap:
                    continue
                key = tuple(lft - x for lft, x in zip(left, a, strict=True))
                if not any(key):
                    return steps
                if t2 < nxt.get(key, np.inf):
                    nxt[key] = t2
        frontier = nxt
    raise AssertionError("no schedule within the limit")


def test_cloud_search_finds_and_proves_an_enumerated_optimum() -> None:
    """One node, a hot and a cool job: sharing the node's steps beats running them apart."""
    inst = ThermalInstance(np.array([3, 2]), np.array([150.0, 50.0]), 1)
    best = _one_node_cloud_optimum(inst)
    hpc = milp_cp.search(inst, coolest(inst), time_limit_s=10, workers=2)
    assert hpc.alloc is not None and hpc.makespan is not None
    res = cloud_search.search(inst, hpc.alloc, time_limit_s=20, workers=2)
    assert res.alloc is not None and check_schedule(inst, res.alloc, Q, hpc=False) == []
    assert res.makespan == best <= hpc.makespan
    assert res.status == "optimal" and res.bound == best


def _brute_min_span_cloud(inst: ThermalInstance) -> int:
    """The shortest share sequence (first and last step with work) of a 1-job 1-node
    instance, every sequence with the right work checked by ``check_schedule``."""
    w = int(inst.work[0]) * Q
    for length in range(1, 8):
        for seq in itertools.product(range(Q + 1), repeat=length):
            if seq[0] == 0 or seq[-1] == 0 or sum(seq) != w:
                continue
            alloc = np.array(seq, dtype=np.int64).reshape(1, 1, -1)
            if check_schedule(inst, alloc, Q, hpc=False) == []:
                return length
    raise AssertionError("no sequence")


@settings(max_examples=15, deadline=None)
@given(w=st.integers(1, 2), p=st.integers(40, 150), t_thresh=st.floats(75, 110))
def test_cloud_min_spans_are_the_enumerated_shortest_spans(w: int, p: int, t_thresh: float) -> None:
    inst = ThermalInstance(np.array([w]), np.array([float(p)]), 1, t_thresh=t_thresh)
    assume(not unrunnable_jobs(inst))
    assert milp_cp.min_spans(inst, Q) == [_brute_min_span_cloud(inst)]
    assert milp_cp.min_spans(inst, Q) <= milp_cp.min_spans(inst)


def _paper_like(seed: int, n_jobs: int, n_nodes: int) -> ThermalInstance:
    rng = np.random.default_rng(seed)
    return ThermalInstance(
        rng.integers(1, 11, n_jobs), rng.integers(50, 121, n_jobs).astype(float), n_nodes
    )


instances = st.builds(
    _paper_like, st.integers(0, 10_000), st.integers(2, 12), st.sampled_from([2, 3, 6])
)


@settings(max_examples=40, deadline=None)
@given(inst=instances)
def test_work_caps_hold_for_every_valid_schedule(inst: ThermalInstance) -> None:
    """Per node and power level, the work of the hotter jobs fits in what a cold node does in
    the makespan at that level (HPC schedules, also read as Cloud ones in tenths)."""
    assume(not unrunnable_jobs(inst))
    for sched in (coolest(inst), spatio_temporal(inst)):
        span = makespan(sched)
        node = sched.sum(axis=2).argmax(axis=0)
        for q in (1, Q):
            for p in set(inst.power.tolist()):
                hot = inst.power >= p
                total = int(inst.work[hot].sum())
                cap = reach.max_work(inst, p, q, span, q * total)[span]
                for i in range(inst.n_nodes):
                    assert q * int(inst.work[hot & (node == i)].sum()) <= cap


def test_cloud_search_on_paper_like_instances_is_valid_and_no_worse_than_hpc() -> None:
    for seed in (1, 7):
        inst = _paper_like(seed, 8, 3)
        assert not unrunnable_jobs(inst)
        hpc = milp_cp.search(inst, spatio_temporal(inst), time_limit_s=3, workers=2)
        assert hpc.alloc is not None and hpc.makespan is not None
        res = cloud_search.search(inst, hpc.alloc, time_limit_s=5, workers=2, sub_limit_s=1.0)
        assert res.alloc is not None and res.makespan is not None
        assert check_schedule(inst, res.alloc, Q, hpc=False) == []
        assert res.makespan <= hpc.makespan
        assert res.bound is not None and res.bound <= res.makespan
