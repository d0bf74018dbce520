"""The admin's client commands against a real ``wattsched serve``, and how every command
finds its config file (``-c``, ``$WATTSCHED_CONFIG``, the default path)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from daemon_proc import TOKEN, run_cli, serve, wait_for, write_config
from typer.testing import CliRunner

from wattsched.daemon import cli_common
from wattsched.daemon.cli import app
from wattsched.daemon.cli_common import CliError, find_config, parse_nodes

runner = CliRunner()


@pytest.mark.slow
def test_status_plan_cap_and_mode_from_the_config(tmp_path: Path) -> None:
    cfg = write_config(tmp_path, cap_w=1500, speedup=20)
    assert run_cli("migrate", "-c", str(cfg)).returncode == 0
    with serve(cfg, tmp_path / "log") as d:
        wait_for(lambda: d.get("/status").json()["cycles"] >= 2, 60, "2 cycles")
        # No --url: the address comes from the config's api.bind, through the environment.
        env_run = run_cli_env({"WATTSCHED_CONFIG": str(cfg)}, "status", "--json")
        assert env_run.returncode == 0, env_run.stderr
        assert json.loads(env_run.stdout)["cap_w"] == 1500
        # The token comes from the config's api.token_file; it never appears on argv.
        r = run_cli("cap", "set", "1200", "-c", str(cfg))
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout)["cap_w"] == 1200
        assert d.get("/status").json()["cap_w"] == 1200
        r = run_cli("mode", "advise", "-c", str(cfg))
        assert r.returncode == 0 and json.loads(r.stdout)["mode"] == "advise"
        r = run_cli("cap", "clear", "-c", str(cfg))
        assert r.returncode == 0 and json.loads(r.stdout)["cap_w"] is None
        r = run_cli("plan", "--json", "-c", str(cfg))
        assert r.returncode == 0 and "entries" in json.loads(r.stdout)
        r = run_cli("plan", "-c", str(cfg))
        assert r.returncode == 0 and "plan of cycle" in r.stdout
        # Node power through the daemon: a node it does not know is a 404; a real one is
        # switched or refused by a named safety rule (409), the command goes on.
        r = run_cli("power", "nope[1-2]", "off", "-c", str(cfg))
        assert r.returncode == 1 and r.stderr.count(": 404 ") == 2, r.stderr
        node = d.get("/nodes").json()[0]["name"]
        r = run_cli("power", node, "off", "-c", str(cfg))
        assert (r.returncode == 0 and '"on": false' in r.stdout) or (
            r.returncode == 1 and ": 409 " in r.stderr
        ), (r.stdout, r.stderr)
        r = run_cli("power", node, "status", "-c", str(cfg))
        assert r.returncode == 0 and r.stdout.startswith(f"{node} "), r.stderr
        r = run_cli("power", "nope1", "status", "-c", str(cfg))
        assert r.returncode == 1 and "unknown node(s): nope1" in r.stderr
        # Without a token (an explicit URL, no config found): refused before any request.
        r = run_cli_env({"WATTSCHED_CONFIG": ""}, "mode", "enforce", "--url", d.url)
        assert r.returncode == 2 and "no token" in r.stderr
        # A wrong token: the daemon's 403 is reported, exit 1.
        bad = tmp_path / "bad-token"
        bad.write_text("not-the-token-0123456789abcdef\n")
        r = run_cli("mode", "enforce", "--url", d.url, "--token-file", str(bad))
        assert r.returncode == 1 and ": 403 " in r.stderr
        assert d.get("/status").json()["mode"] == "advise"
        assert TOKEN not in (tmp_path / "log").read_text()


def run_cli_env(env: dict[str, str], *args: str) -> object:
    """``run_cli`` with extra environment variables."""
    import subprocess

    from daemon_proc import REPO, WATTSCHED

    return subprocess.run(
        [*WATTSCHED, *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
        check=False,
        env={**os.environ, **env},
    )


def test_find_config_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    a, b, c = (tmp_path / n for n in ("a.toml", "b.toml", "c.toml"))
    for p in (a, b, c):
        p.write_text("")
    monkeypatch.setattr(cli_common, "DEFAULT_CONFIG", c)
    monkeypatch.setenv("WATTSCHED_CONFIG", str(b))
    assert find_config(a) == a
    assert find_config(None) == b
    monkeypatch.delenv("WATTSCHED_CONFIG")
    assert find_config(None) == c
    monkeypatch.setattr(cli_common, "DEFAULT_CONFIG", tmp_path / "missing.toml")
    assert find_config(None, required=False) is None
    with pytest.raises(CliError, match=r"missing\.toml.*default path"):
        find_config(None)
    monkeypatch.setenv("WATTSCHED_CONFIG", str(tmp_path / "gone.toml"))
    with pytest.raises(CliError, match=r"gone\.toml \(from \$WATTSCHED_CONFIG\)"):
        find_config(None)


def test_commands_without_a_config_say_where_they_looked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("WATTSCHED_CONFIG", raising=False)
    monkeypatch.setattr(cli_common, "DEFAULT_CONFIG", tmp_path / "none.toml")
    for args in (["migrate"], ["serve"], ["rms", "snapshot"]):
        result = runner.invoke(app, args)
        assert result.exit_code == 2, args
        assert "none.toml" in result.output and "-c FILE" in result.output


def test_log_level_is_a_choice_not_a_traceback(tmp_path: Path) -> None:
    result = runner.invoke(app, ["serve", "-c", str(tmp_path / "x.toml"), "--log-level", "loud"])
    assert result.exit_code == 2
    assert "Traceback" not in result.output
    assert "loud" in result.output and "debug" in result.output


def test_parse_nodes_reads_node_sets_and_keeps_duplicates() -> None:
    assert parse_nodes("n[1-3],n7") == ["n1", "n2", "n3", "n7"]
    assert parse_nodes("n1,n1") == ["n1", "n1"]
    assert parse_nodes(" gpu[01-02] , n[1,3] ") == ["gpu01", "gpu02", "n1", "n3"]
    with pytest.raises(CliError, match="bad node set"):
        parse_nodes("n[3-1")
    with pytest.raises(CliError, match="no node"):
        parse_nodes(" , ")
