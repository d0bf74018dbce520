"""Backends of the connector contract suite: each wraps a connector and checks its effects
with the RMS itself (not through the connector under test)."""

from __future__ import annotations

import os
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

from pbs_emulator import EmulatedPBS
from sge_cluster import SGECluster
from slurm_cluster import SlurmCluster

from wattsched.connectors.base import Connector
from wattsched.connectors.pbs import PBSConnector
from wattsched.connectors.rms_options import RMSOptions
from wattsched.connectors.runner import LocalRunner
from wattsched.connectors.sge import SGEConnector
from wattsched.connectors.simulated import SimulatedCluster
from wattsched.connectors.slurm import SlurmConnector
from wattsched.scheduler.model import Job, Node, Placement, PowerState, Resources


class Harness:
    """What the contract tests need from a backend besides the connector."""

    name = "base"
    connector: Connector
    rms_starts_released = True
    """After release() the RMS starts the job by itself (real RMSs; not the simulator)."""
    power_timeout_s = 120.0

    def submit(self, units: int, seconds: int = 60, *, user_hold: bool = False) -> str:
        """Submit a 1-core-per-unit job that waits for wattsched; its id."""
        raise NotImplementedError

    def ran_on(self, job_id: str, timeout: float = 20.0) -> tuple[str, ...] | None:
        """The nodes the job runs on, asked of the RMS; None if it did not start in time."""
        raise NotImplementedError

    def node_power(self, node: str) -> PowerState:
        """The node's power state as the RMS itself reports it."""
        raise NotImplementedError

    def node_process_alive(self, node: str) -> bool | None:
        """Whether the node's daemon process runs (None: no such process to check)."""
        return None

    def diagnose(self, node: str) -> str:
        """What the RMS logged about ``node``, for a failed assertion's message."""
        return ""

    def cleanup(self) -> None:
        """Between tests."""


@dataclass
class SlurmHarness(Harness):
    """Real Slurm (the session cluster of ``conftest.py``), jobs gated by job_submit.lua."""

    cluster: SlurmCluster
    connector: SlurmConnector = field(init=False)
    name = "slurm"

    def __post_init__(self) -> None:
        self.connector = SlurmConnector(
            LocalRunner(self.cluster.env, cwd=self.cluster.root, timeout=20),
            RMSOptions(default_walltime_s=3600),
        )

    def submit(self, units: int, seconds: int = 60, *, user_hold: bool = False) -> str:
        args = ["sbatch", "--parsable", "-o", "/dev/null", "-N", str(units), "-n", str(units)]
        if user_hold:
            args.append("-H")
        out = self.cluster.run(*args, "--wrap", f"sleep {seconds}")
        return out.strip().split(";")[0]

    def _show(self, job_id: str) -> dict[str, str]:
        line = self.cluster.run("scontrol", "show", "job", "-o", job_id)
        return dict(kv.split("=", 1) for kv in line.split() if "=" in kv)

    def ran_on(self, job_id: str, timeout: float = 20.0) -> tuple[str, ...] | None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            rec = self._show(job_id)
            if rec.get("JobState") in ("RUNNING", "COMPLETING", "COMPLETED"):
                hosts = self.cluster.run("scontrol", "show", "hostnames", rec["NodeList"])
                return tuple(hosts.split())
            time.sleep(0.2)
        return None

    def job_state(self, job_id: str) -> str:
        """``JobState`` from ``scontrol show job``."""
        return self._show(job_id).get("JobState", "")

    def node_power(self, node: str) -> PowerState:
        state = self.cluster.node_states()[node]
        if "POWERING_UP" in state or "POWER_UP" in state:
            return PowerState.BOOTING
        if "POWERED_DOWN" in state:
            return PowerState.OFF
        if "POWERING_DOWN" in state or "POWER_DOWN" in state:
            return PowerState.SHUTTING_DOWN
        return PowerState.ON

    def node_process_alive(self, node: str) -> bool | None:
        """Whether the node's slurmd runs (its pid file names a live process)."""
        pidfile = self.cluster.root / "run" / f"slurmd-{node}.pid"
        try:
            pid = int(pidfile.read_text().split()[0])
            os.kill(pid, 0)
        except (OSError, ValueError, IndexError):
            return False
        return True

    def diagnose(self, node: str) -> str:
        """The node's state line, the power programs' log, slurmctld's lines on it and its
        slurmd's log."""
        log = self.cluster.root / "log"
        parts = [self.cluster.run("scontrol", "show", "node", "-o", node, check=False).strip()]
        for name, keep in (
            ("power.log", None),
            ("slurmctld.log", node),
            (f"slurmd-{node}.log", None),
            (f"slurmd-{node}.out", None),
        ):
            try:
                lines = (log / name).read_text(errors="replace").splitlines()
            except OSError as exc:
                parts.append(f"{name}: {exc}")
                continue
            if keep is not None:
                lines = [ln for ln in lines if keep in ln or "power" in ln.lower()]
            parts.append(f"--- {name} (last 30 lines)\n" + "\n".join(lines[-30:]))
        return "\n".join(parts)

    def cleanup(self) -> None:
        self.cluster.cancel_all()
        deadline = time.monotonic() + 60
        asked: set[str] = set()
        while time.monotonic() < deadline:
            states = self.cluster.node_states()
            busy = False
            for n, s in states.items():
                if "POWERED_DOWN" in s and n not in asked:
                    # POWER_UP is only taken once the node is fully down (not while powering down)
                    self.cluster.run("scontrol", "update", f"NodeName={n}", "State=POWER_UP")
                    asked.add(n)
                if ("DRAIN" in s or s.startswith("DOWN")) and "POWER" not in s:
                    self.cluster.run(
                        "scontrol", "update", f"NodeName={n}", "State=RESUME", check=False
                    )
                busy = busy or s != "IDLE"
            if not busy:
                return
            time.sleep(0.25)
        raise RuntimeError(f"Slurm nodes did not return to IDLE: {self.cluster.node_states()}")


@dataclass
class SimulatedHarness(Harness):
    """The in-process simulated cluster: 4 nodes of 4 cores, a pool of pending jobs."""

    name = "simulated"
    rms_starts_released = False
    connector: SimulatedCluster = field(init=False)
    _pool: dict[int, list[str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        nodes = [Node(f"n{i}", Resources(cores=4, mem_mb=1000)) for i in range(1, 5)]
        jobs: list[Job] = []
        for units in (1, 2):
            self._pool[units] = []
            for k in range(8):
                jid = f"{units}u{k}"
                # Multi-unit jobs scatter, as Slurm's -N k does.
                rule = Placement.SCATTER if units > 1 else Placement.FREE
                jobs.append(Job(jid, 0, 600, units, Resources(cores=1), runtime=60, placement=rule))
                self._pool[units].append(jid)
        self.connector = SimulatedCluster(nodes, jobs, start_time=0)

    def submit(self, units: int, seconds: int = 60, *, user_hold: bool = False) -> str:
        jid = self._pool[units].pop(0)
        if user_hold:
            self.connector.hold(jid)
        return jid

    def ran_on(self, job_id: str, timeout: float = 20.0) -> tuple[str, ...] | None:
        for r in self.connector.snapshot().running:
            if r.job.id == job_id:
                return r.nodes
        return None

    def node_power(self, node: str) -> PowerState:
        return next(n.state for n in self.connector.snapshot().nodes if n.name == node)


@dataclass
class SGEHarness(Harness):
    """Real Grid Engine (one execution host, 4 slots); jobs gated by ``-ac wattsched=gate``."""

    cluster: SGECluster
    connector: SGEConnector = field(init=False)
    name = "sge"

    def __post_init__(self) -> None:
        self.connector = SGEConnector(
            LocalRunner(self.cluster.env, cwd=self.cluster.root, timeout=20),
            RMSOptions(default_walltime_s=3600),
        )

    def submit(self, units: int, seconds: int = 60, *, user_hold: bool = False) -> str:
        args = ["qsub", "-terse", "-h", "-b", "y", "-o", "/dev/null", "-j", "y"]
        if not user_hold:
            args += ["-ac", "wattsched=gate"]
        if units > 1:
            args += ["-pe", "par", str(units)]
        return self.cluster.run(*args, "sleep", str(seconds)).strip().split(".")[0]

    def ran_on(self, job_id: str, timeout: float = 20.0) -> tuple[str, ...] | None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            root = ET.fromstring(self.cluster.run("qstat", "-xml", "-g", "t", "-u", "*"))
            hosts = [
                (jl.findtext("queue_name") or "").partition("@")[2]
                for jl in root.iter("job_list")
                if jl.findtext("JB_job_number") == job_id and "r" in (jl.findtext("state") or "")
            ]
            if hosts:
                return tuple(hosts)
            time.sleep(0.2)
        return None

    def node_power(self, node: str) -> PowerState:
        return PowerState.ON

    def cleanup(self) -> None:
        self.cluster.delete_all_jobs()


@dataclass
class PBSHarness(Harness):
    """PBS on its recorded JSON formats (:mod:`pbs_emulator`: no PBS server runs here)."""

    name = "pbs"
    rms_starts_released = False
    """Scheduling is off on a wattsched PBS server: a released job waits for ``qrun``."""
    server: EmulatedPBS = field(default_factory=EmulatedPBS)
    connector: PBSConnector = field(init=False)

    def __post_init__(self) -> None:
        self.connector = PBSConnector(self.server, RMSOptions(default_walltime_s=3600))

    def submit(self, units: int, seconds: int = 60, *, user_hold: bool = False) -> str:
        return self.server.submit(units, seconds, hold="u" if user_hold else "o")

    def ran_on(self, job_id: str, timeout: float = 20.0) -> tuple[str, ...] | None:
        return self.server.exec_hosts(job_id)

    def node_power(self, node: str) -> PowerState:
        return PowerState.ON
