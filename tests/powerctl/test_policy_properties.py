"""Property tests: on random small clusters and workloads, each policy lets every job run,
only on nodes that are on, never above the cap, and never has a command refused."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_replay_power import on_intervals

from wattsched.connectors.simulated import SimulatedCluster
from wattsched.daemon.replay import replay
from wattsched.powerctl.hgfs import HGFSParams, HGFSPolicy
from wattsched.powerctl.idle_timeout import IdleTimeoutPolicy
from wattsched.powerctl.policy import PowerPolicy
from wattsched.scheduler import dispatcher as registry
from wattsched.scheduler.model import Job, Node, NodePowerModel, PowerCap, PowerState, Resources
from wattsched.scheduler.validate import Executed, validate_schedule


@st.composite
def instances(draw: Any) -> tuple[list[Node], list[Job], PowerCap]:
    nodes = []
    for i in range(draw(st.integers(1, 5))):
        idle = draw(st.sampled_from([50.0, 100.0, 150.0]))
        nodes.append(
            Node(
                f"n{i}",
                Resources(cores=draw(st.sampled_from([2, 4, 8])), mem_mb=1000),
                power=NodePowerModel(
                    idle_w=idle,
                    core_w=draw(st.sampled_from([5.0, 20.0])),
                    # booting draws at least idle here; the other case: test_replay_power
                    transition_w=draw(st.sampled_from([idle, idle * 2])),
                    off_w=draw(st.sampled_from([0.0, 5.0])),
                ),
                state=draw(st.sampled_from([PowerState.ON, PowerState.OFF])),
                boot_s=draw(st.integers(0, 300)),
                shutdown_s=draw(st.integers(0, 30)),
                efficiency=draw(st.sampled_from([0.5, 1.0, 2.0])),
            )
        )
    biggest = max(n.capacity.cores for n in nodes)
    jobs = []
    for k in range(draw(st.integers(1, 12))):
        runtime = draw(st.integers(0, 3000))
        cores = draw(st.integers(1, biggest))
        room = sum(n.capacity.cores // cores for n in nodes)  # units that fit at once
        jobs.append(
            Job(
                f"j{k}",
                draw(st.integers(0, 20_000)),
                runtime + draw(st.integers(1, 600)),
                draw(st.integers(1, min(3, room))),
                Resources(cores=cores, mem_mb=draw(st.integers(0, 300))),
                runtime=runtime,
            )
        )
    static = sum(max(n.power.idle_w, n.power.transition_w) for n in nodes)
    busy = sum(n.capacity.cores * n.power.core_w for n in nodes)
    cap = draw(
        st.sampled_from(
            [
                PowerCap.unlimited(),
                PowerCap.constant(static + busy),
                PowerCap.constant(static + busy / 2),
            ]
        )
    )
    # every job must be able to run alone on an all-on cluster under the cap
    big_job = max(j.unit.cores * j.units * max(n.power.core_w for n in nodes) for j in jobs)
    if cap.at(0) < static + big_job:
        cap = PowerCap.constant(static + big_job)
    return nodes, jobs, cap


def policies(draw_idle: int) -> list[PowerPolicy]:
    return [
        IdleTimeoutPolicy(idle_s=draw_idle, min_on=0),
        IdleTimeoutPolicy(idle_s=draw_idle, min_on=1),
        HGFSPolicy(HGFSParams(centers=(0.0, 600.0), weights=(0.0, 1.0), min_on=0, period_s=60)),
        HGFSPolicy(),
        HGFSPolicy(
            HGFSParams(centers=(0.0, 300.0), weights=(0.0, 1.0), min_on=0, need_on=0.5, spare_on=1)
        ),
    ]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(inst=instances(), idle_s=st.integers(0, 2000), dispatcher=st.sampled_from(["easy", "prb"]))
def test_every_job_runs_on_powered_nodes_under_the_cap(
    inst: tuple[list[Node], list[Job], PowerCap], idle_s: int, dispatcher: str
) -> None:
    nodes, jobs, cap = inst
    for policy in policies(idle_s):
        cluster = SimulatedCluster(nodes, jobs, cap)
        res = replay(cluster, registry.create(dispatcher), power_policy=policy, max_cycles=20_000)
        records = list(cluster.records.values())
        assert len(records) == len(jobs), policy
        assert all(r.start is not None for r in records), (policy, cluster.unfinished())
        assert res.start_errors == 0 and res.power_errors == 0, policy
        assert cluster.cap_violation_s == 0, policy
        runs = [
            Executed(r.job, r.start, r.end, r.nodes)
            for r in records
            if r.start is not None and r.end is not None
        ]
        assert validate_schedule(nodes, runs, PowerCap.unlimited()) == []
        spans = on_intervals(nodes, cluster)
        for r in records:
            for name in r.nodes:
                assert any(a <= r.start and r.end <= b for a, b in spans[name]), (policy, r)
