"""A small simulated cluster for the status-page tests, in the Eurora files the daemon reads
(``nodes_file``, ``trace_file``, ``queues_file``), and its ``wattsched serve`` config.

8 nodes of 16 cores (15 W idle, about 33 W per 8-core job), 24 one-unit jobs of 8 cores
for 5 hours submitted at the start, and 3 s later one job with markup in its id and user on
two whole nodes: under a 300 W cap five jobs run and the others (that one too) are planned, a
state that holds for hours of cluster time (the clock runs at wall speed).
"""

from __future__ import annotations

from pathlib import Path

from daemon_proc import TOKEN
from daemon_services import free_port

XSS_JOB = "<script>window.xss=1</script>"
"""A job id that would run a script if the page put it into markup."""
XSS_USER = '<img src=x onerror="window.xss=2">'
"""A user name that would run a script if the page put it into markup."""
NODES = 8
CORES = 16
ARRIVAL = "2014-03-31 12:00:00"
XSS_ARRIVAL = "2014-03-31 12:00:03"


def _job_line(
    job_id: str, user: str, units: int, cores: int, est: str, arrival: str = ARRIVAL
) -> str:
    alloc = "".join(f"{n};{cores};0;0;1048576#" for n in range(units))
    return (
        f"{job_id};exe;{user};parallel;{arrival}__{alloc}__"
        f"2014-03-31 12:00:10;2014-03-31 17:00:10;{units};{units * cores};1048576;{est};"
        "NA;NA;COMPLETED;0"
    )


def write_cluster(root: Path, *, cap_w: float = 300, jobs: int = 24) -> Path:
    """The cluster's files and an enforce-mode config under ``root``; returns the config."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "nodes").write_text(
        "".join(f"{i} {CORES} 0 0 33554432 0\n" for i in range(NODES)), encoding="utf-8"
    )
    (root / "queues").write_text("parallel 21600\n", encoding="utf-8")
    lines = [_job_line(str(1000 + i), "alice", 1, 8, "06:00") for i in range(jobs)]
    # It arrives 3 s after the others (the clock runs at wall speed): they have started.
    lines.append(_job_line(XSS_JOB, XSS_USER, 2, CORES, "01:00", XSS_ARRIVAL))
    (root / "trace").write_text("\n".join(lines) + "\n", encoding="utf-8")
    # Cool nodes (r P well under the threshold): the guard holds nothing back here.
    (root / "thermal.toml").write_text(
        "t_sup = 20.0\nt_thresh = 100.0\nr = 0.05\nc = 2000.0\n", encoding="utf-8"
    )
    (root / "token").write_text(TOKEN + "\n", encoding="utf-8")
    (root / "token").chmod(0o600)
    cfg = root / "wattsched.toml"
    cfg.write_text(
        f"""
mode = "enforce"
cycle_seconds = 0.5
dispatcher = "prb"
power_cap_w = {cap_w}
database_url = "sqlite:///{root / "var" / "w.db"}"
[dispatcher_params]
full_plan = true
[api]
bind = "127.0.0.1:{free_port()}"
token_file = "token"
[connector]
kind = "simulated"
nodes_file = "{root / "nodes"}"
trace_file = "{root / "trace"}"
queues_file = "{root / "queues"}"
speedup = 1
offline = false
[cooling]
kind = "air"
season = "summer"
[thermal]
file = "thermal.toml"
""",
        encoding="utf-8",
    )
    return cfg
