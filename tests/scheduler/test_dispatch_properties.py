"""Every dispatcher yields a feasible executed schedule on random clusters and workloads,
jobs with every placement rule (free, scatter, pack, exclusive) among them: no dispatcher
ever returns a placement that breaks a job's rule (the simulated cluster refuses such a start
and the independent validator flags it)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wattsched.connectors.simulated import SimulatedCluster
from wattsched.daemon.replay import replay
from wattsched.scheduler import dispatcher as registry
from wattsched.scheduler.dispatcher import Dispatcher
from wattsched.scheduler.model import (
    Job,
    Node,
    NodePowerModel,
    Placement,
    Plan,
    PowerCap,
    Resources,
    Snapshot,
    placement_error,
)
from wattsched.scheduler.validate import Executed, validate_schedule

DISPATCHERS = [n for n in registry.names()]
FULL_PLAN = {"easy", "prb", "hybrid", "hybrid-nofb"}
"""Dispatchers with a ``full_plan`` switch (publish later starts too)."""


@st.composite
def instances(draw: st.DrawFn) -> tuple[list[Node], list[Job], PowerCap, bool]:
    n_nodes = draw(st.integers(1, 5))
    nodes = []
    for i in range(n_nodes):
        cores = draw(st.sampled_from([1, 2, 4, 8, 16]))
        nodes.append(
            Node(
                f"n{i}",
                Resources(
                    cores=cores,
                    mem_mb=draw(st.sampled_from([0, 1000, 4000])),
                    gpus=draw(st.integers(0, 2)),
                ),
                NodePowerModel(
                    idle_w=draw(st.sampled_from([0.0, 10.0, 50.0])),
                    first_core_w=draw(st.sampled_from([0.0, 15.0])),
                    core_w=draw(st.sampled_from([1.0, 5.0])),
                    gpu_w=draw(st.sampled_from([0.0, 40.0])),
                ),
                efficiency=draw(st.sampled_from([1.0, 1.5])),
            )
        )
    max_cores = max(n.capacity.cores for n in nodes)
    n_jobs = draw(st.integers(1, 12))
    jobs = []
    t = 0
    for j in range(n_jobs):
        t += draw(st.integers(0, 50))
        host = draw(st.sampled_from(nodes))
        cores = draw(st.integers(1, host.capacity.cores))
        mem = draw(st.integers(0, host.capacity.mem_mb)) if host.capacity.mem_mb else 0
        gpus = draw(st.integers(0, host.capacity.gpus))
        unit = Resources(cores=min(cores, max_cores), mem_mb=mem, gpus=gpus)
        # The job's placement rule, and a unit count the empty machine holds under it.
        placement = draw(st.sampled_from(list(Placement)))
        if placement is Placement.SCATTER:
            room = sum(_fits(unit, n) > 0 for n in nodes)
        elif placement is Placement.PACK:
            room = max(_fits(unit, n) for n in nodes)
        else:
            room = sum(_fits(unit, n) for n in nodes)
        units = draw(st.integers(1, max(1, min(3, room))))
        wall = draw(st.integers(1, 200))
        runtime = draw(st.integers(0, wall + 20))
        power = draw(st.one_of(st.none(), st.floats(0, 60)))
        jobs.append(
            Job(
                str(j),
                t,
                wall,
                units,
                unit,
                unit_power_w=power,
                ewt=draw(st.sampled_from([1800, 3600, 21600])),
                runtime=runtime,
                placement=placement,
                exclusive=draw(st.sampled_from([False, False, False, True])),
            )
        )
    static = sum(n.power.idle_w for n in nodes)
    cap_kind = draw(st.sampled_from(["none", "const", "steps"]))
    if cap_kind == "none":
        cap = PowerCap.unlimited()
    else:
        # Always leaves room for the largest job on the costliest node.
        need = max(
            j.units
            * (
                (j.unit_power_w if j.unit_power_w is not None else 0)
                + max(n.power.unit_watts(j.unit) for n in nodes)
                + max(n.power.first_core_w for n in nodes)
            )
            for j in jobs
        )
        base = static + need + draw(st.floats(0, 300))
        if cap_kind == "const":
            cap = PowerCap.constant(base)
        else:
            cap = PowerCap(
                (
                    (0, base + 200),
                    (draw(st.integers(1, 300)), base),
                    (draw(st.integers(301, 600)), base + 100),
                )
            )
    return nodes, jobs, cap, draw(st.booleans())


def _fits(unit: Resources, node: Node) -> int:
    """How many such units the empty node hosts."""
    return min(c // u for u, c in zip(unit.as_tuple(), node.capacity.as_tuple(), strict=True) if u)


def executed(cluster: SimulatedCluster) -> list[Executed]:
    return [
        Executed(r.job, r.start, r.end, r.nodes)
        for r in cluster.records.values()
        if r.start is not None and r.end is not None
    ]


def rule_breaks(snap: Snapshot, plan: Plan) -> list[str]:
    """Every assignment of ``plan`` (later starts too) that breaks its job's rule; for the
    starts now, also every node shared with an exclusive job (running or starting)."""
    jobs = {j.id: j for j in snap.queued}
    out = [
        f"{a.job_id} at {a.start}: {why}"
        for a in plan.assignments
        if (why := placement_error(jobs[a.job_id], a.nodes))
    ]
    users: dict[str, list[tuple[str, bool]]] = {}
    for rj in snap.running:
        for n in set(rj.nodes):
            users.setdefault(n, []).append((rj.job.id, rj.job.exclusive))
    for a in plan.starts_now():
        for n in set(a.nodes):
            users.setdefault(n, []).append((a.job_id, jobs[a.job_id].exclusive))
    for n, on in users.items():
        if len(on) > 1 and any(excl for _, excl in on):
            out.append(f"node {n} shared with an exclusive job: {on}")
    return out


class RuleChecked(Dispatcher):
    """Wraps a dispatcher and records the rule breaks of every plan it returns (the replay
    carries out only the starts now: this also sees the later starts of a plan)."""

    def __init__(self, inner: Dispatcher) -> None:
        super().__init__()
        self.inner = inner
        self.breaks: list[str] = []

    def plan(self, snap: Snapshot) -> Plan:
        plan = self.inner.plan(snap)
        self.breaks.extend(rule_breaks(snap, plan))
        return plan


@pytest.mark.parametrize("name", DISPATCHERS)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(inst=instances(), full_plan=st.booleans())
def test_every_dispatcher_is_feasible(name: str, inst: tuple, full_plan: bool) -> None:
    nodes, jobs, cap, offline = inst
    # A short cycle budget for the hybrid: feasibility does not hang on how long it searches
    # (and short budgets run its fallbacks more), while 1 s a cycle cost 100 s a dispatcher.
    params: dict[str, object] = (
        {"time_limit_s": 0.2, "cycle_budget_s": 0.2} if name.startswith("hybrid") else {}
    )
    if full_plan and name in FULL_PLAN:
        params["full_plan"] = True  # every job's start and nodes, later ones too
    cluster = SimulatedCluster(nodes, jobs, cap, offline=offline)
    checked = RuleChecked(registry.create(name, **params))
    result = replay(cluster, checked, max_cycles=10_000)
    assert checked.breaks == [], "a plan breaks a job's placement rule"
    assert result.start_errors == 0
    assert cluster.cap_violation_s == 0
    runs = executed(cluster)
    # Every job fits the machine and the cap alone, so every job must have run, once.
    assert sorted(r.job.id for r in runs) == sorted(j.id for j in jobs)
    submits = {j.id: j.submit for j in jobs}
    for r in runs:
        assert r.start >= (cluster.start_time if offline else submits[r.job.id])
    assert validate_schedule(nodes, runs, cap) == []


@pytest.mark.parametrize("name", DISPATCHERS)
def test_each_dispatcher_is_created_alone_by_name(name: str) -> None:
    # ``create`` imports only the named dispatcher's module (the hybrid's pulls in OR-Tools):
    # a fresh process must find every registered name that way, and EASY's must not import
    # the hybrid.
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from wattsched.scheduler import dispatcher as r\n"
        f"d = r.create({name!r})\n"
        "print(isinstance(d, r.Dispatcher), 'wattsched.scheduler.hybrid' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    assert out[0] == "True"
    if name in ("fifo", "easy", "prb"):
        assert out[1] == "False"
