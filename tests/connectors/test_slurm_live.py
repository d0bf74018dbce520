"""Slurm-only behaviour on the real cluster: the gate, user holds, requeued jobs."""

from __future__ import annotations

import subprocess
import time

import pytest
from harnesses import SlurmHarness

from wattsched.connectors.base import HeldJobError, UnknownNodeError
from wattsched.connectors.rms_options import PowerBusyError
from wattsched.connectors.slurm import SlurmConnector
from wattsched.scheduler.model import PowerState, Snapshot

pytestmark = pytest.mark.slurm


def test_user_held_job_is_not_dispatchable(slurm: SlurmHarness) -> None:
    gated = slurm.submit(1)
    mine = slurm.submit(1, user_hold=True)
    queued = {j.id: j for j in slurm.connector.snapshot().queued}
    assert queued[gated].held is False  # held by job_submit.lua for wattsched
    assert queued[mine].held is True  # held by its user: never dispatched


def _as_nobody(h: SlurmHarness, *args: str) -> subprocess.CompletedProcess[str]:
    """A command run by an ordinary user (nobody), with the cluster's environment."""
    return subprocess.run(
        ["runuser", "-u", "nobody", "--", *args],
        env=h.cluster.env, cwd="/tmp", capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip


def test_an_ordinary_user_cannot_lift_the_gate(slurm: SlurmHarness) -> None:
    sub = _as_nobody(slurm, "sbatch", "--parsable", "-D", "/tmp", "-o", "/dev/null",
                     "--wrap", "sleep 30")  # fmt: skip
    assert sub.returncode == 0, sub.stderr
    jid = sub.stdout.strip().split(";")[0]
    attempts = [
        ("scontrol", "release", jid),
        ("scontrol", "update", f"JobId={jid}", "Priority=100"),
        ("scontrol", "uhold", jid),  # a user hold of the user's own...
        ("scontrol", "release", jid),  # ...then its release: still refused
    ]
    for args in attempts:
        r = _as_nobody(slurm, *args)
        if args[1] == "uhold":
            continue
        assert r.returncode != 0, f"{' '.join(args)} lifted the gate: {r.stdout} {r.stderr}"
    denied = _as_nobody(slurm, "scontrol", "release", jid)
    assert denied.returncode != 0 and "denied" in denied.stderr.lower(), denied.stderr
    # Slurm has scheduled since: a witness released by root after the gated job has run.
    witness = slurm.submit(1)
    slurm.connector.release(witness)
    assert slurm.ran_on(witness) is not None
    rec = slurm.cluster.run("scontrol", "show", "job", "-o", jid)
    assert "JobState=PENDING" in rec and "Reason=JobHeldUser" in rec, rec
    job = next(j for j in slurm.connector.snapshot().queued if j.id == jid)
    assert not job.held  # still wattsched's to start, and wattsched (root) can
    slurm.connector.start(jid, ["n3"])
    assert slurm.ran_on(jid) == ("n3",)


def test_an_operators_hold_wins_until_given_back(slurm: SlurmHarness) -> None:
    jid = slurm.submit(1)
    slurm.cluster.run("scontrol", "hold", jid)  # the operator keeps this job back
    job = next(j for j in slurm.connector.snapshot().queued if j.id == jid)
    assert job.held and job.held_by == "operator"
    with pytest.raises(HeldJobError):
        slurm.connector.start(jid, ["n2"])
    assert "Reason=JobHeldAdmin" in slurm.cluster.run("scontrol", "show", "job", "-o", jid)
    slurm.cluster.run("scontrol", "uhold", jid)  # ...and gives it back to wattsched
    job = next(j for j in slurm.connector.snapshot().queued if j.id == jid)
    assert not job.held
    slurm.connector.start(jid, ["n2"])
    assert slurm.ran_on(jid) == ("n2",)


def test_a_job_its_user_holds_is_not_started(slurm: SlurmHarness) -> None:
    jid = slurm.submit(1, user_hold=True)
    job = next(j for j in slurm.connector.snapshot().queued if j.id == jid)
    assert job.held and job.held_by == "user"
    with pytest.raises(HeldJobError):
        slurm.connector.start(jid, ["n2"])
    assert slurm.ran_on(jid, timeout=0.5) is None


def test_a_snapshot_never_acts_on_a_requeued_job(slurm: SlurmHarness) -> None:
    jid = slurm.submit(1)
    slurm.connector.start(jid, ["n2"])
    assert slurm.ran_on(jid) == ("n2",)
    slurm.cluster.run("scontrol", "requeue", jid)
    deadline = time.monotonic() + 15
    show = ("scontrol", "show", "job", "-o", jid)
    while "JobState=PENDING" not in (rec := slurm.cluster.run(*show)):
        assert time.monotonic() < deadline, rec
        time.sleep(0.2)
    assert "Priority=0" not in rec and "Restarts=1" in rec  # requeued: back unheld
    job = next(j for j in slurm.connector.snapshot().queued if j.id == jid)
    rec = slurm.cluster.run("scontrol", "show", "job", "-o", jid)
    assert "Priority=0" not in rec, "a snapshot must not hold a requeued job (the cycle does)"
    assert (job.restarts, job.held_by, job.held) == (1, None, False)
    slurm.connector.start(jid, ["n3"])  # StartTime=now clears the requeue's begin time
    assert slurm.ran_on(jid) == ("n3",)


def test_memory_counts_only_when_slurm_allocates_it(slurm: SlurmHarness) -> None:
    jid = slurm.submit(2)
    job = next(j for j in slurm.connector.snapshot().queued if j.id == jid)
    assert job.unit.mem_mb == 0  # the test cluster runs CR_Core: memory binds nothing
    forced = SlurmConnector(slurm.connector.runner, track_memory=True)
    job = next(j for j in forced.snapshot().queued if j.id == jid)
    assert job.unit.mem_mb == 1000  # Slurm's default request: the node's RealMemory


def test_scontrol_job_source_matches_squeue_json(slurm: SlurmHarness) -> None:
    running = slurm.submit(2)
    slurm.connector.start(running, ["n1", "n4"])
    assert slurm.ran_on(running) is not None
    slurm.submit(1)
    slurm.submit(3, user_hold=True)
    fast = SlurmConnector(slurm.connector.runner, slurm.connector.options, job_source="scontrol")
    a, b = slurm.connector.snapshot(), fast.snapshot()

    def queued(s: Snapshot) -> list[tuple[object, ...]]:
        return sorted((j.id, j.units, j.unit, j.walltime, j.held, j.submit) for j in s.queued)

    def run(s: Snapshot) -> list[tuple[object, ...]]:
        return sorted((r.job.id, r.nodes, r.start, r.job.units) for r in s.running)

    assert queued(a) == queued(b) and len(a.queued) == 2
    assert run(a) == run(b) and len(a.running) == 1


def test_power_up_while_powering_down_is_refused_not_dropped(slurm: SlurmHarness) -> None:
    slurm.connector.power("n4", on=False)
    with pytest.raises(PowerBusyError) as err:
        slurm.connector.power("n4", on=True)  # Slurm itself would accept and drop it
    assert err.value.node == "n4" and "POWER" in err.value.state
    deadline = time.monotonic() + 30
    while slurm.node_power("n4") is not PowerState.OFF and time.monotonic() < deadline:
        time.sleep(0.25)
    slurm.connector.power("n4", on=True)
    deadline = time.monotonic() + 30
    while slurm.node_power("n4") is not PowerState.ON and time.monotonic() < deadline:
        time.sleep(0.25)
    assert slurm.node_power("n4") is PowerState.ON
    with pytest.raises(UnknownNodeError):
        slurm.connector.power("n99", on=True)
