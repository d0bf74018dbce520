"""``POST /nodes/{name}/power``: an operator's command under the power policy's safety rules
(409 naming the rule), journaled, token required."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from daemon_services import API_TOKEN as TOKEN
from fastapi.testclient import TestClient
from sqlalchemy import Engine

from wattsched.daemon.api.app import create_app
from wattsched.daemon.config import Settings
from wattsched.scheduler.model import PowerState

AUTH = {"Authorization": f"Bearer {TOKEN}"}


def test_power_commands_follow_the_safety_rules(
    sqlite_engine: Engine, cluster_factory: Any, tmp_path: Path
) -> None:
    cluster = cluster_factory.small_cluster()
    svc = cluster_factory.make_service(sqlite_engine, cluster)
    cluster.advance_to(100)
    svc.run_now()  # starts jobs: some nodes run, the plan names others
    snap = cluster.snapshot()
    busy = {n for rj in snap.running for n in rj.nodes}
    assert busy
    token = tmp_path / "token"
    token.write_text(TOKEN)
    token.chmod(0o600)
    with TestClient(create_app(Settings(connector={"kind": "slurm"}, api={"token_file": token}),
                               svc)) as c:  # fmt: skip
        url = "/nodes/{}/power"
        assert c.post(url.format(sorted(busy)[0]), json={"on": False}).status_code == 401
        r = c.post(url.format(sorted(busy)[0]), json={"on": False}, headers=AUTH)
        assert r.status_code == 409 and "runs a job" in r.json()["detail"]
        assert c.post(url.format("nope"), json={"on": False}, headers=AUTH).status_code == 404
        r = c.post(url.format(sorted(busy)[0]), json={"on": True}, headers=AUTH)
        assert r.status_code == 409 and "nothing to power on" in r.json()["detail"]


def test_an_idle_node_is_switched_off_and_journaled(
    sqlite_engine: Engine, cluster_factory: Any, tmp_path: Path
) -> None:
    cluster = cluster_factory.small_cluster()
    svc = cluster_factory.make_service(sqlite_engine, cluster)  # no cycle yet: nothing runs
    idle = sorted(n.name for n in cluster.snapshot().nodes)[-1]
    token = tmp_path / "token"
    token.write_text(TOKEN)
    token.chmod(0o600)
    with TestClient(create_app(Settings(connector={"kind": "slurm"}, api={"token_file": token}),
                               svc)) as c:  # fmt: skip
        r = c.post(f"/nodes/{idle}/power", json={"on": False}, headers=AUTH)
        assert r.status_code == 200, r.text
        node = next(n for n in cluster.snapshot().nodes if n.name == idle)
        assert node.state in (PowerState.SHUTTING_DOWN, PowerState.OFF)
        r = c.post(f"/nodes/{idle}/power", json={"on": False}, headers=AUTH)
        assert r.status_code == 409 and "not on" in r.json()["detail"]
        acts = [a for a in c.get("/actions").json() if a["kind"] == "power_off"]
        assert len(acts) == 1 and acts[0]["state"] == "done" and acts[0]["nodes"] == idle
        svc.run_now()  # the cycle records the nodes as seen
        nodes = {n["name"]: n for n in c.get("/nodes").json()}
        last = nodes[idle]["last_power_command"]
        assert last["command"] == "power_off" and last["state"] == "done"
        assert last["action_id"] == acts[0]["id"]
        assert all(n["last_power_command"] is None for k, n in nodes.items() if k != idle)
        one = c.get(f"/nodes/{idle}").json()
        assert one["last_power_command"]["command"] == "power_off"
        assert one["power_state"] in ("shutting_down", "off")
