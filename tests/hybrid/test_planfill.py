"""The online fill that keeps the plan (``fill_now="plan"``, ``scheduler/hybrid/planfill.py``):
a job fills only where it delays no later start of the stored plan."""

from __future__ import annotations

import pytest

from wattsched.connectors.simulated import SimulatedCluster
from wattsched.daemon.replay import replay
from wattsched.scheduler.hybrid import HybridDispatcher
from wattsched.scheduler.hybrid.search import SearchParamError
from wattsched.scheduler.model import Job, Node, PowerCap, Resources


def _job(jid: str, cores: int, walltime: int, ewt: int) -> Job:
    return Job(id=jid, submit=0, walltime=walltime, units=1, unit=Resources(cores=cores),
               ewt=ewt, runtime=walltime)  # fmt: skip


def _starts(fill_now: bool | str) -> dict[str, int | None]:
    """One 4-core node. A (2 cores, 10 s, the most urgent queue) starts first; B (the whole
    node, 10 s, half A's weight) is planned at 10, C (2 cores, 1,000 s, 1/48 of A's weight)
    at 20. C fits beside A at 0, and started then it holds B back until 1,000."""
    jobs = [_job("A", 2, 10, 1800), _job("B", 4, 10, 3600), _job("C", 2, 1000, 86400)]
    cluster = SimulatedCluster([Node("n1", Resources(cores=4))], jobs, PowerCap.unlimited(),
                               record_power=False)  # fmt: skip
    hybrid = HybridDispatcher(mode="online", workers=2, cycle_budget_s=0.2, seed=0,
                              fill_now=fill_now)  # fmt: skip
    res = replay(cluster, hybrid)
    assert res.start_errors == 0
    return {jid: r.start for jid, r in cluster.records.items()}


def test_the_greedy_fill_starts_a_long_job_the_plan_put_last() -> None:
    assert _starts(True) == {"A": 0, "C": 0, "B": 1000}


def test_the_plan_fill_keeps_the_plan() -> None:
    assert _starts("plan") == {"A": 0, "B": 10, "C": 20}


def test_fill_now_must_be_a_known_mode() -> None:
    with pytest.raises(SearchParamError, match="fill_now='plans'"):
        HybridDispatcher(mode="online", fill_now="plans")
