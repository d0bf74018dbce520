"""Run ``wattsched serve`` as a subprocess on a temp config (the simulated Eurora cluster)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx2
from daemon_services import free_port

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "deploy" / "data"
WATTSCHED = [sys.executable, "-m", "wattsched.daemon.cli"]
TOKEN = "e2e-token-0123456789abcdefghij"


@dataclass
class Daemon:
    """A running ``wattsched serve``."""

    proc: subprocess.Popen[bytes]
    url: str
    log: Path

    def get(self, path: str, **kw: object) -> httpx2.Response:
        return httpx2.get(self.url + path, timeout=10, **kw)  # type: ignore[arg-type]


def write_config(
    root: Path,
    *,
    cap_w: float = 1500,
    cycle_s: float = 0.3,
    speedup: float = 100,
    port: int | None = None,
    database_url: str | None = None,
) -> Path:
    """A daemon config in enforce mode on the bundled Eurora data; returns its path."""
    port = port or free_port()
    database_url = database_url or f"sqlite:///{root / 'var' / 'w.db'}"
    (root / "token").write_text(TOKEN + "\n")
    cfg = root / "wattsched.toml"
    cfg.write_text(
        f"""
mode = "enforce"
cycle_seconds = {cycle_s}
dispatcher = "prb"
power_cap_w = {cap_w}
database_url = "{database_url}"
[dispatcher_params]
full_plan = true
[api]
bind = "127.0.0.1:{port}"
token_file = "token"
[connector]
kind = "simulated"
nodes_file = "{DATA / "nodes_32"}"
trace_file = "{DATA / "hist_200_20140331_112449.log_crypt"}"
queues_file = "{DATA / "system_queues"}"
power_predictions_file = "{DATA / "power_predictions"}"
speedup = {speedup}
offline = true
"""
    )
    return cfg


def bind_of(cfg: Path) -> str:
    for line in cfg.read_text().splitlines():
        if line.startswith("bind"):
            return line.split('"')[1]
    raise ValueError("no bind")


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    """``wattsched ARGS`` to completion."""
    return subprocess.run(
        [*WATTSCHED, *args], capture_output=True, text=True, timeout=120, cwd=REPO, check=False
    )


@contextlib.contextmanager
def serve(cfg: Path, log: Path, timeout: float = 60) -> Iterator[Daemon]:
    """``wattsched serve -c cfg`` until the API answers; killed (by PID) on exit."""
    out = log.open("ab")
    proc = subprocess.Popen(
        [*WATTSCHED, "serve", "-c", str(cfg), "--log-level", "info"],
        stdout=out,
        stderr=subprocess.STDOUT,
        cwd=REPO,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    d = Daemon(proc, f"http://{bind_of(cfg)}", log)
    try:
        end = time.monotonic() + timeout
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"serve exited {proc.returncode}: {log.read_text()[-2000:]}")
            with contextlib.suppress(httpx2.HTTPError):
                if d.get("/health").status_code == 200:
                    break
            if time.monotonic() > end:
                raise RuntimeError(f"serve did not answer: {log.read_text()[-2000:]}")
            time.sleep(0.1)
        yield d
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            proc.wait(10)
        out.close()


def wait_for(cond: object, timeout: float, what: str) -> None:
    """Poll ``cond()`` until true."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():  # type: ignore[operator]
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")
