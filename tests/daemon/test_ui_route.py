"""``GET /ui`` and its static files, in-process (the page itself runs in Chromium in
``tests/deploy/test_status_page.py``), and ``GET /actions?newest_first=true`` that it polls."""

from __future__ import annotations

import re
import tomllib
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

import pytest
from daemon_services import API_TOKEN
from fastapi.testclient import TestClient
from sqlalchemy import Engine

from wattsched.daemon.api.app import create_app
from wattsched.daemon.api.routes.ui import STATIC_DIR
from wattsched.daemon.config import Settings

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def client(sqlite_engine: Engine, cluster_factory: Any, tmp_path: Path) -> TestClient:
    cluster = cluster_factory.small_cluster()
    svc = cluster_factory.make_service(sqlite_engine, cluster)
    for _ in range(3):
        svc.run_now()
        cluster.advance_to(cluster.now + 150)
    token = tmp_path / "token"
    token.write_text(API_TOKEN)
    token.chmod(0o600)
    settings = Settings(connector={"kind": "slurm"}, api={"token_file": token})
    return TestClient(create_app(settings, svc))


def test_ui_serves_the_page_with_a_strict_policy(client: TestClient) -> None:
    r = client.get("/ui")
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/html")
    csp = r.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "default-src 'none'" in csp
    assert "unsafe-inline" not in csp and "unsafe-eval" not in csp
    assert r.headers["x-content-type-options"] == "nosniff"
    # The page's own files, by the relative URLs it uses.
    for src in re.findall(r'(?:src|href)="(ui/static/[^"]+)"', r.text):
        f = client.get("/" + src)
        assert f.status_code == 200, src
        assert "content-security-policy" in f.headers
    assert (
        client.get("/ui/static/ui.js")
        .headers["content-type"]
        .startswith(("text/javascript", "application/javascript"))
    )
    assert client.get("/ui/static/nothing.js").status_code == 404
    # A trailing slash leads back to /ui (the page's relative URLs assume it).
    r = client.get("/ui/", follow_redirects=False)
    assert r.status_code in (307, 308) and r.headers["location"].endswith("/ui")
    # The daemon's address alone leads to the page too (relative: a proxy's prefix holds).
    r = client.get("/", follow_redirects=False)
    assert r.status_code == 307 and r.headers["location"] == "ui"
    assert client.get("/").text == client.get("/ui").text


def test_ui_is_read_only_without_the_token(client: TestClient) -> None:
    body = {"watts": 1000}
    assert client.put("/config/power-cap", json=body).status_code == 401
    auth = {"Authorization": f"Bearer {API_TOKEN}"}
    assert client.put("/config/power-cap", json=body, headers=auth).status_code == 200


def test_the_script_never_parses_data_as_html() -> None:
    js = (STATIC_DIR / "ui.js").read_text(encoding="utf-8")
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("):
        assert sink not in js, sink
    html = (STATIC_DIR / "index.html").read_text(encoding="utf-8")
    assert "<script>" not in html  # no inline script: the policy would block it anyway


def test_the_static_files_are_package_data() -> None:
    cfg = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    assert "wattsched.daemon.api.static" in cfg["tool"]["setuptools"]["packages"]
    globs = cfg["tool"]["setuptools"]["package-data"]["wattsched.daemon.api.static"]
    files = sorted(p.name for p in STATIC_DIR.iterdir() if p.is_file())
    assert {"index.html", "ui.js", "ui.css"} <= set(files)
    for name in files:
        assert any(fnmatch(name, g) for g in globs), name


def test_actions_newest_first(client: TestClient) -> None:
    oldest = client.get("/actions").json()
    newest = client.get("/actions", params={"newest_first": "true", "limit": 3}).json()
    assert len(oldest) > 3
    assert [a["id"] for a in newest] == sorted((a["id"] for a in oldest), reverse=True)[:3]
