"""The shipped logrotate file rotates a running daemon's log file, and no line is lost.

A real ``wattsched serve`` writes to ``log_file``; the real ``logrotate`` (with the file of
``deploy/logrotate/``, only its path changed) moves the log away twice; the daemon goes on
writing into the new file, the first rotation stays plain and the second is compressed.
"""

from __future__ import annotations

import gzip
import shutil
import subprocess
from pathlib import Path

import httpx2
import pytest
from daemon_proc import TOKEN, run_cli, serve, wait_for, write_config

CONF = Path(__file__).resolve().parents[2] / "deploy" / "logrotate" / "wattsched"
SHIPPED_GLOB = "/var/log/wattsched/*.log"


def _rotate(logrotate: str, conf: Path, state: Path) -> None:
    r = subprocess.run(
        [logrotate, "--force", "--state", str(state), str(conf)],
        capture_output=True, text=True, check=False, timeout=60,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr


def _set_cap(url: str, watts: float) -> None:
    r = httpx2.put(
        url + "/config/power-cap",
        json={"watts": watts},
        headers={"Authorization": f"Bearer {TOKEN}"},
        timeout=10,
    )
    assert r.status_code == 200, r.text


def test_logrotate_rotates_the_daemon_log_without_losing_lines(tmp_path: Path) -> None:
    logrotate = shutil.which("logrotate") or (
        "/usr/sbin/logrotate" if Path("/usr/sbin/logrotate").exists() else None
    )
    if logrotate is None:
        pytest.skip("not applicable: logrotate is not installed here")
    logs = tmp_path / "log"
    logs.mkdir()
    cfg = write_config(tmp_path)
    cfg.write_text(f'log_file = "{logs / "wattsched.log"}"\n' + cfg.read_text())
    assert run_cli("migrate", "-c", str(cfg)).returncode == 0
    text = CONF.read_text()
    assert SHIPPED_GLOB in text
    conf = tmp_path / "logrotate.conf"
    conf.write_text(text.replace(SHIPPED_GLOB, str(logs / "*.log")))
    state = tmp_path / "logrotate.state"
    live = logs / "wattsched.log"

    with serve(cfg, tmp_path / "stdout.log") as d:
        wait_for(lambda: "enforce mode" in live.read_text(), 30, "the start-up line in the file")
        assert live.stat().st_mode & 0o077 == 0  # the owner's only

        _rotate(logrotate, conf, state)
        first = logs / "wattsched.log.1"
        assert first.exists() and "enforce mode" in first.read_text()
        _set_cap(d.url, 1234)
        wait_for(
            lambda: live.exists() and "power cap set to 1234" in live.read_text(),
            30,
            "the daemon writing into the new file",
        )
        assert "power cap set to 1234" not in first.read_text()

        _rotate(logrotate, conf, state)
        _set_cap(d.url, 1500)
        wait_for(
            lambda: live.exists() and "power cap set to 1500" in live.read_text(),
            30,
            "the daemon writing into the file after a second rotation",
        )
        # delaycompress: the newest rotation is plain, the one before it compressed.
        assert "power cap set to 1234" in (logs / "wattsched.log.1").read_text()
        with gzip.open(logs / "wattsched.log.2.gz", "rt") as old:
            assert "enforce mode" in old.read()
        assert d.get("/health").status_code == 200
    # Nothing of the daemon's own log went to stderr once the file was open.
    assert "power cap set" not in (tmp_path / "stdout.log").read_text()


def test_a_log_file_in_a_missing_folder_is_refused_at_start(tmp_path: Path) -> None:
    cfg = write_config(tmp_path)
    cfg.write_text('log_file = "nowhere/wattsched.log"\n' + cfg.read_text())
    assert run_cli("migrate", "-c", str(cfg)).returncode == 0
    r = run_cli("serve", "-c", str(cfg))
    assert r.returncode == 2
    assert f"log_file {tmp_path / 'nowhere' / 'wattsched.log'}" in r.stderr
    assert "does not exist" in r.stderr
