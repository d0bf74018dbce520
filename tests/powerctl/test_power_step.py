"""The cycle's power step: safety rules checked for every command whatever asked for it (a
property over random snapshots and plans), and the power book's state machine with its time
limits."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from power_builders import job, node, plan, running, snapshot

from wattsched.daemon.acting import MemoryJournal
from wattsched.daemon.power_cycle import PowerControl, apply_power_policy
from wattsched.powerctl.drivers.base import PowerCommandTimeout, PowerDriver
from wattsched.powerctl.machine import PowerBook
from wattsched.powerctl.policy import PowerDecision, PowerPolicy
from wattsched.powerctl.switching import Switcher
from wattsched.scheduler.model import Plan, PowerState, Snapshot

T = 100_000


class Recording(PowerDriver):
    """Accepts every command and remembers it (the property is about what reaches a driver)."""

    name = "recording"

    def __init__(self) -> None:
        self.sent: list[tuple[str, bool]] = []

    def switch(self, node: str, on: bool) -> None:
        self.sent.append((node, on))

    def status(self, node: str) -> bool | None:
        return None


class Reckless(PowerPolicy):
    """Asks to switch off whatever it is told to."""

    def __init__(self, off: tuple[str, ...], on: tuple[str, ...] = ()) -> None:
        self.off, self.on = off, on

    def decide(self, snap: Snapshot, plan: Plan) -> PowerDecision:
        return PowerDecision(off=self.off, on=self.on)


@st.composite
def cases(draw: Any) -> tuple[Snapshot, Plan, tuple[str, ...]]:
    n = draw(st.integers(1, 8))
    names = [f"n{i}" for i in range(n)]
    nodes = [
        node(
            name,
            state=draw(st.sampled_from(list(PowerState))),
            available=draw(st.booleans()),
            last_power_failure=draw(st.sampled_from([None, T - 10, T - 10_000])),
        )
        for name in names
    ]
    busy = draw(st.lists(st.sampled_from(names), unique=True, max_size=n))
    run = [running(job(f"r{i}"), [b]) for i, b in enumerate(busy)]
    planned = draw(st.lists(st.sampled_from(names), unique=True, max_size=n))
    p = plan(T, *[(f"q{i}", T + draw(st.integers(0, 5000)), [x]) for i, x in enumerate(planned)])
    off = tuple(draw(st.lists(st.sampled_from(names), unique=True, max_size=n)))
    return snapshot(T, nodes, run=run), p, off


@settings(max_examples=300, deadline=None)
@given(cases())
def test_no_command_reaches_a_busy_planned_drained_or_backed_off_node(
    case: tuple[Snapshot, Plan, tuple[str, ...]],
) -> None:
    snap, p, off = case
    driver = Recording()
    control = PowerControl(Switcher(driver, max_parallel=1), Reckless(off), backoff_s=3600)
    out = apply_power_policy(control, object(), MemoryJournal(), snap, p)  # type: ignore[arg-type]
    busy = {n for rj in snap.running for n in rj.nodes}
    planned = {n for a in p.assignments for n in a.nodes}
    by_name = {n.name: n for n in snap.nodes}
    for name, on in driver.sent:
        assert not on
        n = by_name[name]
        assert n.state is PowerState.ON and n.available
        assert name not in busy and name not in planned
        assert n.last_power_failure is None or T - n.last_power_failure >= 3600
    assert len(driver.sent) + len(out.refused) == len(off)


def test_the_book_marks_a_node_failed_when_it_does_not_come_back() -> None:
    book = PowerBook(boot_timeout_s=300, shutdown_timeout_s=60)
    off = node("n1", state=PowerState.OFF)
    book.commanded(off, True, 1000)
    # The RMS still reports it off (not back yet): booting until the limit, then failed.
    assert book.overlay(snapshot(1200, [off])).nodes[0].state is PowerState.BOOTING
    late = book.overlay(snapshot(1301, [off])).nodes[0]
    assert late.state is PowerState.FAILED and late.last_power_failure == 1301
    assert book.timed_out and book.timed_out[0][:2] == ("n1", 1301)
    # It comes back later: on, the failure kept for the back-off.
    back = book.overlay(snapshot(1400, [node("n1")])).nodes[0]
    assert back.state is PowerState.ON and back.last_power_failure == 1301


def test_a_node_switched_off_through_its_bmc_stays_off_whatever_the_rms_calls_it() -> None:
    book = PowerBook(boot_timeout_s=300, shutdown_timeout_s=60)
    book.commanded(node("n1"), False, 1000)
    # Slurm, not told, sees a node that stopped answering: down (failed, unavailable).
    down = node("n1", state=PowerState.FAILED, available=False)
    assert book.overlay(snapshot(1010, [down])).nodes[0].state is PowerState.SHUTTING_DOWN
    assert book.overlay(snapshot(1100, [down])).nodes[0].state is PowerState.FAILED  # late
    book2 = PowerBook(boot_timeout_s=300, shutdown_timeout_s=60)
    book2.commanded(node("n1"), False, 1000)
    gone = node("n1", state=PowerState.OFF)
    assert book2.overlay(snapshot(1010, [gone])).nodes[0].state is PowerState.OFF
    later = book2.overlay(snapshot(2000, [down])).nodes[0]
    assert later.state is PowerState.OFF
    # Down for the RMS because we switched it off: it may be switched on again (not drained).
    assert later.available


def test_a_command_that_timed_out_leaves_the_node_unknown_until_seen() -> None:
    class Hangs(Recording):
        def switch(self, node: str, on: bool) -> None:
            raise PowerCommandTimeout(node, "took more than 1 s")

    control = PowerControl(Switcher(Hangs(), attempts=1), Reckless(("n1",)))
    snap = snapshot(T, [node("n1"), node("n2")])
    out = apply_power_policy(control, object(), MemoryJournal(), snap, plan(T))  # type: ignore[arg-type]
    assert out.failed and out.failed[0][0] == "n1"
    seen = control.observe(snapshot(T + 5, [node("n1"), node("n2")]))
    # The RMS still says on: the book does not trust it, and the back-off starts.
    assert seen.nodes[0].state is PowerState.UNKNOWN and seen.nodes[0].last_power_failure == T
    assert seen.nodes[1].state is PowerState.ON
    # Seen off later: off.
    assert (
        control.observe(snapshot(T + 50, [node("n1", state=PowerState.OFF)])).nodes[0].state
        is PowerState.OFF
    )
