"""Bring up a real several-node Slurm cluster on this host, under a temporary directory.

munged + slurmctld + one ``slurmd -N nX`` per node, all on 127.0.0.1, with a slurm.conf
generated at run time (see shared RECIPES.md). Power saving is on (``SuspendTime`` huge, so
nothing is suspended automatically); the Suspend/Resume programs stop and start the node's
slurmd, so ``scontrol update NodeName=n2 State=POWER_DOWN`` really stops a process.

Used by the pytest fixture in ``conftest.py`` and by ``bench/slurm_snapshot.py``. Every
process is torn down by its PID (the ones we started, and the slurmd PIDs the resume program
wrote to their pid files).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

SBIN = Path("/usr/sbin")

# Written as Python (run by the interpreter running the tests), not sh: Slurm runs these
# with signals blocked and no /usr/sbin in PATH; the resume program clears the signal mask
# before starting slurmd in its own session.
_POWER_SCRIPT = """#!{python}
import os, signal, subprocess, sys, time
CONF = {conf!r}
RUN = {run!r}
LOG = {log!r}
ACTION = {action!r}
env = dict(os.environ, SLURM_CONF=CONF)
names = subprocess.run(["/usr/bin/scontrol", "show", "hostnames", sys.argv[1]],
                       env=env, capture_output=True, text=True, check=True).stdout.split()
signal.pthread_sigmask(signal.SIG_SETMASK, [])

def start(n):
    out = open(os.path.join(LOG, f"slurmd-{{n}}.out"), "ab")
    return subprocess.Popen(["/usr/sbin/slurmd", "-b", "-D", "-N", n, "-f", CONF],
                            stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                            start_new_session=True, env=env)

with open(os.path.join(LOG, "power.log"), "a", buffering=1) as log:
    if ACTION == "suspend":
        for n in names:
            log.write(f"{{time.time():.3f}} suspend {{n}}\\n")
            pidfile = os.path.join(RUN, f"slurmd-{{n}}.pid")
            try:
                pid = int(open(pidfile).read().split()[0])
                os.kill(pid, signal.SIGTERM)
                # Off means off: wait for it to exit (its port freed; a zombie child of the
                # fixture counts as exited), then kill it.
                for _ in range(40):
                    time.sleep(0.25)
                    if open(f"/proc/{{pid}}/stat").read().rsplit(")", 1)[1].split()[0] == "Z":
                        raise OSError("exited")
                os.kill(pid, signal.SIGKILL)
                log.write(f"{{time.time():.3f}} slurmd {{n}} killed after 10 s\\n")
            except (OSError, ValueError):
                pass
    else:
        # A slurmd that exits at once (its port still held by the one just stopped, under
        # load) is started again, as a real resume program retries a node that fails to boot.
        procs = {{}}
        for n in names:
            procs[n] = start(n)
            log.write(f"{{time.time():.3f}} resume {{n}} pid {{procs[n].pid}}\\n")
        for attempt in range(5):
            time.sleep(3)
            dead = [n for n, p in procs.items() if p.poll() is not None]
            if not dead:
                break
            for n in dead:
                log.write(f"{{time.time():.3f}} slurmd {{n}} exited {{procs[n].returncode}}\\n")
                procs[n] = start(n)
                log.write(f"{{time.time():.3f}} resume {{n}} again pid {{procs[n].pid}}\\n")
"""


def free_port_block(
    count: int, start: int = 20000, stop: int = 60000, kind: int = socket.SOCK_STREAM
) -> int:
    """The first port of ``count`` consecutive free loopback ports (TCP, or UDP with
    ``kind=socket.SOCK_DGRAM``; pid-spread start)."""
    base = start + (os.getpid() * 37) % (stop - start - count)
    for _ in range(200):
        socks: list[socket.socket] = []
        try:
            for p in range(base, base + count):
                s = socket.socket(socket.AF_INET, kind)
                socks.append(s)
                s.bind(("127.0.0.1", p))
            return base
        except OSError:
            base = start + (base - start + count + 13) % (stop - start - count)
        finally:
            for s in socks:
                s.close()
    raise RuntimeError("no block of free ports found")


@dataclass
class SlurmCluster:
    """A running Slurm cluster (use :func:`start_cluster`); call :meth:`stop` to tear it down."""

    root: Path
    nodes: list[str]
    env: dict[str, str]
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    @property
    def conf(self) -> Path:
        """The generated slurm.conf."""
        return self.root / "etc" / "slurm.conf"

    def run(self, *args: str, check: bool = True, timeout: float = 20) -> str:
        """Run a Slurm client command against this cluster; its stdout."""
        res = subprocess.run(
            list(args), env=self.env, capture_output=True, text=True, timeout=timeout,
            cwd=self.root,
        )  # fmt: skip
        if check and res.returncode != 0:
            raise RuntimeError(f"{args} failed ({res.returncode}): {res.stderr}")
        return res.stdout

    def node_states(self) -> dict[str, str]:
        """Node name -> ``State=`` value from ``scontrol show node -o``."""
        out: dict[str, str] = {}
        for line in self.run("scontrol", "show", "node", "-o").splitlines():
            fields = dict(kv.split("=", 1) for kv in line.split() if "=" in kv)
            if "NodeName" in fields:
                out[fields["NodeName"]] = fields.get("State", "")
        return out

    def wait_idle(self, timeout: float = 30.0, nodes: list[str] | None = None) -> bool:
        """Wait until the given nodes (all by default) are plain IDLE."""
        want = nodes or self.nodes
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            states = self.node_states()
            if all(states.get(n, "").split("+")[0] == "IDLE" for n in want) and not any(
                "POWER" in states.get(n, "") or "NOT_RESPONDING" in states.get(n, "") for n in want
            ):
                return True
            time.sleep(0.2)
        return False

    def cancel_all(self) -> None:
        """Cancel every job (between tests)."""
        self.run("scancel", "--full", "-u", "root", check=False)
        ids = [j["job_id"] for j in json.loads(self.run("squeue", "--json"))["jobs"]]
        if ids:
            self.run("scancel", *map(str, ids), check=False)

    def _pids(self) -> list[int]:
        pids = [p.pid for p in self.procs.values() if p.poll() is None]
        for f in (self.root / "run").glob("slurmd-*.pid"):
            try:
                pids.append(int(f.read_text().split()[0]))
            except (OSError, ValueError, IndexError):
                continue
        return sorted(set(pids))

    def _drain_jobs(self, timeout: float = 15.0) -> None:
        """Cancel every job and wait until none runs (their slurmstepd exit with them)."""
        ctl = self.procs.get("slurmctld")
        if ctl is None or ctl.poll() is not None:
            return
        try:
            self.cancel_all()
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                jobs = json.loads(self.run("squeue", "--json", timeout=10))["jobs"]
                if not any(j["job_state"] in ("RUNNING", "COMPLETING", "CONFIGURING")
                           for j in jobs):  # fmt: skip
                    return
                time.sleep(0.2)
        except (OSError, RuntimeError, ValueError, KeyError, subprocess.SubprocessError):
            return

    def stop(self) -> None:
        """Stop every process of the cluster by PID: jobs first (so no slurmstepd is left),
        then slurmds, slurmctld, munged."""
        self._drain_jobs()
        order = [k for k in self.procs if k.startswith("slurmd")] + ["slurmctld", "munged"]
        slurmd_pids = [
            pid for pid in self._pids() if pid not in {p.pid for p in self.procs.values()}
        ]
        for pid in slurmd_pids:
            _kill(pid)
        for name in order:
            proc = self.procs.get(name)
            if proc is not None and proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(5)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(5)


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    for _ in range(50):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return


def missing_binaries() -> list[str]:
    """The Slurm/munge programs this launcher needs that are not installed."""
    need = [SBIN / "munged", SBIN / "slurmctld", SBIN / "slurmd", Path("/usr/bin/scontrol")]
    return [str(p) for p in need if not p.exists()]


def _write_munge_key(path: Path) -> None:
    path.write_bytes(os.urandom(1024))
    path.chmod(0o600)


def start_cluster(
    root: Path,
    n_nodes: int = 4,
    *,
    cpus: int = 4,
    slurmd_nodes: int | None = None,
    extra_conf: str = "",
    job_submit_lua: Path | None = None,
    timeout: float = 30.0,
) -> SlurmCluster:
    """Start a cluster of ``n_nodes`` nodes ``n1..nN`` under ``root``.

    ``slurmd_nodes`` limits how many get a running slurmd (the rest are declared but stay
    down: the benchmark's 64-node cluster). ``job_submit_lua`` (e.g.
    ``deploy/slurm/job_submit.lua``) is copied next to slurm.conf and enabled. Raises
    RuntimeError when the cluster does not come up.
    """
    missing = missing_binaries()
    if missing:
        raise RuntimeError(f"not installed: {', '.join(missing)}")
    if os.geteuid() != 0:
        raise RuntimeError("the Slurm fixture runs as root (SlurmUser=root, munge key)")
    root = root.resolve()
    for sub in ("etc", "munge", "state", "spool", "run", "log"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    (root / "munge").chmod(0o711)
    root.chmod(0o755)
    key = root / "munge" / "munge.key"
    _write_munge_key(key)
    env = {
        "PATH": "/usr/bin:/bin:/usr/sbin:/sbin",
        "SLURM_CONF": str(root / "etc" / "slurm.conf"),
        "HOME": str(root),
        "LANG": "C.UTF-8",
    }
    nodes = [f"n{i}" for i in range(1, n_nodes + 1)]
    cluster = SlurmCluster(root=root, nodes=nodes, env=env)
    try:
        munge_sock = root / "munge" / "munge.sock"
        cluster.procs["munged"] = subprocess.Popen(
            [
                str(SBIN / "munged"), "-F", "--force",
                f"--socket={munge_sock}", f"--key-file={key}",
                f"--pid-file={root / 'run' / 'munged.pid'}",
                f"--log-file={root / 'log' / 'munged.log'}",
                f"--seed-file={root / 'munge' / 'munge.seed'}",
            ],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        _wait_for(lambda: munge_sock.exists(), 10, "munged socket")
        ports = free_port_block(n_nodes + 1)
        ctl_port, node_base = ports, ports + 1
        scripts = {}
        for action in ("suspend", "resume"):
            p = root / "etc" / f"{action}.py"
            p.write_text(
                _POWER_SCRIPT.format(
                    conf=env["SLURM_CONF"], run=str(root / "run"), log=str(root / "log"),
                    action=action, python=sys.executable,
                )
            )  # fmt: skip
            p.chmod(0o755)
            scripts[action] = p
        if job_submit_lua is not None:
            shutil.copy(job_submit_lua, root / "etc" / "job_submit.lua")
            extra_conf = "JobSubmitPlugins=lua\n" + extra_conf
        conf = _slurm_conf(root, nodes, cpus, ctl_port, node_base, munge_sock, scripts, extra_conf)
        cluster.conf.write_text(conf)
        ctl_log = open(root / "log" / "slurmctld.out", "ab")  # noqa: SIM115 - child owns it
        cluster.procs["slurmctld"] = subprocess.Popen(
            [str(SBIN / "slurmctld"), "-D", "-c", "-i", "-f", str(cluster.conf)],
            stdin=subprocess.DEVNULL, stdout=ctl_log, stderr=ctl_log, env=env,
        )  # fmt: skip
        _wait_for(
            lambda: subprocess.run(
                ["scontrol", "ping"], env=env, capture_output=True, timeout=5
            ).returncode == 0,
            timeout, "slurmctld",
        )  # fmt: skip
        start_n = n_nodes if slurmd_nodes is None else slurmd_nodes
        for n in nodes[:start_n]:
            out = open(root / "log" / f"slurmd-{n}.out", "ab")  # noqa: SIM115
            cluster.procs[f"slurmd-{n}"] = subprocess.Popen(
                [str(SBIN / "slurmd"), "-D", "-N", n, "-f", str(cluster.conf)],
                stdin=subprocess.DEVNULL, stdout=out, stderr=out, env=env,
            )  # fmt: skip
        if start_n and not cluster.wait_idle(timeout, nodes[:start_n]):
            raise RuntimeError(f"nodes not idle after {timeout} s: {cluster.node_states()}")
    except BaseException:
        cluster.stop()
        raise
    return cluster


def _wait_for(pred: object, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if pred():  # type: ignore[operator]
                return
        except (OSError, subprocess.SubprocessError):
            pass
        time.sleep(0.1)
    raise RuntimeError(f"{what} did not come up within {timeout} s")


def _slurm_conf(
    root: Path,
    nodes: list[str],
    cpus: int,
    ctl_port: int,
    node_base: int,
    munge_sock: Path,
    scripts: Mapping[str, Path],
    extra: str,
) -> str:
    host = socket.gethostname().split(".")[0]
    n = len(nodes)
    node_line = (
        f"NodeName=n[1-{n}] NodeHostname=localhost NodeAddr=127.0.0.1"
        f" Port=[{node_base}-{node_base + n - 1}] CPUs={cpus} RealMemory=1000 State=UNKNOWN"
    )
    return f"""# generated by tests/connectors/slurm_cluster.py
ClusterName=wattsched
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={ctl_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={munge_sock}
CommunicationParameters=NoInAddrAny
SlurmdParameters=config_overrides
StateSaveLocation={root / "state"}
SlurmdSpoolDir={root / "spool"}/%n
SlurmctldPidFile={root / "run"}/slurmctld.pid
SlurmdPidFile={root / "run"}/slurmd-%n.pid
SlurmctldLogFile={root / "log"}/slurmctld.log
SlurmdLogFile={root / "log"}/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0,sched_min_interval=0
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
ReturnToService=2
MpiDefault=none
MailProg=/bin/true
MinJobAge=300
SlurmctldTimeout=10
SlurmdTimeout=30
# Power saving on, never automatic (SuspendTime=INFINITE would disable POWER_UP/DOWN).
SuspendTime=31536000
SuspendTimeout=5
ResumeTimeout=90
SuspendRate=0
ResumeRate=0
SuspendProgram={scripts["suspend"]}
ResumeProgram={scripts["resume"]}
{extra}
{node_line}
PartitionName=batch Nodes=n[1-{n}] Default=YES MaxTime=INFINITE State=UP
"""


if __name__ == "__main__":  # pragma: no cover - manual use: python slurm_cluster.py DIR [N]
    target = Path(sys.argv[1])
    if target.exists():
        shutil.rmtree(target)
    lua = Path(__file__).resolve().parents[2] / "deploy" / "slurm" / "job_submit.lua"
    c = start_cluster(target, int(sys.argv[2]) if len(sys.argv) > 2 else 4, job_submit_lua=lua)
    sys.stdout.write(f"export SLURM_CONF={c.conf}\n")
    sys.stdout.write("press Ctrl-C (or send SIGTERM) to stop\n")
    sys.stdout.flush()

    def _stop(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    try:
        signal.pause()
    except KeyboardInterrupt:
        pass
    finally:
        c.stop()
