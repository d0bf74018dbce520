"""The hybrid's ``urgent_first`` (``scheduler/hybrid/urgent.py``): the most urgent queue's jobs
that fit now start first."""

from __future__ import annotations

from wattsched.connectors.simulated import SimulatedCluster
from wattsched.daemon.replay import replay
from wattsched.scheduler.hybrid.dispatcher import HybridDispatcher
from wattsched.scheduler.model import Job, Node, PowerCap, Resources, Snapshot


def _jobs() -> list[Job]:
    # One urgent 10-h job (EWT 1,800 s: 12 times the weight of the others) and ten 100-s jobs
    # of a slower queue, every one a whole node: on the hybrid's objective the ten first.
    urgent = Job(id="u", submit=0, walltime=36_000, units=1, unit=Resources(cores=16),
                 queue="reservation", ewt=1800, runtime=36_000)  # fmt: skip
    rest = [Job(id=f"p{k}", submit=0, walltime=100, units=1, unit=Resources(cores=16),
                queue="parallel", ewt=21_600, runtime=100) for k in range(10)]  # fmt: skip
    return [urgent, *rest]


def _started_now(urgent_first: bool, wait: float = 0.0, now: int = 0) -> list[str]:
    node = Node("n1", Resources(cores=16))
    hybrid = HybridDispatcher(mode="online", workers=1, cycle_budget_s=0.3, predictor=False,
                              urgent_first=urgent_first, urgent_wait=wait)  # fmt: skip
    plan = hybrid.plan(Snapshot(now, (node,), (), tuple(_jobs())))
    return [a.job_id for a in plan.assignments if a.start == now]


def test_the_most_urgent_job_that_fits_starts_first_only_with_urgent_first() -> None:
    assert _started_now(False) == ["p0"]  # the plan: the ten short ones first
    assert _started_now(True) == ["u"]  # PRB's rule for the urgent queue


def test_urgent_wait_puts_first_only_an_urgent_job_kept_waiting_long() -> None:
    # urgent_wait 2: the urgent job (EWT 1,800 s) goes first once it has waited 3,600 s.
    assert _started_now(True, wait=2.0, now=3599) == ["p0"]
    assert _started_now(True, wait=2.0, now=3600) == ["u"]


def test_urgent_first_keeps_the_cap_and_the_nodes_and_is_online_only() -> None:
    nodes = [Node(f"n{k}", Resources(cores=16)) for k in range(2)]
    cluster = SimulatedCluster(nodes, _jobs(), PowerCap.constant(2000.0), record_power=False)
    hybrid = HybridDispatcher(mode="online", workers=1, cycle_budget_s=0.2,
                              predictor=False, urgent_first=True)  # fmt: skip
    res = replay(cluster, hybrid)
    assert res.start_errors == 0 and cluster.cap_violation_s == 0
    assert cluster.records["u"].start == 0
    assert all(r.start is not None for r in cluster.records.values())
    assert not HybridDispatcher(mode="offline", urgent_first=True).urgent
