"""Benchmark: ``SlurmConnector.snapshot()`` latency on a real Slurm 22.05 cluster.

Starts the test cluster of ``tests/connectors/slurm_cluster.py`` (munged, slurmctld, slurmd
per node, loopback) with N nodes, submits M pending jobs (gated by job_submit.lua), then
times ``snapshot()`` and its parts (``squeue --json``, ``sinfo --json``, parsing), for both
job sources: ``squeue --json`` (default) and ``scontrol show job -o``.

    python bench/slurm_snapshot.py [--nodes 64] [--slurmd 64] [--jobs 1000] [--repeat 20]

Run as root (the cluster needs it). Prints a Markdown block for bench/results/.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "connectors"))

from slurm_cluster import start_cluster  # noqa: E402

from wattsched.connectors.rms_options import RMSOptions  # noqa: E402
from wattsched.connectors.runner import LocalRunner  # noqa: E402
from wattsched.connectors.slurm import SlurmConnector  # noqa: E402
from wattsched.connectors.slurm_jobs import (  # noqa: E402
    parse_jobs,
    parse_scontrol_jobs,
)
from wattsched.connectors.slurm_json import (  # noqa: E402
    parse_nodes,
)


def _stats(xs: list[float]) -> str:
    xs = sorted(xs)
    p95 = xs[min(len(xs) - 1, round(0.95 * (len(xs) - 1)))]
    return (
        f"min {xs[0] * 1000:.0f} ms, median {statistics.median(xs) * 1000:.0f} ms, "
        f"p95 {p95 * 1000:.0f} ms"
    )


def main() -> None:
    """Run the benchmark and print the results."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--nodes", type=int, default=64)
    ap.add_argument("--slurmd", type=int, default=None, help="nodes with a running slurmd")
    ap.add_argument("--jobs", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=20)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="wattsched-bench-") as tmp:
        t0 = time.perf_counter()
        cluster = start_cluster(
            Path(tmp),
            args.nodes,
            slurmd_nodes=args.slurmd,
            job_submit_lua=REPO / "deploy" / "slurm" / "job_submit.lua",
            extra_conf="MaxJobCount=20000",
            timeout=120,
        )
        up_s = time.perf_counter() - t0
        try:
            t0 = time.perf_counter()

            def submit(i: int) -> None:
                cluster.run(
                    "sbatch", "-o", "/dev/null", "-N", str(1 + i % 4), "-n", str(1 + i % 4),
                    "-t", str(10 + i % 50), "--comment", f"power={100 + i % 7 * 50}",
                    "--wrap", "sleep 600",
                )  # fmt: skip

            with ThreadPoolExecutor(4) as pool:
                list(pool.map(submit, range(args.jobs)))
            submit_s = time.perf_counter() - t0
            runner = LocalRunner(cluster.env, cwd=cluster.root, timeout=60)
            conn = SlurmConnector(runner, RMSOptions())
            fast = SlurmConnector(runner, RMSOptions(), job_source="scontrol")
            snap = conn.snapshot()  # warm-up (also checks the counts)
            fast_snap = fast.snapshot()
            times: list[float] = []
            fast_times: list[float] = []
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                snap = conn.snapshot()
                times.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                fast_snap = fast.snapshot()
                fast_times.append(time.perf_counter() - t0)
            sq, si, pj, pn, sc, psc = [], [], [], [], [], []
            for _ in range(args.repeat):
                r3 = runner.run(["env", "SLURM_TIME_FORMAT=%s", "scontrol", "show", "job", "-o"])
                sc.append(r3.seconds)
                t0 = time.perf_counter()
                parse_scontrol_jobs(r3.stdout)
                psc.append(time.perf_counter() - t0)
                r = runner.run(["squeue", "--json"])
                sq.append(r.seconds)
                r2 = runner.run(["sinfo", "--json"])
                si.append(r2.seconds)
                t0 = time.perf_counter()
                parse_jobs(r.stdout)
                pj.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                parse_nodes(r2.stdout)
                pn.append(time.perf_counter() - t0)
            squeue_bytes = len(r.stdout)
        finally:
            cluster.stop()
    uname = platform.uname()
    nproc = subprocess.run(["nproc"], capture_output=True, text=True).stdout.strip()
    cmd = " ".join(["python", "bench/slurm_snapshot.py", *sys.argv[1:]])
    print(f"""## {time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}

- command: `{cmd}`
- machine: nproc={nproc}; `{uname.system} {uname.node} {uname.release} {uname.version}
  {uname.machine}`
- cluster: Slurm 22.05 (Debian 12), {args.nodes} nodes, {args.slurmd or args.nodes} slurmd running,
  up in {up_s:.1f} s; {args.jobs} pending jobs (1-4 nodes each) submitted in {submit_s:.1f} s
- snapshot: {len(snap.nodes)} nodes, {len(snap.queued)} queued, {len(snap.running)} running;
  squeue --json output {squeue_bytes / 1e6:.2f} MB
- `snapshot()`, jobs from `squeue --json` ({args.repeat} runs): {_stats(times)}
- `snapshot()`, jobs from `scontrol show job -o` ({args.repeat} runs): {_stats(fast_times)}
  ({len(fast_snap.queued)} queued, {len(fast_snap.nodes)} nodes)
- parts: `squeue --json` {_stats(sq)}; `sinfo --json` {_stats(si)};
  parse squeue JSON {_stats(pj)}; parse nodes {_stats(pn)};
  `scontrol show job -o` {_stats(sc)}; parse it {_stats(psc)}
- target < 0.5 s (median): squeue-json {"met" if statistics.median(times) < 0.5 else "NOT met"},
  scontrol {"met" if statistics.median(fast_times) < 0.5 else "NOT met"}
""")


if __name__ == "__main__":
    main()
