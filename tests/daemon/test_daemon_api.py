"""The REST API over a real SQLite and a real PostgreSQL: reads, auth refusals, bad input."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from daemon_services import API_TOKEN as TOKEN
from fastapi.testclient import TestClient
from sqlalchemy import Engine, event
from sqlalchemy.orm import Session

from wattsched.connectors.simulated import SimulatedCluster
from wattsched.daemon.api.app import create_app
from wattsched.daemon.config import Settings
from wattsched.daemon.loop import Service
from wattsched.daemon.store import Store
from wattsched.daemon.store_models import CycleRow
from wattsched.scheduler import dispatcher as dispatchers
from wattsched.scheduler.model import Job, Node, PowerCap, Resources

AUTH = {"Authorization": f"Bearer {TOKEN}"}


def settings_with_token(tmp_path: Path, token: str | None = TOKEN) -> Settings:
    token_file = None
    if token is not None:
        token_file = tmp_path / "token"
        token_file.write_text(token + "\n")
    return Settings(connector={"kind": "slurm"}, api={"token_file": token_file})


@pytest.fixture
def service(any_engine: Engine, cluster_factory: Any) -> Service:
    """A service that ran 4 enforce cycles on the small cluster."""
    cluster = cluster_factory.small_cluster()
    svc: Service = cluster_factory.make_service(any_engine, cluster)
    for _ in range(4):
        svc.run_now()
        cluster.advance_to(cluster.now + 150)
    return svc


@pytest.fixture
def client(service: Service, tmp_path: Path) -> Iterator[TestClient]:
    with TestClient(create_app(settings_with_token(tmp_path), service)) as c:
        yield c


@pytest.fixture
def sqlite_client(
    sqlite_engine: Engine, cluster_factory: Any, tmp_path: Path
) -> Iterator[TestClient]:
    """The API on SQLite only (input checks do not depend on the database)."""
    cluster = cluster_factory.small_cluster()
    svc: Service = cluster_factory.make_service(sqlite_engine, cluster)
    svc.run_now()
    with TestClient(create_app(settings_with_token(tmp_path), svc)) as c:
        yield c


def test_health_and_status(client: TestClient) -> None:
    assert client.get("/health").json()["status"] == "ok"
    st = client.get("/status").json()
    assert st["mode"] == "enforce"
    assert st["cycles"] == 4
    assert st["cap_w"] == 600.0
    assert st["power_w"] <= st["cap_w"]
    assert st["nodes_by_state"]["on"] == 4
    assert st["last_cycle_ok"] is True


def test_nodes(client: TestClient) -> None:
    nodes = client.get("/nodes").json()
    assert [n["name"] for n in nodes] == ["n0", "n1", "n2", "n3"]
    one = client.get("/nodes/n1").json()
    assert one["cores"] == 16 and one["history"][0]["power_state"] == "on"
    assert client.get("/nodes/nope").status_code == 404


def test_jobs_paging_and_detail(client: TestClient) -> None:
    page = client.get("/jobs", params={"limit": 5}).json()
    assert page["total"] == 20 and len(page["items"]) == 5
    page2 = client.get("/jobs", params={"limit": 5, "offset": 5}).json()
    assert {j["id"] for j in page["items"]}.isdisjoint(j["id"] for j in page2["items"])
    running = client.get("/jobs", params={"state": "running"}).json()["items"]
    assert running and all(j["state"] == "running" for j in running)
    started = [
        j
        for j in client.get("/jobs", params={"limit": 100}).json()["items"]
        if j["started_by"] == "wattsched"
    ]
    assert started
    detail = client.get(f"/jobs/{started[0]['id']}").json()
    assert [a["kind"] for a in detail["actions"]] == ["start"]
    assert detail["actions"][0]["state"] == "done"
    assert client.get("/jobs/999999").status_code == 404


def test_plan_actions_power(client: TestClient) -> None:
    plan = client.get("/plan").json()
    assert plan["solver_status"] == "heuristic"
    for e in plan["entries"]:
        assert e["end"] > e["start"] and e["nodes"]
    actions = client.get("/actions").json()
    assert actions and all(a["state"] in ("done", "failed") for a in actions)
    assert client.get("/actions", params={"since": "2999-01-01T00:00:00"}).json() == []
    power = client.get("/power", params={"window": 100000}).json()
    assert len(power) == 4 and all(p["it_power_w"] <= p["cap_w"] for p in power)


def test_the_plan_shows_the_reservation_of_a_starving_wide_job(
    sqlite_engine: Engine, tmp_path: Path
) -> None:
    """prb-reserve: a 2-node urgent job starving under a flow of 1-node jobs is published with
    its shadow time and both nodes; the nodes it is promised are not given away."""
    whole = Resources(cores=16)
    wide = Job(id="w", submit=600, walltime=3600, units=2, unit=whole, queue="reservation",
               ewt=1800, runtime=60)  # fmt: skip
    flow = [Job(id=f"p{k}", submit=500 * k, walltime=1000, units=1, unit=whole,
                queue="parallel", ewt=21_600, runtime=1000) for k in range(20)]  # fmt: skip
    cluster = SimulatedCluster([Node("n1", whole), Node("n2", whole)], [wide, *flow],
                               PowerCap.constant(10_000.0), record_power=False)  # fmt: skip
    svc = Service(cluster, dispatchers.create("prb-reserve"), Store(sqlite_engine),
                  mode="enforce", cap=PowerCap.constant(10_000.0), cycle_seconds=1.0)  # fmt: skip
    while cluster.now < 4_300:  # starving from 600 + 2 x 1,800 = 4,200
        svc.run_now()
        cluster.advance_to(cluster.now + 100)
    svc.run_now()
    with TestClient(create_app(settings_with_token(tmp_path), svc)) as client:
        plan = client.get("/plan").json()
    head = [e for e in plan["entries"] if e["job_id"] == "w"]
    assert len(head) == 1, plan
    assert head[0]["start"] > plan["time"] and sorted(head[0]["nodes"]) == ["n1", "n2"]
    assert head[0]["end"] == head[0]["start"] + 3600
    # the jobs started since do not run past it on its nodes
    for rec in cluster.records.values():
        if rec.start is not None and rec.start >= 4_200 and rec.job.id != "w":
            assert rec.start + rec.job.walltime <= head[0]["start"]


def test_metrics(client: TestClient) -> None:
    text = client.get("/metrics").text
    for name in (
        "wattsched_power_estimate_watts",
        "wattsched_power_cap_watts 600.0",
        'wattsched_nodes{power_state="on"} 4.0',
        'wattsched_jobs{state="running"}',
        "wattsched_cycle_duration_seconds_count 4.0",
        'wattsched_actions_total{kind="start",result="done"}',
        "wattsched_energy_joules_total",
        "wattsched_energy_saved_joules_total 0.0",  # no node switched off here
        'wattsched_solver_status{status="heuristic"} 1.0',
        "wattsched_build_info{version=",
    ):
        assert name in text, name


def test_metrics_job_states_are_disjoint(client: TestClient) -> None:
    # A sum over the states counts each job once: planned jobs are not counted as queued too.
    status = client.get("/status").json()
    jobs = {
        line.split('"')[1]: float(line.rsplit(" ", 1)[1])
        for line in client.get("/metrics").text.splitlines()
        if line.startswith("wattsched_jobs{")
    }
    assert set(jobs) >= {"running", "planned", "waiting"}
    assert "queued" not in jobs
    assert sum(jobs.values()) == status["queue_length"] + status["running"]
    assert jobs["planned"] == status["planned"]


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("put", "/config/power-cap", {"watts": 500}),
        ("put", "/config/mode", {"mode": "advise"}),
        ("post", "/cycle", None),
    ],
)
def test_mutations_need_the_token(
    sqlite_client: TestClient, method: str, path: str, body: Any
) -> None:
    call = getattr(sqlite_client, method)
    kwargs = {"json": body} if body is not None else {}
    assert call(path, **kwargs).status_code == 401  # no token
    bad = {"Authorization": "Bearer not-the-token-at-all-xxxxxxxx"}
    assert call(path, headers=bad, **kwargs).status_code == 403  # wrong token
    assert call(path, headers={"Authorization": "Basic abc"}, **kwargs).status_code == 401
    assert call(path, headers=AUTH, **kwargs).status_code == 200


def test_mutations_change_the_service(client: TestClient, service: Service) -> None:
    r = client.put("/config/power-cap", json={"watts": 450.5}, headers=AUTH)
    assert r.json()["cap_w"] == 450.5 and service.cap.at(0) == 450.5
    assert (
        client.put("/config/mode", json={"mode": "advise"}, headers=AUTH).json()["mode"] == "advise"
    )
    out = client.post("/cycle", headers=AUTH).json()
    assert out["ok"] and out["started"] == 0  # advise: plans, never starts
    assert client.get("/status").json()["cap_w"] == 450.5


def test_no_token_file_disables_mutations(service: Service, tmp_path: Path) -> None:
    with TestClient(create_app(settings_with_token(tmp_path, None), service)) as c:
        assert c.put("/config/mode", json={"mode": "advise"}, headers=AUTH).status_code == 403


@pytest.mark.parametrize(
    ("method", "path", "kwargs"),
    [
        ("get", "/jobs", {"params": {"limit": 0}}),  # limit >= 1
        ("get", "/jobs", {"params": {"limit": "many"}}),  # not an integer
        ("get", "/jobs", {"params": {"offset": -1}}),  # offset >= 0
        ("get", "/jobs", {"params": {"offset": 10**30}}),  # beyond any database integer
        ("get", "/jobs", {"params": {"state": "zombie"}}),  # unknown state
        ("get", "/actions", {"params": {"since": "yesterday"}}),  # not a date
        ("get", "/power", {"params": {"window": -5}}),  # window >= 1
        ("put", "/config/power-cap", {"json": {"watts": -3}}),  # cap > 0
        ("put", "/config/power-cap", {"json": {"watts": "lots"}}),  # not a number
        ("put", "/config/power-cap", {"json": {}}),  # missing
        ("put", "/config/power-cap", {"content": '{"watts": Infinity}'}),  # not finite
        ("put", "/config/mode", {"json": {"mode": "yolo"}}),  # unknown mode
        ("put", "/config/mode", {"content": "not json"}),  # not JSON
    ],
)
def test_bad_input_is_4xx(sqlite_client: TestClient, method: str, path: str, kwargs: Any) -> None:
    headers = {"Content-Type": "application/json", **AUTH}
    r = getattr(sqlite_client, method)(path, headers=headers, **kwargs)
    assert 400 <= r.status_code < 500, r.text
    assert r.json()["detail"]


def test_a_body_that_is_not_even_utf8_gets_a_documented_answer(sqlite_client: TestClient) -> None:
    # Starlette answers 400 for a body it cannot decode (schemathesis found POST
    # /nodes/{name}/power undocumented); every operation with a body must declare it.
    schema = sqlite_client.get("/openapi.json").json()
    headers = {"Content-Type": "application/json", **AUTH}
    tried = 0
    for path, ops in schema["paths"].items():
        for method, op in ops.items():
            if "requestBody" not in op:
                continue
            url = path.replace("{name}", "n1")
            r = sqlite_client.request(method, url, headers=headers, content=b"\xd5\xb7\xff{")
            assert str(r.status_code) in op["responses"], (method, path, r.status_code, r.text)
            assert r.status_code == 400 and r.json()["detail"], (method, path, r.text)
            tried += 1
    assert tried >= 3


def test_a_cycle_committed_during_a_plan_read_never_empties_the_plan(
    client: TestClient, service: Service, any_engine: Engine
) -> None:
    # The daemon replaces the plan's entries with each cycle's. A cycle committed between
    # the statements of one GET /plan must not pair a cycle with the next one's entries
    # (before: the latest cycle, then its entries, already deleted: an empty plan).
    cluster = service.connector
    seen: list[int] = []  # statements of the request so far (one when it has entries)
    fire_at = [0]  # the statement before which a cycle is committed

    def commit_a_cycle(*_: Any) -> None:
        seen.append(1)
        if len(seen) == fire_at[0]:
            cluster.advance_to(cluster.now + 1)  # type: ignore[attr-defined]
            service.run_now()

    event.listen(any_engine, "before_cursor_execute", commit_a_cycle)
    try:
        for k in (1, 2, 3):
            fire_at[0] = k
            seen.clear()
            plan = client.get("/plan").json()
            with Session(any_engine) as s:
                cycle = s.get(CycleRow, plan["cycle_id"])
                assert cycle is not None
                assert len(plan["entries"]) == cycle.planned > 0
    finally:
        event.remove(any_engine, "before_cursor_execute", commit_a_cycle)
