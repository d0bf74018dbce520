"""A restarted daemon's runtime predictor learns again the runtimes the store kept."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from pathlib import Path

from daemon_proc import write_config
from sqlalchemy import Engine

from wattsched.connectors.simulated import SimulatedCluster
from wattsched.daemon.config import load_config
from wattsched.daemon.loop import Service
from wattsched.daemon.runtime_history import ended_jobs, seed_predictor
from wattsched.daemon.store import Store
from wattsched.daemon.store_models import JobRow
from wattsched.daemon.store_schema import make_engine, migrate
from wattsched.daemon.wiring import build_service
from wattsched.scheduler import dispatcher as registry
from wattsched.scheduler.hybrid.synthetic import eurora_like_jobs, eurora_like_nodes
from wattsched.scheduler.model import PowerCap
from wattsched.scheduler.runtime_predictor import RuntimePredictor, coarse_class, job_class


def test_the_store_s_ended_jobs_teach_a_restarted_predictor(sqlite_engine: Engine) -> None:
    jobs = [replace(j, runtime=60 * (1 + k % 7), user=f"u{k % 3}", walltime=3600)
            for k, j in enumerate(eurora_like_jobs(30, seed=2))]  # fmt: skip
    cluster = SimulatedCluster(eurora_like_nodes(8), jobs, PowerCap.unlimited())
    store = Store(sqlite_engine)
    svc = Service(cluster, registry.create("prb"), store, mode="enforce")
    for _ in range(40):
        svc.run_now()
        cluster.advance_to(cluster.now + 30)
    ran = {jid: r for jid, r in cluster.records.items() if r.end is not None}
    ended = ended_jobs(store)
    assert len(ended) >= 5  # enough ended to mean something
    # Each ended job once, oldest end first, with the class and the runtime it had (seen
    # at the cycle after its end: at most one cycle's step late).
    assert len({j.id for j, _ in ended}) == len(ended) <= len(ran)
    for job, runtime in ended:
        rec = ran[job.id]
        assert (job.queue, job.units, job.unit, job.walltime, job.user) == (
            rec.job.queue, rec.job.units, rec.job.unit, rec.job.walltime, rec.job.user
        )  # fmt: skip
        assert rec.end - rec.start <= runtime <= rec.end - rec.start + 30
    assert ended_jobs(store, limit=3) == ended[-3:]

    # A new daemon on the store: a hybrid with a predictor learns them before its first cycle.
    hybrid = registry.create("hybrid", predictor=True)
    assert seed_predictor(hybrid, store) == len(ended)
    p = hybrid.predictor  # type: ignore[attr-defined]
    assert isinstance(p, RuntimePredictor) and p.learned == len(ended)
    # a class speaks from its second end (else the coarse class: queue and walltime)
    fine, coarse = (
        Counter(job_class(j) for j, _ in ended),
        Counter(coarse_class(j) for j, _ in ended),
    )
    for j, _ in ended:
        level = ("class" if fine[job_class(j)] >= p.min_runs else
                 "coarse" if coarse[coarse_class(j)] >= p.min_runs else "walltime")  # fmt: skip
        assert p.level(j) == level
    assert any(p.level(j) != "walltime" and p.predict(j) < j.walltime for j, _ in ended)
    # A standby taking over starts afresh from the store: nothing learned twice.
    assert seed_predictor(hybrid, store, fresh=True) == len(ended)
    assert hybrid.predictor is not p and hybrid.predictor.learned == len(ended)  # type: ignore[attr-defined]
    # Without a predictor nothing is read.
    assert seed_predictor(registry.create("prb"), store) == 0


def test_a_restarted_hybrid_daemon_learns_from_its_store_unless_told_not_to(
    tmp_path: Path,
) -> None:
    cfg = write_config(tmp_path, cycle_s=1, speedup=300)
    migrate(make_engine(load_config(cfg).database_url))
    first = build_service(load_config(cfg))  # PRB: its cycles fill the store
    for _ in range(25):
        first.run_now()
    store = first.store
    assert len(ended_jobs(store)) >= 3
    text = cfg.read_text().replace('dispatcher = "prb"', 'dispatcher = "hybrid"')
    cfg.write_text(text)  # the hybrid's default: a gated predictor online
    again = build_service(load_config(cfg))
    p = again.dispatcher.predictor  # type: ignore[attr-defined]
    assert isinstance(p, RuntimePredictor) and p.learned == len(ended_jobs(store))
    cfg.write_text(text.replace("[dispatcher_params]", "[dispatcher_params]\npredictor = false"))
    assert build_service(load_config(cfg)).dispatcher.predictor is None  # type: ignore[attr-defined]


def test_a_job_cancelled_while_it_ran_is_not_learned(sqlite_engine: Engine) -> None:
    store = Store(sqlite_engine)
    common = dict(queue="q", user="u", units=1, unit_cores=4, unit_mem_mb=0, unit_gpus=0,
                  unit_mics=0, walltime=3600, submit=0, first_seen=0, last_seen=500,
                  started=100)  # fmt: skip
    with store.sessions() as s:
        s.add(JobRow(id="done", state="completed", finished=400, **common))
        s.add(JobRow(id="cut", state="cancelled", finished=110, **common))
        s.add(JobRow(id="late", state="timeout", finished=3700, **common))
        s.commit()
    assert [(j.id, run) for j, run in ended_jobs(store)] == [("done", 300), ("late", 3600)]
