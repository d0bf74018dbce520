"""The two energy-saved measures of a replay, and the ceiling of each.

**The paper's measure** (EECluster, section 5, equation (4)), the one NSGA-II optimises and
``pick`` bounds (:data:`TUNED`)::

    Energy saved = sum_i P_idle,i (t_end - t_ini) - sum_i P_idle,i * integral(state_i(t) dt)
                 = sum_i P_idle,i * (time node i spends powered off)

with ``state_i(t)`` 1 while node ``i`` is powered (on, booting or shutting down: it draws
power) and 0 while it is off. The paper's "Energy saved (%)" divides this by
``sum_i P_idle,i (t_end - t_ini)``: in every one of its Tables 2-6, "Energy saved (MWh)" /
"Energy saved (%)" is the same figure, 29.0 MWh (scenario 1: 8.30 / 0.2862; scenario 2:
17.43 / 0.6007; scenario 3: 8.12 / 0.2799; scenario 4: 7.25 / 0.2500; CMS: 13.38 / 0.4667 =
28.7), although the scenarios' loads differ, so the denominator does not depend on the load.
The paper's percentage is therefore the share of node time (weighted by idle power) spent off:
:data:`PAPER`, ``Objectives.paper_saved_fraction``. Here ``t_ini`` is the replay's start (the
first submit of the workload part) and ``t_end`` its end (the last job's end).

**The physical measure** (:data:`PHYSICAL`, ``Objectives.saved_fraction``): the energy not
drawn because nodes were not on (idle W minus the state's W, so the boot and shutdown draw
and an off node's standby draw count), as a fraction of the always-on energy *including the
busy power*. It is smaller than the paper's for the same schedule and depends on the load (at
50 % load with busy = 2 x idle, a node off all its idle time saves 33 % here and 50 % in the
paper's measure), so only the paper's measure can be set beside the paper's tables. Both are
reported everywhere.

**Ceilings**: a node is off only while it runs nothing, so every node off, for free and at
once, whenever it runs nothing bounds both measures on that replay's schedule
(:func:`ceilings`).
"""

from __future__ import annotations

from collections.abc import Sequence

from wattsched.connectors.simulated import SimulatedCluster
from wattsched.scheduler.model import Node, PowerState

PAPER = "paper_saved_fraction"
"""EECluster's equation (4) over ``sum_i P_idle,i (t_end - t_ini)``."""
PHYSICAL = "saved_fraction"
"""The energy not drawn, over the always-on energy (busy power included)."""
TUNED = PAPER
"""The measure NSGA-II maximises and ``pick`` maximises within its bounds."""
LABELS = {
    PAPER: "energy saved, EECluster eq. (4): idle W x time off (% of idle W x span)",
    PHYSICAL: "energy saved, physical (% of always-on energy)",
}


def off_seconds(cluster: SimulatedCluster, nodes: Sequence[Node]) -> dict[str, int]:
    """Node name -> the seconds it spent off (state OFF) in ``cluster``'s finished replay of
    ``nodes`` (their starting states), rebuilt from its power log: an accepted power-off at
    ``t`` leaves the node off from ``t + shutdown_s``; a power-on (only accepted from OFF)
    ends it; a failed command changes nothing and is not logged."""
    t0, end = cluster.start_time, cluster.now
    shutdown = {n.name: n.shutdown_s for n in nodes}
    off = dict.fromkeys(shutdown, 0)
    since = {n.name: t0 for n in nodes if n.state is PowerState.OFF}
    for t, name, on in cluster.power_log:
        if on:
            a = since.pop(name, None)
            if a is not None:
                off[name] += max(0, t - a)
        else:
            since[name] = t + shutdown[name]
    for name, a in since.items():
        off[name] += max(0, end - a)
    return off


def idle_weight_j(cluster: SimulatedCluster, nodes: Sequence[Node]) -> float:
    """The paper's denominator: ``sum_i P_idle,i (t_end - t_ini)``, in joules."""
    return sum(n.power.idle_w for n in nodes) * max(0, cluster.now - cluster.start_time)


def paper_saved_j(cluster: SimulatedCluster, nodes: Sequence[Node]) -> float:
    """EECluster's equation (4) on ``cluster``'s finished replay: ``sum_i P_idle,i`` times
    node ``i``'s time off, in joules."""
    off = off_seconds(cluster, nodes)
    return sum(n.power.idle_w * off[n.name] for n in nodes)


def busy_spans(cluster: SimulatedCluster) -> dict[str, list[tuple[int, int]]]:
    """Node name -> the ``(start, end)`` of every job that ran on it in ``cluster``'s replay."""
    spans: dict[str, list[tuple[int, int]]] = {}
    for r in cluster.records.values():
        if r.start is not None and r.end is not None and r.end > r.start:
            for name in set(r.nodes):
                spans.setdefault(name, []).append((r.start, r.end))
    return spans


def idle_seconds(cluster: SimulatedCluster, nodes: Sequence[Node]) -> dict[str, int]:
    """Node name -> the seconds it ran no job in ``cluster``'s finished replay."""
    t0 = cluster.start_time
    spans = busy_spans(cluster)
    out: dict[str, int] = {}
    for node in nodes:
        busy, reach = 0, t0
        for a, b in sorted(spans.get(node.name, [])):
            a = max(a, reach)
            if b > a:
                busy, reach = busy + b - a, b
        out[node.name] = max(0, cluster.now - t0 - busy)
    return out


def ceilings(cluster: SimulatedCluster, nodes: Sequence[Node]) -> dict[str, float]:
    """The most a power policy could have saved on ``cluster``'s finished replay, in each
    measure (:data:`PAPER`, :data:`PHYSICAL`): every one of ``nodes`` off, for free and at
    once, whenever it ran nothing, with the very same job starts. A node is off only while it
    runs nothing, so no replay saves more than its own ceilings."""
    idle = idle_seconds(cluster, nodes)
    always_on = cluster.energy_j + cluster.power_saved_j
    weight = idle_weight_j(cluster, nodes)
    gain = sum(
        max(0.0, n.power.state_watts(PowerState.ON) - n.power.state_watts(PowerState.OFF))
        * idle[n.name]
        for n in nodes
    )
    paper = sum(n.power.idle_w * idle[n.name] for n in nodes)
    return {
        PAPER: paper / weight if weight > 0 else 0.0,
        PHYSICAL: gain / always_on if always_on > 0 else 0.0,
    }
