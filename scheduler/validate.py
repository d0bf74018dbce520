"""An independent checker of executed schedules (tests, benchmarks, the replay's audit).

Given the nodes, the cap and what ran where and when, it recomputes per-node usage and the
cluster power at every event and lists every violation: a node over capacity, an instant
above the cap, a start before submit, a job run twice, units on unknown nodes, units placed
against the job's rule (scattered units sharing a node, packed units spread, an exclusive
job sharing its nodes).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from wattsched.scheduler.model import RESOURCES, Job, Node, PowerCap, placement_error

_TOL_W = 1e-6


@dataclass(frozen=True, slots=True)
class Executed:
    """One job as it ran."""

    job: Job
    start: int
    end: int
    nodes: tuple[str, ...]


def validate_schedule(
    nodes: Sequence[Node], runs: Sequence[Executed], cap: PowerCap, *, max_errors: int = 20
) -> list[str]:
    """Every rule the schedule breaks (empty when feasible).

    Power is recomputed from the nodes' power models with every node in its given (static)
    power state: use it on replays without power switching.
    """
    errors: list[str] = []
    index = {n.name: i for i, n in enumerate(nodes)}
    seen: set[str] = set()
    events: list[tuple[int, int, Executed]] = []
    for r in runs:
        if r.job.id in seen:
            errors.append(f"job {r.job.id} ran twice")
        seen.add(r.job.id)
        if r.start < r.job.submit:
            errors.append(f"job {r.job.id} started at {r.start} before its submit {r.job.submit}")
        why = placement_error(r.job, r.nodes)
        if why:
            errors.append(f"job {r.job.id} {why}")
        unknown = [n for n in r.nodes if n not in index]
        if unknown:
            errors.append(f"job {r.job.id} ran on unknown nodes {unknown}")
            continue
        if r.end > r.start:
            events.append((r.end, 0, r))  # ends before starts at equal times
            events.append((r.start, 1, r))
    events.sort(key=lambda e: (e[0], e[1]))
    free = [list(n.capacity.as_tuple()) for n in nodes]
    busy = [0] * len(nodes)
    on_node: list[dict[str, bool]] = [{} for _ in nodes]  # job id -> exclusive, per node
    unit_w = [0.0] * len(nodes)
    static = sum(n.power.state_watts(n.state) for n in nodes)
    i = 0
    while i < len(events) and len(errors) < max_errors:
        t = events[i][0]
        while i < len(events) and events[i][0] == t:
            _, kind, r = events[i]
            sign = -1 if kind == 1 else 1
            for name in dict.fromkeys(r.nodes):
                k = index[name]
                if kind == 1:
                    others = {j: x for j, x in on_node[k].items() if j != r.job.id}
                    if others and (r.job.exclusive or any(others.values())):
                        errors.append(
                            f"node {name} shared at {t} by {r.job.id} and {sorted(others)} "
                            "with an exclusive job"
                        )
                    on_node[k][r.job.id] = r.job.exclusive
                else:
                    on_node[k].pop(r.job.id, None)
            for name in r.nodes:
                k = index[name]
                node = nodes[k]
                for ri, amount in enumerate(r.job.unit.as_tuple()):
                    free[k][ri] += sign * amount
                    if free[k][ri] < 0:
                        errors.append(
                            f"node {name} over capacity in {RESOURCES[ri]} at {t} (job {r.job.id})"
                        )
                w = (
                    r.job.unit_power_w
                    if r.job.unit_power_w is not None
                    else node.power.unit_watts(r.job.unit)
                )
                busy[k] -= sign
                unit_w[k] -= sign * w
            i += 1
        power = static + sum(
            unit_w[k] + nodes[k].power.first_core_w for k in range(len(nodes)) if busy[k] > 0
        )
        nxt = events[i][0] if i < len(events) else t + 1
        limit = cap.min_over(t, nxt)
        if power > limit + _TOL_W:
            errors.append(f"power {power:.1f} W above the cap {limit:.1f} W in [{t}, {nxt})")
    return errors[:max_errors]
