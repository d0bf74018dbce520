"""The daemon's cycle on the real Slurm when a node fails under a job wattsched started: the
requeue is journaled, then the job is planned again on a live node (``replan``), kept back for
an operator (``hold``), or only reported (advise mode: nothing is sent to Slurm). A running
job that is cancelled shows ``cancelled``."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from harnesses import SlurmHarness
from sqlalchemy import select

from wattsched.daemon.loop import Service
from wattsched.daemon.store import Store
from wattsched.daemon.store_models import ActionRow, JobRow
from wattsched.daemon.store_schema import make_engine, migrate
from wattsched.scheduler import dispatcher as registry

pytestmark = pytest.mark.slurm


def service(h: SlurmHarness, tmp_path: Path, *, mode: str, requeue: str) -> Service:
    engine = make_engine(f"sqlite:///{tmp_path / 'w.db'}")
    migrate(engine)
    return Service(
        h.connector, registry.create("prb"), Store(engine), mode=mode,
        requeue=requeue,  # type: ignore[arg-type]
    )  # fmt: skip


def show(h: SlurmHarness, jid: str) -> dict[str, str]:
    line = h.cluster.run("scontrol", "show", "job", "-o", jid)
    return dict(kv.split("=", 1) for kv in line.split() if "=" in kv)


def wait(cond: object, what: str, timeout: float = 60) -> None:
    end = time.monotonic() + timeout
    while not cond():  # type: ignore[operator]
        assert time.monotonic() < end, f"timed out waiting for {what}"
        time.sleep(0.25)


def start_then_fail_its_node(h: SlurmHarness, svc: Service) -> tuple[str, str]:
    """A gated job started by the cycle; its node then fails and Slurm requeues it. The
    fixture's slurmd keeps running, so Slurm would take the node back at once: it is drained
    too, as a node that stays broken (the harness resumes it after the test)."""
    jid = h.submit(1, seconds=300)
    svc.run_now()
    ran = h.ran_on(jid)
    assert ran is not None, "the cycle did not start the job"
    node = ran[0]
    h.cluster.run("scontrol", "update", f"NodeName={node}", "State=DOWN", "Reason=test-failure")
    wait(lambda: show(h, jid).get("JobState") == "PENDING" and show(h, jid)["Restarts"] == "1",
         "Slurm to requeue the job")  # fmt: skip
    h.cluster.run("scontrol", "update", f"NodeName={node}", "State=DRAIN", "Reason=broken")
    assert show(h, jid)["ReqNodeList"] == node  # Slurm keeps the dead node in the request
    return jid, node


def actions(svc: Service, jid: str) -> list[tuple[str, str, int]]:
    with svc.store.sessions() as s:
        rows = s.scalars(select(ActionRow).where(ActionRow.job_id == jid).order_by(ActionRow.id))
        return [(a.kind, a.state, a.incarnation) for a in rows]


def test_replan_starts_a_requeued_job_again_on_a_live_node(
    slurm: SlurmHarness, tmp_path: Path
) -> None:
    svc = service(slurm, tmp_path, mode="enforce", requeue="replan")
    jid, dead = start_then_fail_its_node(slurm, svc)
    svc.run_now()
    ran = slurm.ran_on(jid)
    assert ran is not None and dead not in ran, f"restarted on {ran}"
    assert ("requeue", "done", 1) in actions(svc, jid)
    starts = [a for a in actions(svc, jid) if a[0] == "start"]
    assert starts == [("start", "done", 0), ("start", "done", 1)]  # once per incarnation
    svc.run_now()  # running in its new incarnation: never a third start
    assert [a for a in actions(svc, jid) if a[0] == "start"] == starts


def test_hold_keeps_a_requeued_job_for_an_operator(slurm: SlurmHarness, tmp_path: Path) -> None:
    svc = service(slurm, tmp_path, mode="enforce", requeue="hold")
    jid, _ = start_then_fail_its_node(slurm, svc)
    svc.run_now()
    rec = show(slurm, jid)
    assert rec["JobState"] == "PENDING" and rec["Reason"] == "JobHeldAdmin"
    assert ("requeue", "done", 1) in actions(svc, jid) and ("hold", "done", 1) in actions(svc, jid)
    svc.run_now()
    with svc.store.sessions() as s:
        row = s.get(JobRow, jid)
    assert row is not None and (row.state, row.held_by, row.restarts) == ("queued", "operator", 1)
    assert slurm.ran_on(jid, timeout=0.5) is None
    slurm.cluster.run("scontrol", "uhold", jid)  # the operator gives it back
    svc.run_now()
    assert slurm.ran_on(jid) is not None


def test_advise_mode_only_reports_a_requeue(slurm: SlurmHarness, tmp_path: Path) -> None:
    svc = service(slurm, tmp_path, mode="enforce", requeue="replan")
    jid, _ = start_then_fail_its_node(slurm, svc)
    svc.set_mode("advise")
    svc.run_now()
    rec = show(slurm, jid)
    assert rec["Priority"] != "0" and not rec["Reason"].startswith("JobHeld"), rec
    assert ("requeue", "done", 1) in actions(svc, jid)
    assert not [a for a in actions(svc, jid) if a[0] == "hold"]


def test_a_cancelled_running_job_shows_cancelled(slurm: SlurmHarness, tmp_path: Path) -> None:
    svc = service(slurm, tmp_path, mode="enforce", requeue="replan")
    jid = slurm.submit(1, seconds=300)
    svc.run_now()
    assert slurm.ran_on(jid) is not None
    svc.run_now()
    slurm.cluster.run("scancel", jid)
    wait(lambda: show(slurm, jid).get("JobState") == "CANCELLED", "the cancel")
    svc.run_now()
    with svc.store.sessions() as s:
        row = s.get(JobRow, jid)
    assert row is not None and row.state == "cancelled" and row.started_by == "wattsched"


def test_a_gated_job_started_by_hand_is_journaled_as_an_outside_start(
    slurm: SlurmHarness, tmp_path: Path
) -> None:
    svc = service(slurm, tmp_path, mode="advise", requeue="replan")
    jid = slurm.submit(1, seconds=300)
    svc.run_now()  # seen waiting behind the gate
    slurm.cluster.run("scontrol", "release", jid)  # an operator starts it by hand
    assert slurm.ran_on(jid) is not None
    svc.run_now()
    assert ("outside_start", "done", 0) in actions(svc, jid)
    assert svc.counters.copy()["errors"].get("outside_start") == 1
    svc.run_now()  # reported once
    assert [a for a in actions(svc, jid) if a[0] == "outside_start"] == [
        ("outside_start", "done", 0)
    ]
