"""One contract suite, run against every connector (real Slurm, the simulated cluster)."""

from __future__ import annotations

import time

import pytest
from harnesses import Harness

from wattsched.connectors.base import Capability, PlacementError, UnknownJobError
from wattsched.scheduler.model import Job, Placement, PowerState


def _queued(h: Harness, job_id: str) -> Job | None:
    return next((j for j in h.connector.snapshot().queued if j.id == job_id), None)


def _two_nodes(h: Harness) -> tuple[str, str]:
    """Two nodes the RMS would not pick by itself (both units on one host if only one)."""
    names = sorted(n.name for n in h.connector.snapshot().nodes)
    return (names[-1], names[1]) if len(names) >= 2 else (names[0], names[0])


def test_snapshot_shows_nodes_and_waiting_job(backend: Harness) -> None:
    jid = backend.submit(2)
    snap = backend.connector.snapshot()
    assert len(snap.nodes) >= 1
    assert all(n.state is PowerState.ON and n.available for n in snap.nodes)
    assert all(n.capacity.cores == 4 for n in snap.nodes)
    job = next(j for j in snap.queued if j.id == jid)
    assert job.units == 2
    assert job.unit.cores == 1
    assert not job.held, "a job waiting for wattsched must be dispatchable"
    assert snap.running == ()
    assert Capability.START in backend.connector.capabilities


def test_start_runs_job_on_exactly_the_chosen_nodes(backend: Harness) -> None:
    chosen = _two_nodes(backend)
    jid = backend.submit(2)
    res = backend.connector.start(jid, chosen)
    assert res.job_id == jid
    ran = backend.ran_on(jid)
    assert ran is not None, "job did not start"
    assert sorted(set(ran)) == sorted(set(chosen))
    snap = backend.connector.snapshot()
    run = next(r for r in snap.running if r.job.id == jid)
    assert sorted(run.nodes) == sorted(chosen)
    assert run.end_estimate >= run.start
    assert all(j.id != jid for j in snap.queued)


def test_a_start_that_breaks_the_placement_rule_is_refused(backend: Harness) -> None:
    jid = backend.submit(2)
    job = _queued(backend, jid)
    assert job is not None
    names = sorted(n.name for n in backend.connector.snapshot().nodes)
    if job.placement is Placement.SCATTER:
        bad = [names[0], names[0]]
    elif job.placement is Placement.PACK and len(names) >= 2:
        bad = names[:2]
    else:
        pytest.skip(f"not applicable: {backend.name} has no rule a 2-unit start can break here")
    with pytest.raises(PlacementError) as err:
        backend.connector.start(jid, bad)
    assert err.value.job_id == jid and list(err.value.nodes) == bad
    assert backend.ran_on(jid, timeout=0.5) is None
    assert _queued(backend, jid) is not None, "the refused job must stay queued, unchanged"


def test_start_twice_is_refused(backend: Harness) -> None:
    jid = backend.submit(1)
    node = backend.connector.snapshot().nodes[0].name
    backend.connector.start(jid, [node])
    assert backend.ran_on(jid) is not None
    with pytest.raises(UnknownJobError):
        backend.connector.start(jid, [node])


def test_unknown_job_is_a_typed_error(backend: Harness) -> None:
    node = backend.connector.snapshot().nodes[0].name
    with pytest.raises(UnknownJobError):
        backend.connector.start("987654", [node])
    with pytest.raises(UnknownJobError):
        backend.connector.hold("987654")


def test_hold_then_release(backend: Harness) -> None:
    jid = backend.submit(1)
    backend.connector.release(jid)
    if backend.rms_starts_released:
        assert backend.ran_on(jid) is not None, "a released job is the RMS's to start"
    jid2 = backend.submit(1)
    backend.connector.hold(jid2)
    if backend.rms_starts_released:
        # A witness submitted after jid2 and released: the scheduler pass that starts it
        # would start jid2 too if the hold did not hold.
        witness = backend.submit(1)
        backend.connector.release(witness)
        assert backend.ran_on(witness) is not None
    assert backend.ran_on(jid2, timeout=0.5) is None, "a held job must not start by itself"
    assert _queued(backend, jid2) is not None


def test_power_off_and_on_through_the_rms(backend: Harness) -> None:
    if Capability.POWER not in backend.connector.capabilities:
        pytest.skip(
            f"not applicable: {backend.name} has no power saving command (no Capability.POWER)"
        )
    node = sorted(n.name for n in backend.connector.snapshot().nodes)[-1]
    backend.connector.power(node, on=False)
    assert backend.node_power(node) in (PowerState.SHUTTING_DOWN, PowerState.OFF)
    if backend.name == "simulated":
        return  # the simulator's delays run on its virtual clock (tested in its own suite)
    deadline = time.monotonic() + backend.power_timeout_s
    while backend.node_power(node) is not PowerState.OFF and time.monotonic() < deadline:
        time.sleep(0.5)
    assert backend.node_power(node) is PowerState.OFF, backend.diagnose(node)
    snap_node = next(n for n in backend.connector.snapshot().nodes if n.name == node)
    assert snap_node.state is PowerState.OFF
    assert backend.node_process_alive(node) in (False, None), "node still runs after power off"
    backend.connector.power(node, on=True)
    deadline = time.monotonic() + backend.power_timeout_s
    while backend.node_power(node) is not PowerState.ON and time.monotonic() < deadline:
        time.sleep(0.5)
    assert backend.node_power(node) is PowerState.ON, backend.diagnose(node)
    assert backend.node_process_alive(node) in (True, None)
