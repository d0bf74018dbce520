"""Bring up a real Grid Engine (Debian's 8.1.9) on this host under a temporary directory.

A private ``SGE_ROOT`` (links to the installed bin/lib/util, its own cell with classic
spooling under the temp dir), private qmaster/execd ports, one execution host (``localhost``)
with one queue ``all.q`` of ``slots`` slots and a parallel environment ``par``, a 1-second
scheduler interval. Torn down by PID (qmaster and execd pid files; jobs deleted first).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from slurm_cluster import free_port_block

SGE_LIB = Path("/var/lib/gridengine")
SPOOLINIT = Path("/usr/lib/gridengine/spoolinit")
SPOOLDEFAULTS = Path("/usr/lib/gridengine/spooldefaults")
CELL = "wattsched"

_EXEC_HOST = """hostname              localhost
load_scaling          NONE
complex_values        NONE
user_lists            NONE
xuser_lists           NONE
projects              NONE
xprojects             NONE
usage_scaling         NONE
report_variables      NONE
"""

_PE = """pe_name par
slots 9999
user_lists NONE
xuser_lists NONE
start_proc_args NONE
stop_proc_args NONE
allocation_rule $fill_up
control_slaves FALSE
job_is_first_task TRUE
urgency_slots min
accounting_summary FALSE
qsort_args NONE
"""

_QUEUE = """qname all.q
hostlist localhost
seq_no 0
load_thresholds NONE
suspend_thresholds NONE
nsuspend 1
suspend_interval 00:05:00
priority 0
min_cpu_interval 00:05:00
processors UNDEFINED
qtype BATCH INTERACTIVE
ckpt_list NONE
pe_list par
rerun FALSE
slots {slots}
tmpdir /tmp
shell /bin/sh
prolog NONE
epilog NONE
shell_start_mode posix_compliant
starter_method NONE
suspend_method NONE
resume_method NONE
terminate_method NONE
notify 00:00:60
owner_list NONE
user_lists NONE
xuser_lists NONE
subordinate_list NONE
complex_values NONE
projects NONE
xprojects NONE
calendar NONE
initial_state default
s_rt INFINITY
h_rt INFINITY
s_cpu INFINITY
h_cpu INFINITY
s_fsize INFINITY
h_fsize INFINITY
s_data INFINITY
h_data INFINITY
s_stack INFINITY
h_stack INFINITY
s_core INFINITY
h_core INFINITY
s_rss INFINITY
h_rss INFINITY
s_vmem INFINITY
h_vmem INFINITY
"""


def missing_binaries() -> list[str]:
    """The Grid Engine programs this launcher needs that are not installed."""
    need = [Path("/usr/sbin/sge_qmaster"), Path("/usr/sbin/sge_execd"), Path("/usr/bin/qconf"),
            SPOOLINIT, SPOOLDEFAULTS, SGE_LIB / "util" / "arch"]  # fmt: skip
    return [str(p) for p in need if not p.exists()]


@dataclass
class SGECluster:
    """A running Grid Engine; :meth:`run` runs a client command against it."""

    root: Path
    env: dict[str, str]

    def run(self, *args: str, check: bool = True, timeout: float = 20) -> str:
        """Run a Grid Engine command; its stdout."""
        res = subprocess.run(
            list(args), env=self.env, capture_output=True, text=True, timeout=timeout,
            cwd=self.root,
        )  # fmt: skip
        if check and res.returncode != 0:
            raise RuntimeError(f"{args} failed ({res.returncode}): {res.stderr}{res.stdout}")
        return res.stdout

    def _pid(self, pattern: str) -> int | None:
        for f in (self.root / "spool").rglob(pattern):
            try:
                return int(f.read_text().split()[0])
            except (OSError, ValueError, IndexError):
                continue
        return None

    def delete_all_jobs(self) -> None:
        """``qdel -u '*'`` and wait until no job is left."""
        self.run("qdel", "-f", "-u", "*", check=False)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and "<JB_job_number>" in self.run(
            "qstat", "-xml", "-u", "*", check=False
        ):
            time.sleep(0.2)

    def stop(self) -> None:
        """Delete jobs, then stop execd and qmaster by their PIDs."""
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            self.delete_all_jobs()
        for pattern in ("execd.pid", "qmaster.pid"):
            pid = self._pid(pattern)
            if pid is None:
                continue
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                continue
            for _ in range(100):
                try:
                    os.kill(pid, 0)
                except ProcessLookupError:
                    break
                time.sleep(0.05)
            else:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)


def start_sge(root: Path, slots: int = 4, timeout: float = 60.0) -> SGECluster:
    """Start qmaster and one execd under ``root``; RuntimeError if not up within ``timeout``."""
    missing = missing_binaries()
    if missing:
        raise RuntimeError(f"not installed: {', '.join(missing)}")
    if os.geteuid() != 0:
        raise RuntimeError("the Grid Engine fixture runs as root")
    t_end = time.monotonic() + timeout
    root = root.resolve()
    common = root / CELL / "common"
    for d in (common, root / "spool" / "qmaster", root / "spool" / "execd"):
        d.mkdir(parents=True, exist_ok=True)
    for sub in ("bin", "lib", "util", "utilbin"):
        link = root / sub
        if not link.exists():
            link.symlink_to(SGE_LIB / sub)
    spool = f"{common};{root / 'spool' / 'qmaster'}"
    (common / "bootstrap").write_text(
        f"""# Version: 8.1.9
admin_user              none
default_domain          none
ignore_fqdn             true
spooling_method         classic
spooling_lib            libspoolc
spooling_params         {spool}
binary_path             /usr/sbin
qmaster_spool_dir       {root / "spool" / "qmaster"}
security_mode           none
listener_threads        2
worker_threads          2
scheduler_threads       1
"""
    )
    (common / "act_qmaster").write_text("localhost\n")
    (common / "host_aliases").write_text(f"localhost {os.uname().nodename.split('.')[0]}\n")
    port = free_port_block(2, start=40000)
    env = {
        "PATH": "/usr/bin:/bin:/usr/sbin:/sbin",
        "SGE_ROOT": str(root),
        "SGE_CELL": CELL,
        "SGE_QMASTER_PORT": str(port),
        "SGE_EXECD_PORT": str(port + 1),
        "HOME": str(root),
        "LANG": "C",
    }
    cluster = SGECluster(root, env)
    conf = (Path("/usr/share/gridengine/default-configuration")).read_text()
    repl = {
        "execd_spool_dir": str(root / "spool" / "execd"),
        "min_uid": "0",
        "min_gid": "0",
        "mailer": "/bin/true",
        "load_report_time": "00:00:05",
    }
    lines = []
    for line in conf.splitlines():
        key = line.split()[0] if line.split() else ""
        lines.append(f"{key} {repl[key]}" if key in repl else line)
    (root / "global_conf").write_text("\n".join(lines) + "\n")
    try:
        for cmd in (
            [str(SPOOLINIT), "classic", "libspoolc", spool, "init"],
            [str(SPOOLDEFAULTS), "configuration", str(root / "global_conf")],
            [str(SPOOLDEFAULTS), "complexes", "/usr/share/gridengine/util/resources/centry"],
            [str(SPOOLDEFAULTS), "usersets", "/usr/share/gridengine/util/resources/usersets"],
            [str(SPOOLDEFAULTS), "managers", "root"],
            ["/usr/sbin/sge_qmaster"],
        ):
            cluster.run(*cmd)
        while cluster.run("qstat", "-xml", check=False).find("<job_info") < 0:
            if time.monotonic() > t_end:
                raise RuntimeError("sge_qmaster did not answer")
            time.sleep(0.2)
        cluster.run("qconf", "-as", "localhost")
        (root / "exec_host").write_text(_EXEC_HOST)
        cluster.run("qconf", "-Ae", str(root / "exec_host"))
        (root / "pe").write_text(_PE)
        cluster.run("qconf", "-Ap", str(root / "pe"))
        (root / "queue").write_text(_QUEUE.format(slots=slots))
        cluster.run("qconf", "-Aq", str(root / "queue"))
        sconf = cluster.run("qconf", "-ssconf")
        fast = {"schedule_interval": "0:0:1", "flush_submit_sec": "1", "flush_finish_sec": "1"}
        out = []
        for line in sconf.splitlines():
            key = line.split()[0] if line.split() else ""
            out.append(f"{key} {fast[key]}" if key in fast else line)
        (root / "sconf").write_text("\n".join(out) + "\n")
        cluster.run("qconf", "-Msconf", str(root / "sconf"))
        cluster.run("/usr/sbin/sge_execd")
        # Until execd reports, only the "global" pseudo-host has an arch ("-").
        while "<hostvalue name='arch_string'>lx-" not in cluster.run("qhost", "-xml"):
            if time.monotonic() > t_end:
                raise RuntimeError("sge_execd did not report to qmaster")
            time.sleep(0.2)
    except BaseException:
        cluster.stop()
        raise
    return cluster
