"""EECluster's HGFS policy: parameters, the TSK rule base, crisp rules, node choice."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from power_builders import cluster_nodes, job, node, plan, running, snapshot

from wattsched.powerctl.hgfs import HGFSParams, HGFSPolicy
from wattsched.powerctl.policy import PowerPolicyError
from wattsched.powerctl.tuning.encoding import idle_timeout_like
from wattsched.scheduler.model import PowerState

# Three sets over idle time: SHORT peaks at 0, MEDIUM at 1000 s, LARGE at 3000 s.
P = HGFSParams(
    centers=(0.0, 1000.0, 3000.0),
    weights=(0.0, 0.5, 1.0),
    wait_on_s=600.0,
    queue_on=3,
    min_on=1,
)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"centers": ()}, "centers"),  # no fuzzy set
        ({"centers": (0.0, 10.0), "weights": (0.5,)}, "weights"),  # one weight per set
        ({"centers": (0.0, 10.0, 10.0), "weights": (0, 0, 1)}, "centers"),  # not increasing
        ({"centers": (-5.0, 10.0), "weights": (0, 1)}, "centers"),  # negative idle time
        ({"centers": (0.0, float("inf")), "weights": (0, 1)}, "centers"),  # not finite
        ({"weights": (0.0, 0.3, 1.5)}, "weights"),  # a weight above 1
        ({"weights": (-0.1, 0.3, 1.0)}, "weights"),  # a weight below 0
        ({"wait_on_s": -1.0}, "wait_on_s"),  # a negative wait threshold
        ({"wait_on_s": float("nan")}, "wait_on_s"),  # not a number
        ({"queue_on": -1}, "queue_on"),  # a negative queue threshold
        ({"wait_off_s": 700.0, "wait_on_s": 600.0}, "wait_off_s"),  # off above on: both fire
        ({"queue_off": 5, "queue_on": 3}, "queue_off"),  # off above on: both fire
        ({"period_s": 0}, "period_s"),  # no recheck period
        ({"min_on": -1}, "min_on"),  # a negative floor
        ({"need_on": 1.5}, "need_on"),  # more than the whole queue's need
        ({"spare_on": -2}, "spare_on"),  # a negative reserve
    ],
)
def test_bad_parameters_are_refused_by_name(kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(PowerPolicyError, match=field) as err:
        HGFSParams(**kwargs)
    assert err.value.name == field


@pytest.mark.parametrize(
    ("idle", "mu", "truth"),
    [
        (0.0, (1.0, 0.0, 0.0), 0.0),  # SHORT only
        (500.0, (0.5, 0.5, 0.0), 0.25),  # half SHORT, half MEDIUM
        (1000.0, (0.0, 1.0, 0.0), 0.5),  # MEDIUM
        (2000.0, (0.0, 0.5, 0.5), 0.75),
        (3000.0, (0.0, 0.0, 1.0), 1.0),  # LARGE
        (9000.0, (0.0, 0.0, 1.0), 1.0),  # the last set saturates
    ],
)
def test_triangular_partition_and_tsk_truth(
    idle: float, mu: tuple[float, ...], truth: float
) -> None:
    assert P.memberships(idle) == pytest.approx(mu)
    assert sum(P.memberships(idle)) == pytest.approx(1.0)
    assert P.truth(idle) == pytest.approx(truth)


def test_fuzzy_count_is_the_floor_of_summed_truths() -> None:
    assert P.fuzzy_off_count([500.0, 500.0, 500.0]) == 0  # 0.75
    assert P.fuzzy_off_count([1000.0, 1000.0]) == 1  # 1.0
    assert P.fuzzy_off_count([2000.0, 2000.0, 3000.0]) == 2  # 2.5


def test_fuzzy_rules_power_off_least_efficient_idle_nodes() -> None:
    nodes = cluster_nodes(4)
    pol = HGFSPolicy(P)
    d0 = pol.decide(snapshot(0, nodes), plan(0))
    # 4 nodes x truth(600 s) = 4 x 0.3 = 1.2: the count first grows after two 300 s periods
    assert d0.empty and d0.recheck_at == 600
    # at 1000 s every node has truth 0.5: 4 x 0.5 = 2 nodes off
    d = pol.decide(snapshot(1000, nodes), plan(1000))
    assert d.off == ("n0", "n1")
    # at 3000 s: truth 1 each, but min_on keeps one on
    d = pol.decide(snapshot(3000, nodes), plan(3000))
    assert d.off == ("n0", "n1", "n2") and d.recheck_at is None


def test_next_count_change_and_the_rule2_wake_up() -> None:
    assert P.next_count_change([]) is None
    assert P.next_count_change([0.0, 0.0]) == 1200  # 2 x 0.45 at 900 s, 2 x 0.55 at 1200 s
    assert P.next_count_change([3000.0, 4000.0]) is None  # saturated
    nodes = [node("n0"), node("n1"), node("n2", state=PowerState.OFF)]
    pol = HGFSPolicy(P)
    pol.decide(snapshot(0, nodes), plan(0))
    # one job waiting since 100 with n0 running and n1 planned: rule 2 fires at 100 + 600 + 1
    q = job("q", 100)
    d = pol.decide(snapshot(300, nodes, queued=[q]), plan(300, ("q", 5000, ["n0", "n1"])))
    assert d.empty and d.recheck_at == 701


def test_rule1_keeps_room_for_the_largest_queued_job() -> None:
    nodes = cluster_nodes(4)
    pol = HGFSPolicy(P)
    pol.decide(snapshot(0, nodes), plan(0))
    big = job("big", 2900, units=3, cores=4)  # 12 slots: only one of 4 nodes may go off
    d = pol.decide(snapshot(3000, nodes, queued=[big]), plan(3000))
    assert d.off == ("n0",)


def test_rule1_powers_on_for_the_largest_queued_job() -> None:
    nodes = [node("n0", efficiency=1.0)] + [
        node(f"n{i}", state=PowerState.OFF, efficiency=1.0 + i) for i in (1, 2, 3)
    ]
    pol = HGFSPolicy(P)
    d = pol.decide(snapshot(10, nodes, queued=[job("big", 5, units=3, cores=4)]), plan(10))
    assert d.on == ("n3", "n2") and d.off == ()


def test_rule2_powers_on_one_node_on_long_waits_or_long_queues() -> None:
    nodes = [node("n0")] + [node(f"n{i}", state=PowerState.OFF, efficiency=2.0) for i in (1, 2)]
    pol = HGFSPolicy(P)
    small = [job("a", 0)]
    assert pol.decide(snapshot(100, nodes, queued=small), plan(100)).on == ()
    # mean wait 700 s > 600 s: one node on, the most efficient (ties by name)
    d = pol.decide(snapshot(700, nodes, queued=small), plan(700))
    assert d.on == ("n1",) and d.recheck_at == 1000
    many = [job(f"q{k}", 650) for k in range(4)]  # 4 queued > 3
    assert pol.decide(snapshot(700, nodes, queued=many), plan(700)).on == ("n1",)


def test_rule1b_powers_on_for_a_share_of_the_queues_pooled_need() -> None:
    # n0 (4 cores) runs a job; 3 nodes off; 3 two-core jobs wait 1 s (rules 1 and 2 silent).
    nodes = [node("n0")] + [node(f"n{i}", state=PowerState.OFF) for i in (1, 2, 3)]
    busy = running(job("r", 0, cores=4), ["n0"])
    queued = [job(f"q{k}", 9, cores=2) for k in range(3)]
    snap = snapshot(10, nodes, queued=queued, run=[busy])
    assert HGFSPolicy(P).decide(snap, plan(10)).on == ()  # the paper's rules: none
    assert HGFSPolicy(replace(P, need_on=1.0)).decide(snap, plan(10)).on == ("n1", "n2")
    assert HGFSPolicy(replace(P, need_on=0.5)).decide(snap, plan(10)).on == ("n1",)


def test_rule1b_powers_off_no_node_the_queues_share_needs() -> None:
    params = replace(P, weights=(1.0, 1.0, 1.0), min_on=0)  # every idle node may go off
    nodes = cluster_nodes(3)
    queued = [job(f"q{k}", 0, cores=2) for k in range(3)]  # 6 cores; each node has 4
    for need_on, n_off in ((0.0, 2), (0.5, 2), (1.0, 1)):
        pol = HGFSPolicy(replace(params, need_on=need_on))
        pol.decide(snapshot(0, nodes), plan(0))
        d = pol.decide(snapshot(100, nodes, queued=queued), plan(100))
        assert len(d.off) == n_off, need_on


def test_rule4_keeps_a_reserve_of_idle_powered_nodes() -> None:
    params = replace(P, weights=(1.0, 1.0, 1.0), min_on=0, spare_on=2)
    nodes = cluster_nodes(4)
    pol = HGFSPolicy(params)
    pol.decide(snapshot(0, nodes), plan(0))
    assert len(pol.decide(snapshot(10, nodes), plan(10)).off) == 2  # 2 of 4 idle stay on
    # two of three powered nodes busy, one idle and one off: the reserve powers one on
    nodes = [node("n0"), node("n1"), node("n2"), node("n3", state=PowerState.OFF)]
    runs = [running(job("a", 0), ["n0"]), running(job("b", 0), ["n1"])]
    pol = HGFSPolicy(params)
    assert pol.decide(snapshot(20, nodes, run=runs), plan(20)).on == ("n3",)


@pytest.mark.parametrize("idle_s", [300, 900, 3600])
def test_the_idle_timeout_seed_switches_off_at_its_timeout(idle_s: int) -> None:
    like = idle_timeout_like(idle_s)
    assert like is not None and like.need_on == 1.0
    assert like.truth(idle_s - 60) == 0.0 and like.truth(idle_s) == 1.0
    pol = HGFSPolicy(like)
    nodes = cluster_nodes(3)
    pol.decide(snapshot(0, nodes), plan(0))
    assert pol.decide(snapshot(idle_s - 60, nodes), plan(idle_s - 60)).off == ()
    assert len(pol.decide(snapshot(idle_s, nodes), plan(idle_s)).off) == 2  # min_on 1


def test_rule3_powers_off_one_node_on_short_queues() -> None:
    params = replace(P, wait_off_s=10.0, weights=(0.0, 0.0, 0.0))  # fuzzy rules silent
    nodes = cluster_nodes(3)
    pol = HGFSPolicy(params)
    assert pol.decide(snapshot(0, nodes), plan(0)).off == ("n0",)


def test_failed_nodes_go_last_and_recent_failures_never() -> None:
    nodes = [
        node("a", efficiency=0.5, last_power_failure=0),  # old failure: allowed, but last
        node("b", efficiency=3.0),
        node("c", efficiency=0.1, last_power_failure=9000),  # within the back-off: never
        node("d", efficiency=5.0),
    ]
    pol = HGFSPolicy(replace(P, min_on=0, backoff_s=3600))
    pol.decide(snapshot(6000, nodes), plan(6000))
    d = pol.decide(snapshot(9500, nodes), plan(9500))
    assert d.off == ("b", "d", "a")


def test_rule1_counts_every_resource_not_only_cores() -> None:
    from wattsched.scheduler.model import Job, Resources

    nodes = [node("n0"), node("n1", state=PowerState.OFF)]  # 4 cores, 1000 MB each
    hungry = Job("mem", 0, 100, 2, Resources(cores=1, mem_mb=800), runtime=50)
    d = HGFSPolicy(P).decide(snapshot(10, nodes, queued=[hungry]), plan(10))
    assert d.on == ("n1",)  # 2 cores fit n0, 1600 MB do not


@settings(max_examples=200, deadline=None)
@given(
    centers=st.lists(st.integers(0, 20_000), min_size=1, max_size=5, unique=True),
    weights=st.lists(st.floats(0.0, 1.0), min_size=5, max_size=5),
    idle=st.lists(
        st.one_of(st.integers(0, 25_000).map(float), st.floats(0.0, 25_000.0)), max_size=40
    ),
    period=st.integers(1, 3_000),
)
def test_vectorised_truths_and_counts_are_the_scalar_ones(
    centers: list[int], weights: list[float], idle: list[float], period: int
) -> None:
    """The numpy truths equal :meth:`HGFSParams.truth` bit for bit, and the count and its next
    change equal a plain loop over idle times and periods (the replay's decisions hang on
    them; ``tests/daemon/test_replay_equality.py`` pins them on a real trace)."""
    cs = tuple(float(c) for c in sorted(centers))
    p = HGFSParams(centers=cs, weights=tuple(weights[: len(cs)]), period_s=period)
    assert [float(v) for v in p.truths(idle)] == [p.truth(t) for t in idle]

    def count(times: list[float]) -> int:
        return math.floor(sum(p.truth(t) for t in times) + 1e-9)

    assert p.fuzzy_off_count(idle) == count(idle)
    expected = None
    if idle:
        steps = math.ceil(max(0.0, cs[-1] - min(idle)) / period)
        for k in range(1, steps + 1):
            if count([t + k * period for t in idle]) > count(idle):
                expected = k * period
                break
    assert p.next_count_change(idle) == expected


WARM_THEN_HGFS_REPLAY = """
from wattsched.connectors.simulated import SimulatedCluster
from wattsched.daemon.replay import replay
from wattsched.powerctl import fuzzy_kernels as fz
from wattsched.powerctl.hgfs import HGFSParams, HGFSPolicy
from wattsched.scheduler import dispatcher as registry
from wattsched.scheduler import fit_kernels as fk
from wattsched.scheduler.model import Job, Node, NodePowerModel, PowerCap, Resources

policy = HGFSPolicy(HGFSParams(centers=(0.0, 300.0, 900.0), weights=(0.0, 0.5, 1.0)))
fk.warm()
policy.warm()
kernels = (fz.off_count, fz.next_change, fz.truth, fk.first_fit, fk.fit_into, fk.book)
loaded = {k: list(k.signatures) for k in kernels}
nodes = [Node(f"n{i}", Resources(cores=4, mem_mb=8000), NodePowerModel(idle_w=20, core_w=5))
         for i in range(4)]
# Bursts with long gaps: nodes idle, the fuzzy rules count them off, nodes boot again.
jobs = [Job(str(j), 2000 * (j // 5) + j % 5, 600, 1 + j % 2, Resources(cores=1 + j % 4),
            runtime=300) for j in range(30)]
cluster = SimulatedCluster(nodes, jobs, PowerCap.unlimited())
replay(cluster, registry.create("easy"), power_policy=policy)
assert cluster.power_commands > 0, "the replay switched no node: it tests nothing"
print(all(list(k.signatures) == s for k, s in loaded.items()))
"""


def test_warm_loads_the_very_kernels_a_replay_uses() -> None:
    # After the policy's warm(), a HGFS replay compiles no other signature of the fuzzy
    # kernels (nor of the mapper's): warm() passed the argument types the policy passes, so
    # the first replay of a process (a tuning worker's, a benchmark's) pays no numba set-up.
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-c", WARM_THEN_HGFS_REPLAY], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "True", out.stderr
