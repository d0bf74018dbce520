"""The API and the configuration hardened (issue 8 items 3, 6-9): dates, error echoes, the
token before the body, body limits, strict numbers, token files and rotation, start-up
messages that name the file, the key and the value."""

from __future__ import annotations

import os
import socket
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from daemon_proc import TOKEN as PROC_TOKEN
from daemon_proc import run_cli, serve, write_config
from daemon_services import API_TOKEN as TOKEN
from fastapi.testclient import TestClient
from sqlalchemy import Engine

from wattsched.daemon.api.app import create_app
from wattsched.daemon.config import ConfigError, Settings, load_config, weak_token
from wattsched.daemon.store import make_engine, migrate

AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
def client(sqlite_engine: Engine, cluster_factory: Any, tmp_path: Path) -> Iterator[TestClient]:
    svc = cluster_factory.make_service(sqlite_engine, cluster_factory.small_cluster())
    svc.run_now()
    token = tmp_path / "token"
    token.write_text(TOKEN + "\n")
    token.chmod(0o600)
    cfg = Settings(connector={"kind": "slurm"}, api={"token_file": token})
    with TestClient(create_app(cfg, svc)) as c:
        yield c


def test_dates_naive_are_utc_and_out_of_range_is_422(client: TestClient) -> None:
    assert client.get("/actions", params={"since": "0001-01-01"}).status_code in (200, 422)
    naive = client.get("/actions", params={"since": "2020-01-01T00:00:00"}).json()
    aware = client.get("/actions", params={"since": "2020-01-01T00:00:00Z"}).json()
    assert naive == aware and naive
    assert client.get("/actions", params={"since": "9999-12-31T23:59:59"}).status_code == 200


def test_a_404_does_not_echo_a_huge_path(client: TestClient) -> None:
    r = client.get("/jobs/" + "x" * 60_000)
    assert r.status_code == 404 and len(r.content) < 300
    r = client.get("/nodes/" + "y" * 60_000)
    assert r.status_code == 404 and len(r.content) < 300


def test_the_token_is_checked_before_the_body(client: TestClient) -> None:
    big = b"{" + b" " * (20 * 1024 * 1024) + b"}"
    r = client.put("/config/power-cap", content=big, headers={"Content-Type": "application/json"})
    assert r.status_code == 413  # refused on its length, unread
    r = client.put("/config/power-cap", content=b'{"watts": 5}')
    assert r.status_code == 401  # no token: refused before the body is parsed
    r = client.put("/config/power-cap", content=b"not json", headers={"Authorization": "Bearer x"})
    assert r.status_code == 403
    r = client.put("/config/power-cap", json={"watts": 2600}, headers=AUTH)
    assert r.status_code == 200 and r.json()["cap_w"] == 2600


@pytest.mark.parametrize("watts", [True, "2600", 5e-324, 0, -1, 2e9])
def test_cap_values_are_strict(client: TestClient, watts: object) -> None:
    r = client.put("/config/power-cap", json={"watts": watts}, headers=AUTH)
    assert r.status_code == 422, r.text


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("power_cap_w = inf", "must be a finite number"),
        ("power_cap_w = true", "valid number"),
        ("cycle_seconds = nan", "must be a finite number"),
    ],
)
def test_config_numbers_follow_the_api_rules(tmp_path: Path, line: str, message: str) -> None:
    cfg = tmp_path / "w.toml"
    cfg.write_text(line + "\n")
    with pytest.raises(ConfigError, match=message) as err:
        load_config(cfg)
    assert str(cfg) in str(err.value) and line.split(" = ")[0] in str(err.value)


def test_a_bad_environment_value_is_blamed_on_its_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = tmp_path / "w.toml"
    cfg.write_text('mode = "advise"\n')
    monkeypatch.setenv("WATTSCHED_CYCLE_SECONDS", "-5")
    with pytest.raises(ConfigError) as err:
        load_config(cfg)
    assert "$WATTSCHED_CYCLE_SECONDS" in str(err.value)
    assert "invalid configuration in the environment" in str(err.value)


def test_a_non_utf8_config_names_its_file(tmp_path: Path) -> None:
    cfg = tmp_path / "w.toml"
    cfg.write_bytes(b'mode = "adv\xffise"\n')
    with pytest.raises(ConfigError, match="not UTF-8") as err:
        load_config(cfg)
    assert str(cfg) in str(err.value)


@pytest.mark.parametrize(
    "token",
    ["a" * 40, "passwordpassword", "abcdefgh" * 4, "changeme", "short-token"],
)
def test_weak_tokens_are_refused(token: str) -> None:
    assert weak_token(token) != ""


def test_a_sound_token_passes() -> None:
    assert weak_token(TOKEN) == "" and weak_token("Xk2m-9QpL7vRt3Wz") == ""


def test_the_token_rotates_without_a_restart(client: TestClient, tmp_path: Path) -> None:
    new = "rotated-" + TOKEN[::-1]
    tmp = tmp_path / "token.new"
    tmp.write_text(new + "\n")
    tmp.chmod(0o600)
    tmp.rename(tmp_path / "token")  # an atomic replace, as an operator would do it
    old = client.put("/config/mode", json={"mode": "advise"}, headers=AUTH)
    assert old.status_code == 403
    ok = client.put(
        "/config/mode", json={"mode": "advise"}, headers={"Authorization": f"Bearer {new}"}
    )
    assert ok.status_code == 200


def test_a_token_file_others_can_read_is_warned_about(
    sqlite_engine: Engine, cluster_factory: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    svc = cluster_factory.make_service(sqlite_engine, cluster_factory.small_cluster())
    token = tmp_path / "token"
    token.write_text(TOKEN)
    token.chmod(0o644)
    create_app(Settings(connector={"kind": "slurm"}, api={"token_file": token}), svc)
    assert "readable by others" in caplog.text
    create_app(Settings(connector={"kind": "slurm"}), svc)
    assert "mutations (cap, mode, cycle) are disabled" in caplog.text


def test_the_sqlite_file_is_created_owner_only(tmp_path: Path) -> None:
    db = tmp_path / "var" / "w.db"
    old = os.umask(0o022)
    try:
        migrate(make_engine(f"sqlite:///{db}"))
    finally:
        os.umask(old)
    assert stat.S_IMODE(db.stat().st_mode) == 0o600


def test_a_corrupt_database_gets_one_line_not_a_traceback(tmp_path: Path) -> None:
    cfg = write_config(tmp_path)
    db = tmp_path / "var" / "w.db"
    db.parent.mkdir(parents=True, exist_ok=True)
    db.write_bytes(b"this is not a database" * 100)
    for cmd in ("migrate", "serve"):
        r = run_cli(cmd, "-c", str(cfg))
        assert r.returncode == 2, (cmd, r.stderr)
        assert "Traceback" not in r.stderr and str(db) in r.stderr and "backup" in r.stderr


@pytest.mark.slow
def test_an_unauthenticated_huge_body_is_refused_at_once(tmp_path: Path) -> None:
    cfg = write_config(tmp_path)
    assert run_cli("migrate", "-c", str(cfg)).returncode == 0
    with serve(cfg, tmp_path / "log") as d:
        host, port = d.url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=10) as s:
            s.sendall(
                b"PUT /config/power-cap HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                b"Content-Length: 104857600\r\n\r\n{"
            )
            answer = s.recv(4096).decode(errors="replace")
        assert answer.startswith("HTTP/1.1 413"), answer
        assert d.get("/health").status_code == 200
        r = d.get("/status")
        assert r.status_code == 200 and PROC_TOKEN not in (tmp_path / "log").read_text()
