"""The CP's timing is carried out (issue 16, finding 4): a plan's next planned start wakes the
replay's cycle, so a start planned between events happens when planned."""

from __future__ import annotations

from wattsched.connectors.simulated import SimulatedCluster
from wattsched.daemon.replay import replay
from wattsched.scheduler.dispatcher import Dispatcher, create
from wattsched.scheduler.hybrid.dispatcher import HybridDispatcher
from wattsched.scheduler.hybrid.synthetic import eurora_like_jobs, eurora_like_nodes
from wattsched.scheduler.model import Assignment, Job, Plan, PowerCap, Resources, Snapshot


class _StartAt(Dispatcher):
    """Starts every job at a fixed time, on the first node, and asks to be woken then."""

    def __init__(self, at: int) -> None:
        super().__init__()
        self.at = at

    def plan(self, snap: Snapshot) -> Plan:
        if snap.time < self.at:
            return Plan(snap.time, (), wake_at=self.at)
        node = snap.nodes[0].name
        starts = tuple(Assignment(j.id, snap.time, (node,) * j.units) for j in snap.queued)
        return Plan(snap.time, starts)


def test_a_plan_wakes_the_replay_at_its_next_planned_start() -> None:
    job = Job(id="1", submit=0, walltime=100, units=1, unit=Resources(cores=1, mem_mb=1),
              queue="q", ewt=3600)  # fmt: skip
    cluster = SimulatedCluster(eurora_like_nodes(1), [job], PowerCap.unlimited(), offline=True)
    replay(cluster, _StartAt(37))
    assert cluster.records["1"].start == 37  # before: never started (no event at 37)


def test_an_offline_hybrid_replay_carries_out_its_plan_exactly() -> None:
    nodes = eurora_like_nodes(8)
    jobs = eurora_like_jobs(30, seed=2)
    cluster = SimulatedCluster(nodes, jobs, PowerCap.constant(1100.0), offline=True)
    disp = create("hybrid", mode="offline", budget_s=1.5, time_limit_s=0.5)
    assert isinstance(disp, HybridDispatcher)
    # Every plan the dispatcher stores, with the time it stored it: the search's (one), and
    # PRB's where PRB beats it (the fallback; whether it does depends on what the time-limited
    # search found, so on the machine's load).
    plans: list[tuple[int, dict[str, int]]] = []

    class _Spy(Dispatcher):
        def plan(self, snap: Snapshot) -> Plan:
            plan = disp.plan(snap)
            stored = {jid: a.start for jid, a in disp._schedule.items()}
            if not plans:
                later = [t for t in stored.values() if t > snap.time]
                assert plan.wake_at == min(later, default=None)
            if not plans or any(plans[-1][1].get(j) != t for j, t in stored.items()):
                plans.append((snap.time, stored))
            return plan

    result = replay(cluster, _Spy())
    assert result.start_errors == 0 and not cluster.unfinished()
    assert disp.replans == 1 and len(plans) == 1 + disp.fallbacks
    for jid, r in cluster.records.items():
        # started at its start in the last plan stored before it started
        last = [p for t, p in plans if t <= r.start and jid in p][-1]
        assert r.start == last[jid], (jid, disp.fallbacks)


def test_the_daemon_timer_runs_the_next_cycle_at_the_planned_start() -> None:
    import threading

    from wattsched.daemon.cycle_timer import CycleTimer

    done = threading.Event()
    calls: list[int] = []

    def cycle() -> float:
        calls.append(1)
        if len(calls) >= 2:
            done.set()
        return 0.01  # the plan's next start is in 10 ms; the period is an hour

    timer = CycleTimer(cycle, 3600.0)
    timer.start()
    try:
        assert done.wait(60), "the second cycle waited for the period"
    finally:
        timer.stop()
