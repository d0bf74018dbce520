"""Settings changed over the API come back after a restart, journaled with who set them,
and /status says where each setting comes from (file, environment, default, api)."""

from __future__ import annotations

from pathlib import Path

import pytest
from daemon_proc import TOKEN, write_config
from fastapi.testclient import TestClient

from wattsched.daemon.api.app import create_app
from wattsched.daemon.config import load_config
from wattsched.daemon.store_schema import make_engine, migrate
from wattsched.daemon.wiring import build_service

AUTH = {"Authorization": f"Bearer {TOKEN}"}


def client_for(cfg: Path) -> TestClient:
    settings = load_config(cfg)
    return TestClient(create_app(settings, build_service(settings)))


def test_api_settings_survive_a_restart_and_reset(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = write_config(tmp_path, cap_w=1500)  # mode enforce, cap 1500 W in the file
    (tmp_path / "token").chmod(0o600)
    migrate(make_engine(load_config(cfg).database_url))
    monkeypatch.setenv("WATTSCHED_CYCLE_SECONDS", "2")
    with client_for(cfg) as c:
        st = c.get("/status").json()
        assert st["sources"]["power_cap_w"] == "file" and st["sources"]["mode"] == "file"
        assert st["sources"]["cycle_seconds"] == "environment"
        assert st["sources"]["dispatcher"] == "file"
        assert c.put("/config/power-cap", json={"watts": 2600}, headers=AUTH).status_code == 200
        assert c.put("/config/mode", json={"mode": "advise"}, headers=AUTH).status_code == 200
        settings = [a for a in c.get("/actions").json() if a["kind"] == "setting"]
        assert [a["result"] for a in settings] == [
            "power_cap_w = 2600 by token token",
            'mode = "advise" by token token',
        ]
    # A restart (a new service on the same store and file): the API's values are back.
    with client_for(cfg) as c:
        st = c.get("/status").json()
        assert (st["mode"], st["sources"]["mode"], st["sources"]["power_cap_w"]) == (
            "advise", "api", "api",
        )  # fmt: skip
        c.post("/cycle", headers=AUTH)
        assert c.get("/status").json()["cap_w"] == 2600
        out = c.delete("/config/overrides", headers=AUTH).json()
        assert (out["mode"], out["cap_w"]) == ("enforce", 1500)
        assert out["sources"]["mode"] == "file" and out["sources"]["power_cap_w"] == "file"
    with client_for(cfg) as c:
        assert c.get("/status").json()["sources"]["mode"] == "file"
