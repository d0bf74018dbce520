"""One code path starts jobs on both clocks: a trace replayed through the daemon's service
(journal in the SQL store, never-twice, refusal counts) gets the schedule of a replay
(``wattsched simulate``: the same start function with an in-memory journal)."""

from __future__ import annotations

import dataclasses

from sqlalchemy import Engine, select

from wattsched.connectors.simulated import SimulatedCluster
from wattsched.daemon.acting import MemoryJournal, start_planned
from wattsched.daemon.loop import Service
from wattsched.daemon.replay import replay
from wattsched.daemon.store import Store
from wattsched.daemon.store_models import ActionRow
from wattsched.scheduler import dispatcher as registry
from wattsched.scheduler.hybrid.synthetic import eurora_like_jobs, eurora_like_nodes
from wattsched.scheduler.model import PowerCap


def test_the_daemon_and_a_replay_make_the_same_schedule(sqlite_engine: Engine) -> None:
    nodes, jobs = eurora_like_nodes(8), eurora_like_jobs(40, seed=5)
    cap = PowerCap.constant(1300.0)
    sim = SimulatedCluster(nodes, jobs, cap)
    replay(sim, registry.create("prb"))
    expected = {jid: (r.start, r.nodes) for jid, r in sim.records.items()}

    cluster = SimulatedCluster(nodes, jobs, cap)
    svc = Service(cluster, registry.create("prb"), Store(sqlite_engine), mode="enforce", cap=cap)
    while True:
        assert svc.run_now().ok
        if not cluster.advance():
            break
    got = {jid: (r.start, r.nodes) for jid, r in cluster.records.items()}
    assert got == expected
    with svc.store.sessions() as s:
        starts = s.scalars(select(ActionRow).where(ActionRow.kind == "start")).all()
    assert len(starts) == len(jobs) and all(a.state == "done" for a in starts)


def test_a_replay_journals_every_start_and_never_starts_twice() -> None:
    nodes, jobs = eurora_like_nodes(4), eurora_like_jobs(12, seed=2)
    cluster = SimulatedCluster(nodes, jobs, PowerCap.unlimited(), offline=True)
    snap = cluster.snapshot()
    plan = registry.create("prb").plan(snap)
    journal = MemoryJournal()
    starts: dict = {}
    first = start_planned(cluster, journal, snap, plan, starts, max_start_attempts=3)
    assert first.started and journal.pending() == 0
    assert len(journal.actions) == len(first.started)
    # The same plan on the same snapshot, as if the RMS still showed the jobs pending (its
    # queued tuple, without the live index): nothing twice.
    stale = dataclasses.replace(snap, queued_index=None)
    again = start_planned(cluster, journal, stale, plan, starts, max_start_attempts=3)
    assert not again.started and sorted(again.refused_twice) == sorted(
        a.job_id for a in first.started
    )


def test_the_daemon_and_a_replay_switch_the_same_nodes(sqlite_engine: Engine) -> None:
    from wattsched.powerctl.idle_timeout import IdleTimeoutPolicy

    nodes, jobs = eurora_like_nodes(8), eurora_like_jobs(40, seed=9)
    cap = PowerCap.constant(1500.0)
    sim = SimulatedCluster(nodes, jobs, cap)
    replay(sim, registry.create("prb"), power_policy=IdleTimeoutPolicy(idle_s=300))
    assert sim.power_commands > 0  # the policy did switch nodes

    cluster = SimulatedCluster(nodes, jobs, cap)
    svc = Service(
        cluster, registry.create("prb"), Store(sqlite_engine), mode="enforce", cap=cap,
        power_policy=IdleTimeoutPolicy(idle_s=300),
    )  # fmt: skip
    while True:
        assert svc.run_now().ok
        if not cluster.advance():
            break
    assert cluster.power_commands == sim.power_commands
    assert {j: (r.start, r.nodes) for j, r in cluster.records.items()} == {
        j: (r.start, r.nodes) for j, r in sim.records.items()
    }
    with svc.store.sessions() as s:
        power = s.scalars(select(ActionRow).where(ActionRow.kind.in_(["power_on", "power_off"])))
        rows = list(power)
    assert len(rows) == sim.power_commands and all(a.state == "done" for a in rows)
    # The nodes it switched off saved energy: idle draw minus off draw, over the clock.
    assert svc.counters.copy()["saved_j"] > 0


def test_advise_mode_publishes_the_power_decision_and_sends_nothing(sqlite_engine: Engine) -> None:
    from fastapi.testclient import TestClient

    from wattsched.daemon.api.app import create_app
    from wattsched.daemon.config import Settings
    from wattsched.powerctl.idle_timeout import IdleTimeoutPolicy

    cluster = SimulatedCluster(eurora_like_nodes(4), [], PowerCap.unlimited())
    svc = Service(
        cluster, registry.create("prb"), Store(sqlite_engine), mode="advise",
        power_policy=IdleTimeoutPolicy(idle_s=0, min_on=1),
    )  # fmt: skip
    assert svc.run_now().ok
    assert cluster.power_commands == 0
    with TestClient(create_app(Settings(connector={"kind": "slurm"}), svc)) as c:
        d = c.get("/status").json()["power_decision"]
    assert d["policy"] == "idle" and d["carried_out"] is False and len(d["off"]) == 3
    svc.set_mode("enforce")
    assert svc.run_now().ok and cluster.power_commands == 3
    assert svc.last_power_decision is not None and svc.last_power_decision.carried_out
