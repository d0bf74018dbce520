"""First come, first served among identical jobs (``scheduler/hybrid/twins.py``)."""

from __future__ import annotations

from dataclasses import replace

from wattsched.connectors.simulated import SimulatedCluster
from wattsched.daemon.replay import replay
from wattsched.scheduler.hybrid.dispatcher import HybridDispatcher
from wattsched.scheduler.hybrid.synthetic import eurora_like_jobs, eurora_like_nodes
from wattsched.scheduler.hybrid.twins import first_come_among_twins, twin_key
from wattsched.scheduler.model import Assignment, Job, PowerCap, Resources


def _job(jid: str, submit: int, cores: int = 8, walltime: int = 3600) -> Job:
    return Job(id=jid, submit=submit, walltime=walltime, units=1, unit=Resources(cores=cores),
               queue="q", ewt=3600)  # fmt: skip


def test_a_plans_slots_go_to_twins_in_submit_order() -> None:
    a, b, c = _job("a", 0), _job("b", 5), _job("c", 9)
    other = _job("x", 1, cores=4)  # not a twin: another shape
    held = replace(_job("h", 0), held=True)  # a twin, but held: never planned
    plan = (Assignment("c", 100, ("n1",)), Assignment("x", 100, ("n2",)),
            Assignment("b", 400, ("n3",)), Assignment("z", 100, ("n4",)))  # fmt: skip
    out = first_come_among_twins(plan, [a, b, c, other, held])
    # the plan left "a" out and started "c" first: "a" takes the earliest slot, "b" the next
    assert out == (Assignment("a", 100, ("n1",)), Assignment("x", 100, ("n2",)),
                   Assignment("b", 400, ("n3",)), Assignment("z", 100, ("n4",)))  # fmt: skip
    assert twin_key(a) == twin_key(c) != twin_key(other)
    assert twin_key(a) != twin_key(replace(a, unit_power_w=90.0))


def test_the_online_hybrid_never_starts_a_twin_before_an_earlier_one() -> None:
    # Pairs of identical jobs (the second submitted 1 s later) whose runtimes differ: the
    # search is indifferent between them; the plan must start the earlier one first.
    base = eurora_like_jobs(24, seed=5)
    jobs: list[Job] = []
    for k, j in enumerate(base):
        first = replace(j, id=str(2 * k + 1), submit=300 * (k // 6),
                        runtime=max(1, j.walltime // 5))  # fmt: skip
        second = replace(first, id=str(2 * k + 2), submit=first.submit + 1,
                         runtime=max(1, j.walltime // 2))  # fmt: skip
        jobs += [first, second]
    cluster = SimulatedCluster(eurora_like_nodes(6), jobs, PowerCap.constant(1300.0),
                               record_power=False)  # fmt: skip
    hybrid = HybridDispatcher(mode="online", workers=1, cycle_budget_s=0.1, seed=2,
                              deterministic=True)  # fmt: skip
    res = replay(cluster, hybrid)
    assert res.start_errors == 0 and cluster.cap_violation_s == 0
    start = {jid: r.start for jid, r in cluster.records.items()}
    assert all(s is not None for s in start.values())
    for k in range(len(base)):
        first, second = str(2 * k + 1), str(2 * k + 2)
        assert start[first] <= start[second], (first, start[first], second, start[second])


def test_without_power_jobs_alike_but_for_their_power_estimates_are_twins() -> None:
    a, b = replace(_job("a", 0), unit_power_w=30.0), replace(_job("b", 5), unit_power_w=10.0)
    plan = (Assignment("b", 100, ("n1",)), Assignment("a", 400, ("n2",)))
    assert first_come_among_twins(plan, [a, b]) == plan  # not twins: the plan stands
    assert first_come_among_twins(plan, [a, b], power=False) == (
        Assignment("a", 100, ("n1",)), Assignment("b", 400, ("n2",)))  # fmt: skip
    assert twin_key(a, power=False) == twin_key(b, power=False)


def test_the_online_hybrid_without_twin_power_keeps_the_cap() -> None:
    # Pairs alike but for their power estimates (the later one draws less): a slot planned
    # for the lighter job may go to the heavier one; every start is checked on the cluster.
    base = eurora_like_jobs(24, seed=5)
    jobs: list[Job] = []
    for k, j in enumerate(base):
        w = j.unit_power_w or 20.0
        first = replace(j, id=str(2 * k + 1), submit=300 * (k // 6), unit_power_w=2 * w,
                        runtime=max(1, j.walltime // 5))  # fmt: skip
        jobs += [first, replace(first, id=str(2 * k + 2), submit=first.submit + 1,
                                unit_power_w=w, runtime=max(1, j.walltime // 2))]  # fmt: skip
    cluster = SimulatedCluster(eurora_like_nodes(6), jobs, PowerCap.constant(1300.0),
                               record_power=False)  # fmt: skip
    hybrid = HybridDispatcher(mode="online", workers=1, cycle_budget_s=0.1, seed=2,
                              deterministic=True, twin_power=False)  # fmt: skip
    res = replay(cluster, hybrid)
    assert res.start_errors == 0 and cluster.cap_violation_s == 0
    assert all(r.start is not None for r in cluster.records.values())
