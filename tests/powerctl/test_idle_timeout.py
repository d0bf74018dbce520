"""The idle-timeout baseline on hand-made snapshots."""

from __future__ import annotations

from dataclasses import replace

import pytest
from power_builders import cluster_nodes, job, node, plan, running, snapshot

from wattsched.powerctl.idle_timeout import IdleTimeoutPolicy
from wattsched.powerctl.policy import PowerPolicyError
from wattsched.scheduler.model import PowerState


def test_switches_off_after_idle_s_keeping_min_on() -> None:
    nodes = cluster_nodes(4)
    pol = IdleTimeoutPolicy(idle_s=600, min_on=1)
    first = pol.decide(snapshot(0, nodes), plan(0))
    assert first.empty and first.recheck_at == 600
    assert pol.decide(snapshot(599, nodes), plan(599)).empty
    d = pol.decide(snapshot(600, nodes), plan(600))
    # least efficient first; the most efficient node stays on (min_on=1)
    assert d.off == ("n0", "n1", "n2") and d.on == ()


def test_a_job_resets_the_idle_clock() -> None:
    nodes = cluster_nodes(2)
    pol = IdleTimeoutPolicy(idle_s=600, min_on=0)
    j = job("a", cores=1)
    pol.decide(snapshot(0, nodes), plan(0))
    pol.decide(snapshot(100, nodes, run=[running(j, ["n0"], 100)]), plan(100))
    d = pol.decide(snapshot(300, nodes), plan(300))  # job a ended: n0 idle since 300
    assert d.off == () and d.recheck_at == 600  # n1's deadline comes first
    assert pol.decide(snapshot(600, nodes), plan(600)).off == ("n1",)
    after = [nodes[0], replace(nodes[1], state=PowerState.OFF)]
    assert pol.decide(snapshot(900, after), plan(900)).off == ("n0",)


def test_a_node_the_plan_uses_is_never_switched_off() -> None:
    nodes = cluster_nodes(2)
    pol = IdleTimeoutPolicy(idle_s=0, min_on=0)
    q = job("q", 0)
    d = pol.decide(snapshot(10, nodes, queued=[q]), plan(10, ("q", 10, ["n0"])))
    assert d.off == ("n1",)


def test_restart_only_delays_power_off() -> None:
    nodes = cluster_nodes(3)
    pol = IdleTimeoutPolicy(idle_s=600, min_on=1)
    pol.decide(snapshot(0, nodes), plan(0))
    fresh = IdleTimeoutPolicy(idle_s=600, min_on=1)  # a restarted daemon at t=500
    assert fresh.decide(snapshot(500, nodes), plan(500)).empty
    assert fresh.decide(snapshot(1099, nodes), plan(1099)).empty
    assert fresh.decide(snapshot(1100, nodes), plan(1100)).off == ("n0", "n1")


def test_powers_on_the_most_efficient_off_nodes_when_the_queue_lacks_room() -> None:
    nodes = [node("n0", efficiency=1.0)] + [
        node(f"n{i}", state=PowerState.OFF, efficiency=1.0 + i) for i in (1, 2, 3)
    ]
    pol = IdleTimeoutPolicy(idle_s=0, min_on=1)
    q = job("big", 0, units=2, cores=4)  # 8 cores: 4 free on n0, 4 missing
    d = pol.decide(snapshot(50, nodes, queued=[q]), plan(50))
    assert d.on == ("n3",) and d.off == ()
    # 12 cores missing: three nodes, most efficient first
    q3 = job("bigger", 0, units=4, cores=4)
    assert pol.decide(snapshot(60, nodes, queued=[q3]), plan(60)).on == ("n3", "n2", "n1")


def test_booting_nodes_count_as_room() -> None:
    nodes = [node("n0"), node("n1", state=PowerState.BOOTING), node("n2", state=PowerState.OFF)]
    pol = IdleTimeoutPolicy(idle_s=0, min_on=1)
    d = pol.decide(snapshot(5, nodes, queued=[job("q", 0, units=2, cores=4)]), plan(5))
    assert d.on == () and d.off == ()  # waiting for n1: no power-on, and n0 stays on


def test_a_unit_that_fits_no_on_node_powers_on_a_big_one() -> None:
    nodes = [node("small", cores=4), node("big", cores=16, state=PowerState.OFF)]
    pol = IdleTimeoutPolicy(idle_s=0, min_on=1)
    d = pol.decide(snapshot(5, nodes, queued=[job("wide", 0, cores=8)]), plan(5))
    assert d.on == ("big",)


def test_no_boot_beyond_the_cap() -> None:
    nodes = [node("n0"), node("n1", state=PowerState.OFF)]
    pol = IdleTimeoutPolicy(idle_s=0, min_on=1)
    q = job("q", 0, units=2, cores=4)
    # n0 idles at 100 W; booting n1 adds 100 W: a 150 W cap forbids it
    assert pol.decide(snapshot(5, nodes, queued=[q], cap=150.0), plan(5)).on == ()
    assert pol.decide(snapshot(6, nodes, queued=[q], cap=250.0), plan(6)).on == ("n1",)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"idle_s": -1}, "idle_s"),  # a negative timeout
        ({"min_on": -2}, "min_on"),  # a negative floor
        ({"backoff_s": -5}, "backoff_s"),  # a negative back-off
    ],
)
def test_bad_parameters_are_refused(kwargs: dict[str, int], field: str) -> None:
    with pytest.raises(PowerPolicyError, match=field) as err:
        IdleTimeoutPolicy(**kwargs)
    assert err.value.name == field


def test_every_unit_of_a_queued_job_gets_a_node_it_fits() -> None:
    """Found by the property test: 2 units of 3 cores need both 4-core nodes, although the
    pooled cores of the small nodes would cover them."""
    nodes = [node(f"s{i}", cores=2, state=PowerState.OFF) for i in range(3)] + [
        node("b0", cores=4, state=PowerState.OFF),
        node("b1", cores=4, state=PowerState.OFF),
    ]
    pol = IdleTimeoutPolicy(idle_s=0, min_on=0)
    d = pol.decide(snapshot(0, nodes, queued=[job("w", 0, units=2, cores=3)]), plan(0))
    assert {"b0", "b1"} <= set(d.on)
    # once on, the big nodes are kept while the job waits, the small ones may go
    on = [replace(n, state=PowerState.ON) for n in nodes]
    d = pol.decide(snapshot(1, on, queued=[job("w", 0, units=2, cores=3)]), plan(1))
    assert set(d.off) == {"s0", "s1", "s2"}
