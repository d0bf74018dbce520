"""Safe plan reuse (issue 16, finding 8): a job past its end estimate still holds its nodes
(PRB and the hybrid), a job requeued and started again elsewhere is booked where it runs now,
a stored plan is checked against each running job's start and nodes, and the plan is stored
after the online fill."""

from __future__ import annotations

from dataclasses import replace

from wattsched.scheduler.dispatcher import create
from wattsched.scheduler.hybrid.dispatcher import HybridDispatcher
from wattsched.scheduler.hybrid.mapping import map_schedule
from wattsched.scheduler.hybrid.synthetic import eurora_like_jobs, eurora_like_nodes
from wattsched.scheduler.mapper import StateCache
from wattsched.scheduler.model import Job, Node, PowerCap, Resources, RunningJob, Snapshot
from wattsched.scheduler.prb import PRBDispatcher


def _full_cluster_overrunning() -> Snapshot:
    """4 nodes, each held whole by a job that is past its end estimate at t=500."""
    nodes = tuple(eurora_like_nodes(4))
    big = Job(id="100", submit=0, walltime=100, units=4, unit=Resources(cores=16, mem_mb=1024),
              queue="parallel", ewt=21600)  # fmt: skip
    run = RunningJob(big, 0, tuple(n.name for n in nodes), 100)
    small = Job(id="1", submit=0, walltime=60, units=1, unit=Resources(cores=1, mem_mb=1024),
                queue="debug", ewt=3600)  # fmt: skip
    return Snapshot(500, nodes, (run,), (small,), PowerCap.unlimited())


def test_prb_full_plan_starts_nothing_on_the_nodes_of_an_overrunning_job() -> None:
    snap = _full_cluster_overrunning()
    plan = PRBDispatcher(full_plan=True).plan(snap)
    assert list(plan.starts_now()) == []  # before: the small job started on a full node
    assert [a.start for a in plan.assignments] == [snap.time + 1]


def test_the_hybrid_mapper_and_plan_keep_an_overrunning_job_running() -> None:
    snap = _full_cluster_overrunning()
    mapped = map_schedule(snap, StateCache(), list(snap.queued), release=None, source="t")
    assert all(a.start > snap.time for a in mapped.assignments)
    disp = create("hybrid", full_plan=True)
    plan = disp.plan(snap)
    assert list(plan.starts_now()) == []
    assert plan.stats.status != "reused"


def test_a_requeued_job_is_booked_where_it_runs_now() -> None:
    nodes = tuple(eurora_like_nodes(2))
    job = Job(id="7", submit=0, walltime=100, units=1, unit=Resources(cores=16, mem_mb=1024),
              queue="debug", ewt=3600)  # fmt: skip
    cache = StateCache()
    first = cache.state(Snapshot(0, nodes, (RunningJob(job, 0, ("n00",), 100),), ()))
    assert first.free[0, 0] == 0 and first.free[1, 0] == 16
    again = cache.state(Snapshot(50, nodes, (RunningJob(job, 50, ("n01",), 150),), ()))
    assert again.free[0, 0] == 16 and again.free[1, 0] == 0  # before: still booked on n00


def test_a_running_job_restarted_elsewhere_drops_the_stored_plan() -> None:
    nodes = tuple(eurora_like_nodes(8))
    jobs = eurora_like_jobs(20, seed=3)
    snap = Snapshot(0, nodes, (), tuple(jobs), PowerCap.constant(1100.0))
    disp = create("hybrid", budget_s=None, cycle_budget_s=0.5)
    assert isinstance(disp, HybridDispatcher)
    plan = disp.plan(snap)
    assert disp._schedule, "the online plan was complete and stored"
    started = {a.job_id: a for a in plan.starts_now()}
    by_id = {j.id: j for j in jobs}
    running = tuple(
        RunningJob(by_id[jid], 0, a.nodes, by_id[jid].walltime) for jid, a in started.items()
    )
    queued = tuple(j for j in jobs if j.id not in started)
    t = 1  # nothing ended, nothing planned between 0 and 1: exactly on plan
    assert min(a.start for a in disp._schedule.values() if a.job_id not in started) > t
    on_plan = Snapshot(t, nodes, running, queued, snap.cap)
    assert disp._still_on_plan(on_plan)
    # The same job id, requeued and started again at t=1 (same nodes): the plan is stale.
    moved = (replace(running[0], start=t, end_estimate=t + running[0].job.walltime),
             *running[1:])  # fmt: skip
    assert not disp._still_on_plan(replace(on_plan, running=moved))


def test_the_online_plan_is_stored_after_the_fill() -> None:
    # One 4-core node, 2 cores busy until t=5. The plan holds X (2 cores, 1000 s, low weight)
    # back so that Y (4 cores, high weight) starts at 5; the online fill starts X now anyway.
    node = Node("n1", Resources(cores=4))
    r = Job(id="9", submit=0, walltime=5, units=1, unit=Resources(cores=2), ewt=3600)
    x = Job(id="1", submit=0, walltime=1000, units=1, unit=Resources(cores=2), ewt=86400)
    y = Job(id="2", submit=0, walltime=10, units=1, unit=Resources(cores=4), ewt=3600)
    snap = Snapshot(0, (node,), (RunningJob(r, 0, ("n1",), 5),), (x, y), PowerCap.unlimited())
    disp = create("hybrid", cycle_budget_s=2.0, full_plan=True)
    assert isinstance(disp, HybridDispatcher)
    plan = disp.plan(snap)
    assert plan.stats.extra.get("filled") == 1
    now = {a.job_id: a for a in plan.starts_now()}
    assert set(now) == {"1"}
    # Stored after the fill: X as started, Y re-mapped after X (before: Y at 5, on X's cores).
    assert disp._schedule["1"] == now["1"]
    assert disp._schedule["2"].start == 1000
    assert plan.wake_at == 1000
