"""Replays with a node power policy: every job runs, on nodes that are on, under the cap,
with less energy than without the policy, deterministically."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from power_builders import bursty_workload, cluster_nodes, job

from wattsched.connectors.simulated import SimulatedCluster
from wattsched.daemon.replay import ReplayResult, replay
from wattsched.powerctl.hgfs import HGFSPolicy
from wattsched.powerctl.idle_timeout import IdleTimeoutPolicy
from wattsched.powerctl.policy import PowerPolicy
from wattsched.scheduler import dispatcher as registry
from wattsched.scheduler.model import Node, PowerCap, PowerState
from wattsched.scheduler.validate import Executed, validate_schedule

CAP_W = 1000.0  # 8 nodes idle at 100 W each, plus room for about 20 busy cores

POLICIES: dict[str, Callable[[], PowerPolicy | None]] = {
    "none": lambda: None,
    "idle": lambda: IdleTimeoutPolicy(idle_s=600),
    "hgfs": lambda: HGFSPolicy(),
}


def run(policy: str, dispatcher: str = "easy") -> ReplayResult:
    cluster = SimulatedCluster(cluster_nodes(8), bursty_workload(), PowerCap.constant(CAP_W))
    return replay(cluster, registry.create(dispatcher), power_policy=POLICIES[policy]())


def on_intervals(nodes: list[Node], cluster: SimulatedCluster) -> dict[str, list[list[float]]]:
    """When each node was ON, rebuilt from the accepted power commands and boot times."""
    boot = {n.name: n.boot_s for n in nodes}
    out: dict[str, list[list[float]]] = {
        n.name: [[cluster.start_time, float("inf")]] if n.state is PowerState.ON else []
        for n in nodes
    }
    for t, name, on in cluster.power_log:
        spans = out[name]
        if on:
            spans.append([t + boot[name], float("inf")])
        else:
            assert spans and spans[-1][1] == float("inf"), f"{name} switched off while not on"
            spans[-1][1] = t
    return out


def check_replay(result: ReplayResult) -> None:
    cluster = result.cluster
    nodes = cluster_nodes(8)
    records = list(cluster.records.values())
    # every job ran, and none was refused
    assert len(records) == 60 and all(r.start is not None for r in records)
    assert not cluster.unfinished() and result.start_errors == 0 and result.power_errors == 0
    # the power cap held at every instant (the simulator integrates it piecewise)
    assert cluster.cap_violation_s == 0 and cluster.peak_power_w <= CAP_W
    # capacity, submit times, units: the independent checker (power is checked above, as
    # validate_schedule assumes static power states)
    runs = [Executed(r.job, r.start, r.end, r.nodes) for r in records]
    assert validate_schedule(nodes, runs, PowerCap.unlimited()) == []
    # every unit ran on a node that was on for the whole run
    spans = on_intervals(nodes, cluster)
    for r in records:
        for name in r.nodes:
            assert any(a <= r.start and r.end <= b for a, b in spans[name]), (r.job.id, name)


@pytest.mark.parametrize("dispatcher", ["easy", "prb"])
@pytest.mark.parametrize("policy", ["idle", "hgfs"])
def test_replay_with_policy_is_feasible_and_saves_energy(policy: str, dispatcher: str) -> None:
    base = run("none", dispatcher)
    res = run(policy, dispatcher)
    check_replay(base)
    check_replay(res)
    assert base.cluster.power_commands == 0 and base.cluster.power_saved_j == 0
    assert res.cluster.power_commands > 0
    # measured: 14-27 % less energy on this bursty workload
    assert res.cluster.energy_j < 0.9 * base.cluster.energy_j
    assert res.cluster.power_saved_j > 0


@pytest.mark.parametrize("policy", ["idle", "hgfs"])
def test_replay_with_policy_is_deterministic(policy: str) -> None:
    a, b = run(policy), run(policy)
    key = [(r.job.id, r.start, r.end, r.nodes) for r in a.cluster.records.values()]
    assert key == [(r.job.id, r.start, r.end, r.nodes) for r in b.cluster.records.values()]
    assert a.cluster.power_log == b.cluster.power_log
    assert a.cluster.energy_j == b.cluster.energy_j


def test_without_policy_nothing_changes() -> None:
    """The default (no policy) replays exactly as before: no command, no wake-up."""
    a = run("none")
    cluster = SimulatedCluster(cluster_nodes(8), bursty_workload(), PowerCap.constant(CAP_W))
    b = replay(cluster, registry.create("easy"))
    assert a.cycles == b.cycles and a.cluster.energy_j == b.cluster.energy_j
    assert a.cluster.power_log == [] and b.cluster.power_log == []


def test_idle_timeout_wakes_the_replay_when_nothing_else_happens() -> None:
    """One short job, then a long job: the idle nodes go off at exactly idle_s."""
    jobs = [job("short", 0, runtime=100), job("long", 0, runtime=5000)]
    cluster = SimulatedCluster(cluster_nodes(3), jobs, PowerCap.unlimited())
    replay(cluster, registry.create("easy"), power_policy=IdleTimeoutPolicy(idle_s=1000))
    # n2 (most efficient) runs both jobs; n0 and n1 idle from time 0 and go off at 1000
    # (n2 stays on: it runs the long job); no command after the replay ends
    assert [(t, on) for t, _, on in cluster.power_log] == [(1000, False), (1000, False)]
    assert cluster.now == 5000


def test_power_errors_are_counted_not_raised() -> None:
    """A policy naming a busy or unknown node: the safety rules refuse the commands before
    they reach the cluster; they are counted and the replay goes on."""
    from wattsched.powerctl.policy import PowerDecision
    from wattsched.scheduler.model import Plan, Snapshot

    class Reckless(PowerPolicy):
        def decide(self, snap: Snapshot, plan: Plan) -> PowerDecision:
            busy = sorted({n for a in plan.starts_now() for n in a.nodes})
            return PowerDecision(off=(*busy, "nope"))

    jobs = [job("a", 0, runtime=100)]
    cluster = SimulatedCluster(cluster_nodes(2), jobs, PowerCap.unlimited())
    res = replay(cluster, registry.create("easy"), power_policy=Reckless())
    assert res.power_errors >= 2 and cluster.records["a"].end == 100
    assert cluster.power_commands == 0


def test_a_boot_drawing_less_than_idle_does_not_break_the_cap() -> None:
    from wattsched.scheduler.model import Job, NodePowerModel, Resources

    pm = NodePowerModel(idle_w=100.0, core_w=10.0, transition_w=50.0)
    nodes = [
        Node("n0", Resources(cores=4), power=pm, boot_s=100),
        Node("n1", Resources(cores=4), power=pm, state=PowerState.OFF, boot_s=100),
    ]
    jobs = [
        # needs both nodes: n1 boots at 0 (100 + 100 W <= 225 W)
        Job("A", 0, 1000, 2, Resources(cores=4), unit_power_w=5.0, runtime=500),
        # fits n0 during the boot (100 + 50 + 60 <= 225), not after it (100 + 100 + 60)
        Job("B", 10, 1000, 1, Resources(cores=4), unit_power_w=60.0, runtime=500),
    ]
    cluster = SimulatedCluster(nodes, jobs, PowerCap.constant(225.0))
    replay(cluster, registry.create("easy"), power_policy=IdleTimeoutPolicy(idle_s=0, min_on=0))
    assert cluster.cap_violation_s == 0


def test_a_policy_is_asked_again_only_when_its_latest_decision_says() -> None:
    """Each decision's ``recheck_at`` replaces the previous one (None withdraws it): the
    replay does not run a cycle at a time only an older decision named."""
    from wattsched.powerctl.policy import PowerDecision
    from wattsched.scheduler.model import Plan, Snapshot

    class Asker(PowerPolicy):
        def __init__(self) -> None:
            self.asked: list[int] = []

        def decide(self, snap: Snapshot, plan: Plan) -> PowerDecision:
            self.asked.append(snap.time)
            # at 0: ask at 700; at 100 (an end): ask at 400 instead; at 400: never again
            want = {0: 700, 100: 400}.get(snap.time)
            return PowerDecision(recheck_at=want)

    # "a" holds both cores until 100; "b" then runs until 1000: no event between 100 and 1000
    jobs = [job("a", 0, runtime=100, cores=4), job("b", 0, runtime=900, cores=4)]
    cluster = SimulatedCluster(cluster_nodes(1), jobs, PowerCap.unlimited())
    policy = Asker()
    replay(cluster, registry.create("fifo"), power_policy=policy)
    # not at 1000: the workload is done then, and the replay ends without a power step
    assert policy.asked == [0, 100, 400]
    cluster2 = SimulatedCluster(cluster_nodes(1), jobs, PowerCap.unlimited())
    cluster2.replace_wake("p", 50)
    cluster2.replace_wake("p", None)
    cluster2.replace_wake("q", 70)
    assert cluster2.next_event_time() == 70


def test_no_switch_is_counted_once_the_workload_is_done() -> None:
    """The replay ends at the last job's end: a policy that powers every idle node off is not
    asked then (its commands would change no energy and no wait, only the count)."""
    from wattsched.powerctl.policy import PowerDecision
    from wattsched.scheduler.model import Plan, PowerState, Snapshot

    class AllOff(PowerPolicy):
        def decide(self, snap: Snapshot, plan: Plan) -> PowerDecision:
            busy = {n for rj in snap.running for n in rj.nodes}
            busy |= {n for a in plan.assignments for n in a.nodes}
            idle = [n.name for n in snap.nodes if n.state is PowerState.ON and n.name not in busy]
            return PowerDecision(off=tuple(idle))

    jobs = [job("a", 0, runtime=100, cores=4), job("b", 0, runtime=300, cores=4)]
    cluster = SimulatedCluster(cluster_nodes(2), jobs, PowerCap.unlimited())
    replay(cluster, registry.create("fifo"), power_policy=AllOff())
    assert cluster.now == 300
    # n-a's node goes off when "a" ends at 100; nothing is switched at 300, the end
    assert [t for t, _, _ in cluster.power_log] == [100]


@pytest.mark.parametrize("policy", ["idle", "hgfs"])
def test_no_cap_skips_the_draw_and_changes_no_decision(policy: str) -> None:
    """With no cap the policies do not compute the draw (no switch can break an infinite
    cap); a finite cap too high to matter computes it: every switch and start is the same."""

    def replayed(cap: PowerCap) -> tuple[object, ...]:
        cluster = SimulatedCluster(cluster_nodes(8), bursty_workload(), cap)
        replay(cluster, registry.create("easy"), power_policy=POLICIES[policy]())
        starts = sorted((r.job.id, r.start, r.nodes) for r in cluster.records.values())
        return tuple(cluster.power_log), tuple(starts)

    assert not PowerCap.unlimited().limited and PowerCap.constant(1e12).limited
    free, huge = replayed(PowerCap.unlimited()), replayed(PowerCap.constant(1e12))
    assert free[0], "the policy switched nothing: the comparison says nothing"
    assert free == huge
