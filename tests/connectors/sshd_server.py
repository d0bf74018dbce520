"""A private sshd on a loopback port, with its own host key and one client key (RECIPES.md)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from slurm_cluster import free_port_block

SSHD = Path("/usr/sbin/sshd")


@dataclass
class SSHServer:
    """A running sshd: where it listens, the client key, a known_hosts that trusts it."""

    port: int
    key_file: Path
    known_hosts: Path
    host_pub: str
    proc: subprocess.Popen[bytes]
    root: Path

    def stop(self) -> None:
        """Stop sshd by its PID."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)


def _keygen(path: Path) -> str:
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True, timeout=30
    )
    return path.with_suffix(".pub").read_text().strip()


def start_sshd(root: Path, timeout: float = 10.0) -> SSHServer:
    """Start sshd under ``root`` on 127.0.0.1; raises RuntimeError when it does not listen."""
    if not SSHD.exists() or shutil.which("ssh-keygen") is None:
        raise RuntimeError("openssh-server is not installed")
    if os.geteuid() != 0:
        raise RuntimeError("the sshd fixture runs as root")
    Path("/run/sshd").mkdir(parents=True, exist_ok=True)  # privilege-separation dir
    root.mkdir(parents=True, exist_ok=True)
    host_pub = _keygen(root / "host_ed25519")
    client_pub = _keygen(root / "client_ed25519")
    (root / "authorized_keys").write_text(client_pub + "\n")
    port = free_port_block(1, start=30000)
    cfg = root / "sshd_config"
    cfg.write_text(
        f"""Port {port}
ListenAddress 127.0.0.1
HostKey {root / "host_ed25519"}
PidFile {root / "sshd.pid"}
AuthorizedKeysFile {root / "authorized_keys"}
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
"""
    )
    known = root / "known_hosts"
    known.write_text(f"[127.0.0.1]:{port} {' '.join(host_pub.split()[:2])}\n")
    proc = subprocess.Popen(
        [str(SSHD), "-D", "-f", str(cfg), "-E", str(root / "sshd.log")],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    server = SSHServer(port, root / "client_ed25519", known, host_pub, proc, root)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            log = (root / "sshd.log").read_text() if (root / "sshd.log").exists() else ""
            raise RuntimeError(f"sshd exited ({proc.returncode}): {log[-1000:]}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return server
        except OSError:
            time.sleep(0.05)
    server.stop()
    raise RuntimeError(f"sshd did not listen on port {port} within {timeout} s")
