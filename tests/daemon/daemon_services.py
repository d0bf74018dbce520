"""Real services for the daemon tests, started under a temp dir on loopback, stopped by PID.

PostgreSQL (Debian ``postgresql``: ``initdb`` + ``pg_ctl`` as user postgres) and Prometheus
(Debian ``prometheus``). Each helper raises :class:`ServiceUnavailable` with the reason when
the service cannot start; the fixtures turn that into ``pytest.skip``.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

PG_BIN_GLOB = "/usr/lib/postgresql/*/bin"
API_TOKEN = "test-token-0123456789abcdef"
"""The bearer token of the in-process API tests."""


class ServiceUnavailable(RuntimeError):
    """A real service could not be started here; the message says why."""


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_port(port: int, timeout: float) -> bool:
    """True once something accepts connections on 127.0.0.1:port."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return True
        time.sleep(0.05)
    return False


def _pg_bin() -> Path:
    bins = sorted(Path("/").glob(PG_BIN_GLOB.lstrip("/")))
    if not bins:
        raise ServiceUnavailable("PostgreSQL is not installed (Debian package postgresql)")
    return bins[-1]


@contextlib.contextmanager
def postgres_server() -> Iterator[str]:
    """A PostgreSQL server in a temp dir; yields its admin URL (trust auth, loopback only)."""
    bin_dir = _pg_bin()
    try:
        pg_user = pwd.getpwnam("postgres")
    except KeyError:
        raise ServiceUnavailable("no postgres system user") from None
    root = Path(tempfile.mkdtemp(prefix="wattsched-pg-"))
    os.chown(root, pg_user.pw_uid, pg_user.pw_gid)
    data = root / "data"
    port = free_port()
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "LC_ALL": "C.UTF-8"}
    pid: int | None = None
    try:
        init = subprocess.run(
            [
                str(bin_dir / "initdb"),
                "-D",
                str(data),
                "-A",
                "trust",
                "-U",
                "postgres",
                "-E",
                "UTF8",
            ],
            capture_output=True,
            user=pg_user.pw_uid,
            group=pg_user.pw_gid,
            cwd=root,
            text=True,
            env=env,
            timeout=120,
            check=False,
        )
        if init.returncode != 0:
            raise ServiceUnavailable(f"initdb failed: {init.stderr[-500:]}")
        opts = f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off"
        start = subprocess.run(
            [
                str(bin_dir / "pg_ctl"),
                "-D",
                str(data),
                "-o",
                opts,
                "-l",
                str(root / "log"),
                "-w",
                "-t",
                "60",
                "start",
            ],
            capture_output=True,
            user=pg_user.pw_uid,
            group=pg_user.pw_gid,
            cwd=root,
            text=True,
            env=env,
            timeout=90,
            check=False,
        )
        pidfile = data / "postmaster.pid"
        if pidfile.exists():
            pid = int(pidfile.read_text().split()[0])
        if start.returncode != 0 or not wait_port(port, 10):
            log = (root / "log").read_text() if (root / "log").exists() else ""
            raise ServiceUnavailable(f"pg_ctl start failed: {start.stderr[-300:]} {log[-300:]}")
        yield f"postgresql+psycopg://postgres@127.0.0.1:{port}/postgres"
    finally:
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGINT)  # fast shutdown
            _wait_gone(pid, 15)
        shutil.rmtree(root, ignore_errors=True)


def _wait_gone(pid: int, timeout: float) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


@contextlib.contextmanager
def prometheus_server(
    target: str, scrape_interval_s: int = 1, rules: Path | None = None
) -> Iterator[str]:
    """A Prometheus scraping ``target`` (host:port) every second, evaluating ``rules`` (an
    alert rules file) if given; yields its base URL."""
    exe = shutil.which("prometheus")
    if exe is None:
        raise ServiceUnavailable("Prometheus is not installed (Debian package prometheus)")
    root = Path(tempfile.mkdtemp(prefix="wattsched-prom-"))
    port = free_port()
    (root / "prometheus.yml").write_text(
        "global:\n"
        f"  scrape_interval: {scrape_interval_s}s\n"
        f"  evaluation_interval: {scrape_interval_s}s\n"
        + (f"rule_files: ['{rules}']\n" if rules is not None else "")
        + "scrape_configs:\n"
        "  - job_name: wattsched\n"
        f"    static_configs: [{{targets: ['{target}']}}]\n"
    )
    log = (root / "log").open("w")
    proc = subprocess.Popen(
        [
            exe,
            f"--config.file={root / 'prometheus.yml'}",
            f"--storage.tsdb.path={root / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        if not wait_port(port, 30):
            raise ServiceUnavailable(
                f"prometheus did not listen: {(root / 'log').read_text()[-500:]}"
            )
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
        shutil.rmtree(root, ignore_errors=True)
