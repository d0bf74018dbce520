"""An independent checker of executed schedules (tests, benchmarks, the replay's audit).

Given the nodes, the cap and what ran where and when, it recomputes per-node usage and the
cluster power at every event and lists every violation: a node over capacity, an instant
above the cap, a start before submit, a job run twice, units on unknown nodes, an assignment
that breaks its job's placement rule (scatter, pack) or a node shared with an exclusive job.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from wattsched.scheduler.model import RESOURCES, Job, Node, PowerCap

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
        if len(r.nodes) != r.job.units:
            errors.append(f"job {r.job.id} has {len(r.nodes)} nodes for {r.job.units} units")
        else:
            why = r.job.placement_violation(r.nodes)
            if why:
                errors.append(f"job {r.job.id} breaks its placement rule: {why}")
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
    owner: list[str | None] = [None] * len(nodes)  # the exclusive job on each node
    unit_w = [0.0] * len(nodes)
    static = sum(n.power.state_watts(n.state) for n in nodes)
    i = 0
    while i < len(events) and len(errors) < max_errors:
        t = events[i][0]
        while i < len(events) and events[i][0] == t:
            _, kind, r = events[i]
            sign = -1 if kind == 1 else 1
            if kind == 1:
                errors.extend(_exclusive_clash(r, index, busy, owner))
            elif r.job.exclusive:
                for name in r.nodes:
                    owner[index[name]] = None
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


def _exclusive_clash(
    r: Executed, index: dict[str, int], busy: list[int], owner: list[str | None]
) -> list[str]:
    """Errors of ``r`` starting beside an exclusive job, or exclusive beside a busy node."""
    out: list[str] = []
    for name in dict.fromkeys(r.nodes):
        k = index[name]
        if owner[k] is not None:
            out.append(f"node {name} is exclusive to job {owner[k]} when {r.job.id} starts")
        elif r.job.exclusive and busy[k] > 0:
            out.append(f"exclusive job {r.job.id} starts on busy node {name}")
    if r.job.exclusive:
        for name in r.nodes:
            owner[index[name]] = r.job.id
    return out
