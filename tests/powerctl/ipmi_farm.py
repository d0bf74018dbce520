"""Real BMC simulators for the power driver tests: one ``ipmi_sim`` (OpenIPMI) per node on a
loopback UDP port, user ``admin`` / password ``secret`` (``shared/RECIPES.md``).

Each BMC keeps its chassis power in a file through a ``chassis_control`` script, so a test
reads what the BMC did without asking it through the driver under test.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from slurm_cluster import free_port_block

IPMI_SIM = "/usr/bin/ipmi_sim"
USER, PASSWORD = "admin", "secret"

_POWER_SCRIPT = """#!/bin/sh
# ipmi_sim chassis_control: "<dir> get power" prints power:0|1; "<dir> set power 0|1" sets it.
d="$1"; shift
case "$1" in
  get) shift; for k in "$@"; do [ "$k" = power ] && echo "power:$(cat "$d/power")"; done ;;
  set) shift; while [ $# -gt 1 ]; do [ "$1" = power ] && echo "$2" > "$d/power"; shift 2; done ;;
esac
"""

_EMU = """mc_setbmc 0x20
mc_add 0x20 0 no-device-sdrs 0x23 9 8 0x9f 0x1291 0xf02 persist_sdr
sel_enable 0x20 1000 0x0a
mc_enable 0x20
"""


def _lan_conf(
    name: str, port: int, bmc_dir: Path, guid: str, startcmd: str | None = None, tcp: int = 0
) -> str:
    auths = "none md2 md5 straight"
    if startcmd is None:
        power = f'chassis_control "{bmc_dir / "power.sh"} {bmc_dir}"'
    else:
        # The node's power is a real process: power on starts it, power off kills it.
        power = (
            f'serial 15 127.0.0.1 {tcp} codec VM\n  startcmd "{startcmd}"\n'
            "  startnow true\n  poweroff_wait 2\n  kill_wait 2"
        )
    return f"""name "{name}"
set_working_mc 0x20
  startlan 1
    addr 127.0.0.1 {port}
    priv_limit admin
    allowed_auths_callback {auths}
    allowed_auths_user {auths}
    allowed_auths_operator {auths}
    allowed_auths_admin {auths}
    guid {guid}
  endlan
  {power}
user 2 true "{USER}" "{PASSWORD}" admin 10 {auths}
"""


def free_udp_block(count: int, start: int = 30000) -> int:
    """The first of ``count`` consecutive free loopback UDP ports."""
    return free_port_block(count, start=start, kind=socket.SOCK_DGRAM)


@dataclass
class BMCFarm:
    """``count`` BMCs for nodes ``n1..nN``; :meth:`power` reads a node's power from its file."""

    root: Path
    count: int
    base_port: int = 0
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    startcmd: str | None = None
    """``{node}`` filled in: the process that is the node's power (None: a power file)."""
    tcp_base: int = 0

    @property
    def nodes(self) -> list[str]:
        return [f"n{i}" for i in range(1, self.count + 1)]

    def port(self, node: str) -> int:
        return self.base_port + int(node[1:]) - 1

    def table(self) -> dict[str, str]:
        """``[power.bmc] table`` entries of every node."""
        return {n: f"127.0.0.1:{self.port(n)}" for n in self.nodes}

    def power(self, node: str) -> bool:
        """The node's power as the BMC reports it (its power file, or ipmitool)."""
        if self.startcmd is None:
            return (self.root / node / "power").read_text().strip() == "1"
        r = self.ipmitool(node, "chassis", "power", "status")
        return r.stdout.strip().endswith("on")

    def ipmitool(self, node: str, *args: str) -> subprocess.CompletedProcess[str]:
        """Ask the BMC of ``node`` directly (not through the driver under test)."""
        return subprocess.run(
            ["ipmitool", "-I", "lanplus", "-C", "3", "-N", "1", "-R", "2", "-H", "127.0.0.1",
             "-p", str(self.port(node)), "-U", USER, "-P", PASSWORD, *args],
            capture_output=True, text=True, check=False, timeout=20,
        )  # fmt: skip

    def set_power(self, node: str, on: bool) -> None:
        (self.root / node / "power").write_text("1\n" if on else "0\n")

    def start(self) -> BMCFarm:
        if not os.path.exists(IPMI_SIM) or shutil.which("ipmitool") is None:
            raise RuntimeError("ipmi_sim (openipmi) or ipmitool is not installed")
        self.base_port = free_udp_block(self.count)
        if self.startcmd is not None:
            self.tcp_base = free_port_block(self.count, start=self.base_port + self.count + 1)
        for node in self.nodes:
            self._start_one(node)
        self.wait_ready()
        return self

    def _start_one(self, node: str) -> None:
        d = self.root / node
        (d / "state").mkdir(parents=True, exist_ok=True)
        script = d / "power.sh"
        script.write_text(_POWER_SCRIPT)
        script.chmod(0o755)
        if not (d / "power").exists():
            self.set_power(node, True)
        guid = f"{int(node[1:]):032x}"
        cmd = self.startcmd.format(node=node) if self.startcmd else None
        tcp = self.tcp_base + int(node[1:]) - 1
        (d / "lan.conf").write_text(_lan_conf(f"bmc-{node}", self.port(node), d, guid, cmd, tcp))
        (d / "cmds.emu").write_text(_EMU)
        self.procs[node] = subprocess.Popen(
            [IPMI_SIM, "-c", "lan.conf", "-f", "cmds.emu", "-s", "state", "-n"],
            cwd=d, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip

    def wait_ready(self, timeout: float = 15.0) -> None:
        """Until every BMC answers ``chassis power status``."""
        deadline = time.monotonic() + timeout
        todo = set(self.nodes) - set(self.stopped)
        while todo and time.monotonic() < deadline:
            for node in sorted(todo):
                r = subprocess.run(
                    ["ipmitool", "-I", "lanplus", "-C", "3", "-N", "1", "-R", "1",
                     "-H", "127.0.0.1", "-p", str(self.port(node)), "-U", USER, "-P", PASSWORD,
                     "chassis", "power", "status"],
                    capture_output=True, check=False, timeout=10,
                )  # fmt: skip
                if r.returncode == 0:
                    todo.discard(node)
            if todo:
                time.sleep(0.2)
        if todo:
            raise RuntimeError(f"BMCs did not answer: {sorted(todo)}")

    @property
    def stopped(self) -> list[str]:
        return [n for n, p in self.procs.items() if p.poll() is not None]

    def stop_bmc(self, node: str) -> None:
        """Stop one BMC (it no longer answers)."""
        proc = self.procs[node]
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(5)

    def restart_bmc(self, node: str) -> None:
        self._start_one(node)

    def stop(self) -> None:
        if self.startcmd is not None:
            for node, proc in self.procs.items():
                if proc.poll() is None:  # power off first: killing ipmi_sim leaves the child
                    self.ipmitool(node, "chassis", "power", "off")
        for proc in self.procs.values():
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGTERM)
                    proc.wait(5)
                except (ProcessLookupError, subprocess.TimeoutExpired):
                    proc.kill()
