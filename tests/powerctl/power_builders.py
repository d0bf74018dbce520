"""Builders of hand-made clusters, snapshots and workloads for the power policy tests."""

from __future__ import annotations

from collections.abc import Sequence

from wattsched.scheduler.model import (
    Assignment,
    Job,
    Node,
    NodePowerModel,
    Plan,
    PowerCap,
    PowerState,
    Resources,
    RunningJob,
    Snapshot,
)


def node(
    name: str,
    *,
    cores: int = 4,
    state: PowerState = PowerState.ON,
    efficiency: float = 1.0,
    available: bool = True,
    last_power_failure: int | None = None,
) -> Node:
    """A 4-core node drawing 100 W idle, 10 W per busy core, booting in 120 s."""
    return Node(
        name,
        Resources(cores=cores, mem_mb=1000),
        power=NodePowerModel(idle_w=100.0, core_w=10.0, transition_w=100.0),
        state=state,
        boot_s=120,
        shutdown_s=10,
        efficiency=efficiency,
        available=available,
        last_power_failure=last_power_failure,
    )


def job(job_id: str, submit: int = 0, *, units: int = 1, cores: int = 1, runtime: int = 600) -> Job:
    """A job of ``units`` units of ``cores`` cores, walltime twice its runtime."""
    return Job(
        job_id,
        submit,
        max(1, 2 * runtime),
        units,
        Resources(cores=cores, mem_mb=10),
        runtime=runtime,
    )


def running(j: Job, nodes: Sequence[str], start: int = 0) -> RunningJob:
    """``j`` running on ``nodes`` since ``start``."""
    return RunningJob(j, start, tuple(nodes), start + j.walltime)


def snapshot(
    t: int,
    nodes: Sequence[Node],
    *,
    run: Sequence[RunningJob] = (),
    queued: Sequence[Job] = (),
    cap: float | None = None,
) -> Snapshot:
    """A snapshot at time ``t``."""
    return Snapshot(
        t,
        tuple(nodes),
        tuple(run),
        tuple(queued),
        PowerCap.constant(cap) if cap is not None else PowerCap.unlimited(),
    )


def plan(t: int, *assignments: tuple[str, int, Sequence[str]]) -> Plan:
    """A plan from ``(job_id, start, nodes)`` triples."""
    return Plan(t, tuple(Assignment(j, s, tuple(n)) for j, s, n in assignments))


def bursty_workload(n_jobs: int = 60) -> list[Job]:
    """Bursts of 20 jobs, 200 s apart, separated by 20,000 s lulls (idle nodes to save)."""
    out: list[Job] = []
    t = 0
    for k in range(n_jobs):
        t += 200 if k % 20 else 20_000
        runtime = 1000 + (k * 137) % 2000
        out.append(job(f"j{k}", t, units=1 + k % 3, cores=2 + k % 3, runtime=runtime))
    return out


def cluster_nodes(n: int = 8) -> list[Node]:
    """``n`` nodes, efficiency growing with the index, all on."""
    return [node(f"n{i}", efficiency=1.0 + i / 10) for i in range(n)]
