"""The safety rules of DESIGN.md, the decision type and EECluster's node ordering."""

from __future__ import annotations

import pytest
from power_builders import job, node, plan, running, snapshot

from wattsched.powerctl.policy import (
    PowerDecision,
    PowerPolicyError,
    power_off_refusal,
    safe_to_power_off,
)
from wattsched.powerctl.selection import order_for_off, order_for_on, power_on_candidates
from wattsched.scheduler.model import PowerState

T = 10_000
BACKOFF = 3600


@pytest.mark.parametrize(
    ("case", "safe", "why"),
    [
        # an idle, available ON node that never failed may go off
        ("idle", True, None),
        # rule: never a node that runs a job
        ("runs_job", False, "runs a job"),
        # rule: never a node the plan starts a job on now
        ("planned_now", False, "planned"),
        # rule: never a node the plan names for a later start
        ("planned_later", False, "planned"),
        # rule: never a node drained or reserved by an admin
        ("drained", False, "drained"),
        # rule: never a node that failed a power command less than the back-off ago
        ("recent_failure", False, "failed a power command"),
        # a failure older than the back-off no longer blocks
        ("old_failure", True, None),
        # only ON nodes can be powered off (booting, shutting down, off, failed cannot)
        ("booting", False, "not on"),
        ("shutting_down", False, "not on"),
        ("off", False, "not on"),
        ("failed", False, "not on"),
    ],
)
def test_safety_rules(case: str, safe: bool, why: str | None) -> None:
    j = job("a", cores=1)
    states = {
        "booting": PowerState.BOOTING,
        "shutting_down": PowerState.SHUTTING_DOWN,
        "off": PowerState.OFF,
        "failed": PowerState.FAILED,
    }
    n = node(
        "n1",
        state=states.get(case, PowerState.ON),
        available=case != "drained",
        last_power_failure={"recent_failure": T - 60, "old_failure": T - BACKOFF}.get(case),
    )
    other = node("n2")
    run = [running(j, ["n1"])] if case == "runs_job" else []
    queued = [job("q", T - 5)] if case.startswith("planned") else []
    p = plan(T)
    if case == "planned_now":
        p = plan(T, ("q", T, ["n1"]))
    elif case == "planned_later":
        p = plan(T, ("q", T + 500, ["n1"]))
    snap = snapshot(T, [n, other], run=run, queued=queued)
    assert safe_to_power_off(n, snap, p, BACKOFF) is safe
    refusal = power_off_refusal(n, snap, p, BACKOFF)
    if why is None:
        assert refusal is None
    else:
        assert refusal is not None and why in refusal and "n1" in refusal


def test_decision_refuses_a_node_both_off_and_on() -> None:
    with pytest.raises(PowerPolicyError, match="n1"):
        PowerDecision(off=("n1",), on=("n1", "n2"))
    assert PowerDecision().empty
    assert not PowerDecision(on=("n2",)).empty


def test_node_order_follows_eecluster() -> None:
    nodes = [
        node("eff_low", efficiency=0.5),
        node("eff_high", efficiency=2.0),
        node("eff_mid", efficiency=1.0),
        node("failed_late", efficiency=9.0, last_power_failure=500),
        node("failed_early", efficiency=0.1, last_power_failure=100),
    ]
    # Off: least efficient first; nodes that failed last, the oldest failure first.
    assert [n.name for n in order_for_off(nodes)] == [
        "eff_low",
        "eff_mid",
        "eff_high",
        "failed_early",
        "failed_late",
    ]
    # On: most efficient first; failed nodes last, the oldest failure first.
    assert [n.name for n in order_for_on(nodes)] == [
        "eff_high",
        "eff_mid",
        "eff_low",
        "failed_early",
        "failed_late",
    ]


def test_power_on_candidates_skip_drained_and_recent_failures() -> None:
    nodes = [
        node("on", state=PowerState.ON),
        node("off_ok", state=PowerState.OFF),
        node("off_drained", state=PowerState.OFF, available=False),
        node("off_recent", state=PowerState.OFF, last_power_failure=T - 10),
        node("failed_old", state=PowerState.FAILED, last_power_failure=T - 2 * BACKOFF),
        node("booting", state=PowerState.BOOTING),
    ]
    got = [n.name for n in power_on_candidates(snapshot(T, nodes), BACKOFF)]
    assert got == ["off_ok", "failed_old"]
