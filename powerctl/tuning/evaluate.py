"""The three objectives of a node power policy, by replay (EECluster's definitions).

* **QoS**: the 90th percentile of ``wait / runtime`` over the jobs (runtime floored at 1 s):
  0 when no job waits, 1 when one job in ten waits as long as it runs.
* **Energy saved**, in two measures (:mod:`.measures`, where the derivation is): the paper's
  equation (4), idle power times node time off as a fraction of idle power times the span
  (``paper_saved_fraction``, the one tuned), and the physical saving, the energy not drawn as
  a fraction of the always-on energy (``saved_fraction``, ``saved_kwh``).
* **Reconfigurations**: the power commands carried out.

Every replay goes through the daemon's control cycle (:func:`wattsched.daemon.replay.replay`):
the same dispatcher, power step, safety rules and power book as production.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

from wattsched.connectors.simulated import SimulatedCluster
from wattsched.daemon.replay import replay
from wattsched.daemon.replay_output import outcomes
from wattsched.powerctl.hgfs import HGFSParams, HGFSPolicy
from wattsched.powerctl.idle_timeout import IdleTimeoutPolicy
from wattsched.powerctl.policy import PowerPolicy
from wattsched.powerctl.tuning.measures import (
    TUNED,
    ceilings,
    idle_weight_j,
    paper_saved_j,
)
from wattsched.scheduler import dispatcher as registry
from wattsched.scheduler.metrics import schedule_metrics
from wattsched.scheduler.model import Job, Node, PowerCap

MIN_JOBS_PER_PART = 20
"""A part of the split with fewer jobs than this says nothing about a policy."""


class SplitError(ValueError):
    """A trace too short to split; names the trace and the lengths."""


@dataclass(frozen=True)
class Workload:
    """A cluster and the jobs to replay on it."""

    name: str
    nodes: tuple[Node, ...]
    jobs: tuple[Job, ...]
    cap: PowerCap = field(default_factory=PowerCap.unlimited)
    power_failure_p: float = 0.0
    """The probability that a power command fails in the replay (seeded by ``seed``)."""
    seed: int = 0


@dataclass(frozen=True, slots=True)
class Objectives:
    """What a policy did on a workload."""

    qos_p90: float
    saved_fraction: float
    """Physical: the energy not drawn, over the always-on energy (busy power included)."""
    reconfigurations: int
    energy_kwh: float
    """The energy drawn."""
    paper_saved_fraction: float
    """EECluster's equation (4), idle W x time off, over idle W x the span (the tuned one)."""
    saved_kwh: float
    """Physical: the energy not drawn (boot and shutdown draw counted)."""
    paper_saved_kwh: float
    """EECluster's equation (4) in kWh."""
    power_failures: int = 0
    """Power commands that failed (with a failure probability in the replay)."""

    def saved(self, measure: str = TUNED) -> float:
        """The energy saved in ``measure`` (:data:`~.measures.PAPER` or ``PHYSICAL``)."""
        return float(getattr(self, measure))

    def minimised(self) -> tuple[float, float, float]:
        """The NSGA-II objectives: QoS, minus the energy saved (the tuned measure),
        reconfigurations."""
        return (self.qos_p90, -self.saved(TUNED), float(self.reconfigurations))

    def to_json(self) -> dict[str, float | int]:
        """A JSON object of every figure."""
        return asdict(self)


def split_in_time(
    name: str, jobs: Sequence[Job], fractions: Sequence[float] = (0.5, 0.25, 0.25)
) -> list[list[Job]]:
    """The jobs cut by submit time into consecutive parts of ``fractions`` of the jobs
    (train, validation, test); :class:`SplitError` when a part is too short."""
    if abs(sum(fractions) - 1.0) > 1e-9 or any(f <= 0 for f in fractions):
        raise SplitError(f"split fractions {tuple(fractions)} must be > 0 and sum to 1")
    ordered = sorted(jobs, key=lambda j: (j.submit, j.id))
    cuts, acc = [0], 0.0
    for f in fractions:
        acc += f
        cuts.append(round(acc * len(ordered)))
    parts = [ordered[a:b] for a, b in itertools.pairwise(cuts)]
    sizes = [len(p) for p in parts]
    if min(sizes) < MIN_JOBS_PER_PART:
        raise SplitError(
            f"{name}: {len(ordered)} jobs split {tuple(fractions)} gives parts of {sizes} jobs;"
            f" each needs at least {MIN_JOBS_PER_PART} (use a longer trace)"
        )
    return parts


def policy_for(params: HGFSParams | None, idle_s: int | None = None) -> PowerPolicy | None:
    """HGFS with ``params``, or the idle-timeout baseline with ``idle_s``, or none."""
    if params is not None:
        return HGFSPolicy(params)
    if idle_s is not None:
        return IdleTimeoutPolicy(idle_s=idle_s)
    return None


def evaluate(
    workload: Workload,
    params: HGFSParams | None = None,
    *,
    idle_s: int | None = None,
    dispatcher: str = "easy",
) -> Objectives:
    """Replay ``workload`` under HGFS ``params`` (or the idle timeout ``idle_s``, or no
    policy) and measure the three objectives."""
    cluster = SimulatedCluster(
        list(workload.nodes),
        list(workload.jobs),
        workload.cap,
        power_failure_p=workload.power_failure_p,
        seed=workload.seed,
    )
    replay(cluster, registry.create(dispatcher), power_policy=policy_for(params, idle_s))
    return replay_objectives(cluster, workload.nodes)


def replay_objectives(cluster: SimulatedCluster, nodes: Sequence[Node]) -> Objectives:
    """The objectives of ``cluster``'s finished replay of ``nodes`` (their starting states)."""
    metrics = schedule_metrics(outcomes(cluster))
    always_on = cluster.energy_j + cluster.power_saved_j
    paper_j, weight_j = paper_saved_j(cluster, nodes), idle_weight_j(cluster, nodes)
    return Objectives(
        qos_p90=float(metrics["qos_p90"]),
        saved_fraction=cluster.power_saved_j / always_on if always_on > 0 else 0.0,
        reconfigurations=cluster.power_commands,
        energy_kwh=cluster.energy_j / 3.6e6,
        paper_saved_fraction=paper_j / weight_j if weight_j > 0 else 0.0,
        saved_kwh=cluster.power_saved_j / 3.6e6,
        paper_saved_kwh=paper_j / 3.6e6,
        power_failures=cluster.power_failures,
    )


def idle_ceiling(cluster: SimulatedCluster, nodes: Sequence[Node], measure: str = TUNED) -> float:
    """The most a power policy could have saved on ``cluster``'s finished replay, in
    ``measure`` (:func:`~.measures.ceilings`): every one of ``nodes`` off, for free and at
    once, whenever it ran nothing, with the very same job starts. A node is off only while it
    runs nothing, so no replay saves more than its own ceiling."""
    return ceilings(cluster, nodes)[measure]


def saving_ceilings(workload: Workload, dispatcher: str = "easy") -> dict[str, float]:
    """:func:`~.measures.ceilings` of ``workload``'s always-on schedule, in both measures:
    what there is to save without delaying any job. A policy that delays jobs runs a
    different schedule, whose own ceiling may be higher (a longer schedule idles longer): a
    target above this figure can only be met by stretching the schedule."""
    cluster = SimulatedCluster(list(workload.nodes), list(workload.jobs), workload.cap)
    replay(cluster, registry.create(dispatcher))
    return ceilings(cluster, workload.nodes)


def saving_ceiling(workload: Workload, dispatcher: str = "easy", measure: str = TUNED) -> float:
    """:func:`saving_ceilings` in one ``measure`` (the tuned one by default)."""
    return saving_ceilings(workload, dispatcher)[measure]
