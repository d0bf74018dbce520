"""Several reservations at once (``reservation.heads_first(limit=...)``, the hybrid's
``reservations``): each starving wide job in PRB's order gets one, computed with the earlier
ones holding their nodes, and a start now must delay none of them."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from wattsched.scheduler.hybrid.dispatcher import HybridDispatcher
from wattsched.scheduler.hybrid.search_params import SearchParamError
from wattsched.scheduler.mapper import StateCache
from wattsched.scheduler.model import Job, Node, PowerCap, Resources, RunningJob, Snapshot
from wattsched.scheduler.reservation import heads_first

WHOLE = Resources(cores=16)
NODES = tuple(Node(f"n{k}", WHOLE) for k in range(1, 5))


def _wide(jid: str) -> Job:
    """Two whole nodes, the urgent queue, queued since 600: starving at 4,200."""
    return Job(id=jid, submit=600, walltime=3600, units=2, unit=WHOLE, queue="reservation",
               ewt=1800, runtime=60)  # fmt: skip


def _one(k: int) -> Job:
    return Job(id=f"p{k}", submit=100 * k, walltime=1000, units=1, unit=WHOLE,
               queue="parallel", ewt=21_600, runtime=1000)  # fmt: skip


def _snapshot(idle_n4: bool = False) -> Snapshot:
    """At 4,200: n1 .. n4 busy until 5,000, 5,100, 5,600 and 6,000 (n4 idle if asked); two
    starving wide jobs, w1 first in PRB's order (it came first), and four one-node jobs."""
    ends = (5_000, 5_100, 5_600, 6_000)
    running = tuple(RunningJob(_one(k), 4_100, (f"n{k + 1}",), ends[k])
                    for k in range(4 - idle_n4))  # fmt: skip
    w1, w2 = replace(_wide("w1"), submit=599), _wide("w2")
    queued = (w1, w2, *(_one(k) for k in range(10, 14)))
    return Snapshot(4_200, NODES, running, queued, PowerCap.constant(10_000.0))


def _heads(limit: int, idle_n4: bool = False):  # type: ignore[no-untyped-def]
    snap = _snapshot(idle_n4)
    cache = StateCache()
    state = cache.state(snap)
    out, found = heads_first(snap, cache, state, lambda j: j.walltime, limit=limit)
    return snap, cache, state, out, found


def test_each_starving_job_gets_its_own_reservation() -> None:
    _, _, _, out, one = _heads(limit=1)
    assert out == [] and one is not None and [r.job.id for r in one.items] == ["w1"]
    assert one.shadow == 5_100 and sorted(one.items[0].nodes.tolist()) == [0, 1]
    _, _, _, out, two = _heads(limit=2)
    assert out == [] and two is not None and [r.job.id for r in two.items] == ["w1", "w2"]
    # w2 never takes w1's nodes: it waits for n3 and n4 (5,600 and 6,000), not n1 at 5,000.
    assert two.items[1].shadow == 6_000 and sorted(two.items[1].nodes.tolist()) == [2, 3]
    assert [a.job_id for a in two.assignments()] == ["w1", "w2"]


def test_a_start_must_delay_no_reservation() -> None:
    _, cache, state, _, one = _heads(limit=1)
    _, _, _, _, two = _heads(limit=2)
    assert one is not None and two is not None
    p = cache.vec(_one(10))
    n3 = state.arrays.names.index("n3")
    idx, cnt = np.array([n3]), np.array([1])
    # On n3 from 4,200 for 2,000 s: past w2's shadow time (6,000) on one of its nodes.
    assert one.admits(p, idx, cnt, 4_200, 2_000)
    assert not two.admits(p, idx, cnt, 4_200, 2_000)
    assert two.admits(p, idx, cnt, 4_200, 1_800)  # ends by 6,000


def test_the_idle_node_is_lent_only_until_its_reservation() -> None:
    # n4 idle now: w1 takes it with n1 at 5,000; w2 then waits for n2 and n3 (5,600).
    snap, cache, state, out, two = _heads(limit=2, idle_n4=True)
    assert out == [] and two is not None
    assert [r.shadow for r in two.items] == [5_000, 5_600]
    assert [sorted(r.nodes.tolist()) for r in two.items] == [[0, 3], [1, 2]]
    p = cache.vec(_one(10))
    assert two.place(state, p, snap.time, 800) is not None  # ends at 5,000
    assert two.place(state, p, snap.time, 801) is None  # would run past w1's shadow on n4


def test_the_hybrid_publishes_every_reservation() -> None:
    hybrid = HybridDispatcher(mode="online", workers=1, cycle_budget_s=0.05, predictor=False,
                              reservations=2)  # fmt: skip
    plan = hybrid.plan(_snapshot())
    got = plan.by_job()
    assert got["w1"].start == 5_100 and sorted(got["w1"].nodes) == ["n1", "n2"]
    assert got["w2"].start == 6_000 and sorted(got["w2"].nodes) == ["n3", "n4"]
    assert plan.stats.extra["reserved"] == "w1" and plan.stats.extra["shadow"] == 5_100
    assert not [a for a in plan.starts_now() if a.job_id in ("w1", "w2")]
    with pytest.raises(SearchParamError, match="reservations=0"):
        HybridDispatcher(mode="online", reservations=0)
