"""Placement rules where the mapper alone is not enough: EASY's reservation for an exclusive
head (or beside an exclusive backfilled job), and the hybrid's pooled need of exclusive jobs."""

from __future__ import annotations

from wattsched.scheduler import dispatcher as registry
from wattsched.scheduler.hybrid.problem import build_problem
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

PM = NodePowerModel(idle_w=10, core_w=1)


def _nodes(n: int) -> tuple[Node, ...]:
    return tuple(Node(f"n{i}", Resources(cores=4), PM) for i in range(n))


def _job(jid: str, units: int, cores: int, wall: int, **kw: object) -> Job:
    return Job(jid, 0, wall, units, Resources(cores=cores), **kw)  # type: ignore[arg-type]


def test_easy_keeps_an_exclusive_heads_nodes_empty() -> None:
    # n0 runs a 1-core job until 100: the exclusive head (both nodes whole) waits for it.
    busy = RunningJob(_job("r", 1, 1, 100), 0, ("n0",), 100)
    head = _job("h", 2, 1, 50, placement=Placement.SCATTER, exclusive=True)
    long = _job("b", 1, 1, 500)  # would still run on n1 at 100: the head could not start
    snap = Snapshot(10, _nodes(2), (busy,), (head, long), PowerCap.unlimited())
    plan = registry.create("easy", full_plan=True).plan(snap)
    assert [a.job_id for a in plan.starts_now()] == []
    assert plan.by_job()["h"].start == 100


def test_easy_keeps_an_exclusive_backfill_off_the_heads_nodes() -> None:
    # The head needs 3 cores on each of the 3 nodes; n0 is full until 100.
    busy = RunningJob(_job("r", 1, 4, 100), 0, ("n0",), 100)
    head = _job("h", 3, 3, 50, placement=Placement.SCATTER)
    excl = _job("x", 1, 1, 500, exclusive=True)  # fits the 1 spare core, but takes the node
    snap = Snapshot(10, _nodes(3), (busy,), (head, excl), PowerCap.unlimited())
    plan = registry.create("easy", full_plan=True).plan(snap)
    assert [a.job_id for a in plan.starts_now()] == []
    assert plan.by_job()["h"].start == 100


def test_pooled_need_of_exclusive_jobs_counts_whole_nodes() -> None:
    running = RunningJob(_job("r", 2, 1, 100, exclusive=True), 0, ("n0", "n0"), 100)
    queued = (
        _job("s", 3, 1, 60, placement=Placement.SCATTER, exclusive=True),
        _job("f", 3, 1, 60, exclusive=True),
        _job("p", 3, 1, 60),
    )
    snap = Snapshot(0, _nodes(4), (running,), queued, PowerCap.unlimited())
    prob = build_problem(snap, list(queued), grain=60, horizon_end=600)
    cores = [d[0] for d in prob.demand]
    assert cores == [12, 4, 3]  # 3 whole nodes; one whole node; plain 3 cores
    assert prob.fixed[0][1][0] == 4  # the running exclusive job holds n0 whole, once
