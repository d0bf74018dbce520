"""Where the idle node time of the Curie tuning workload lies, and why no policy takes it.

Replays the test part of ``tune_scenarios.py``'s Curie workload (first 1,000 jobs of the CEA
Curie sample on ``curie-300.toml``, split 50/25/25 in time) with EASY and every node always
on, then prints:

* the idle node time (what :func:`saving_ceiling` counts), split into gaps before a node's
  first job, between two jobs and after its last one, and the share in gaps longer than
  shutdown + boot and longer than an hour;
* the share of that idle time during which jobs wait in the queue, and during which the
  queued jobs' pooled cores exceed the free cores (the idle timeout and HGFS power a node off
  only when the queue still fits the powered nodes without it).

With ``--policies``, also replays the test part under the 5-minute idle timeout, HGFS acting
as that timeout (rule 1b on the whole queue), the same without rule 1b, and the paper's HGFS,
and prints their objectives: what switching the idle nodes off costs in waiting.

Usage: ``.venv/bin/python bench/curie_idle_gaps.py [--policies]`` (a few seconds; about a
minute with ``--policies``).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import tune_scenarios as ts

from wattsched.connectors.simulated import SimulatedCluster
from wattsched.daemon.replay import replay
from wattsched.powerctl.hgfs import HGFSParams
from wattsched.powerctl.tuning.encoding import idle_timeout_like
from wattsched.powerctl.tuning.evaluate import Workload, evaluate
from wattsched.powerctl.tuning.measures import busy_spans
from wattsched.scheduler import dispatcher as registry


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--policies", action="store_true", help="Also replay four power policies.")
    args = ap.parse_args()
    trace, system, first = ts.workloads(3, 0, Path("/tmp"))["curie"]
    test = ts.split(trace, system, first, 0.0, 0)[2]
    cluster = SimulatedCluster(list(test.nodes), list(test.jobs), test.cap)
    replay(cluster, registry.create("easy"))
    t0, t_end = cluster.start_time, cluster.now
    spans = busy_spans(cluster)
    gaps: list[tuple[int, str]] = []
    for node in test.nodes:
        reach = t0
        for a, b in sorted(spans.get(node.name, [])):
            if a > reach:
                gaps.append((a - reach, "before the first job" if reach == t0 else "between jobs"))
            reach = max(reach, b)
        if t_end > reach:
            gaps.append((t_end - reach, "after the last job"))
    length = np.array([g for g, _ in gaps], dtype=float)
    kind = np.array([k for _, k in gaps])
    total = length.sum()
    n_nodes = len(test.nodes)
    print(f"{test.name}: {len(test.jobs)} jobs, schedule {(t_end - t0) / 3600:.1f} h")
    print(f"idle node time {total / 3600:,.0f} of {n_nodes * (t_end - t0) / 3600:,.0f} node-hours")
    for k in ("before the first job", "between jobs", "after the last job"):
        print(f"  {k}: {length[kind == k].sum() / total:.1%} ({(kind == k).sum()} gaps)")
    node = test.nodes[0]
    cycle = node.boot_s + node.shutdown_s
    for threshold, label in ((cycle, "shutdown + boot"), (3600, "an hour")):
        print(f"  in gaps longer than {label}: {length[length > threshold].sum() / total:.1%}")

    grid = np.arange(t0, t_end, 60)
    need = np.zeros(len(grid))
    busy_cores = np.zeros(len(grid))
    jobs = {j.id: j for j in test.jobs}
    for jid, r in cluster.records.items():
        if r.start is None or r.end is None:
            continue
        j = jobs[jid]
        cores = j.units * j.unit.cores
        need[(grid >= j.submit) & (grid < r.start)] += cores
        busy_cores[(grid >= r.start) & (grid < r.end)] += cores
    idle_nodes = np.full(len(grid), n_nodes)
    for node_spans in spans.values():
        busy = np.zeros(len(grid), dtype=bool)
        for a, b in node_spans:
            busy |= (grid >= a) & (grid < b)
        idle_nodes -= busy
    free = sum(n.capacity.cores for n in test.nodes) - busy_cores
    weight = idle_nodes.sum()
    print(f"a job waits during {np.mean(need > 0):.1%} of the time")
    print(f"idle node time while a job waits: {idle_nodes[need > 0].sum() / weight:.1%}")
    print(f"idle node time while the queue needs more cores than are free: "
          f"{idle_nodes[need > free].sum() / weight:.1%}")  # fmt: skip
    if args.policies:
        _policies(test)


def _policies(test: Workload) -> None:
    like = idle_timeout_like(300)
    assert like is not None
    runs = {
        "always on": lambda: evaluate(test),
        "idle timeout 5 min": lambda: evaluate(test, idle_s=300),
        "HGFS as the 5-min timeout (rule 1b, need_on=1)": lambda: evaluate(test, like),
        "the same without rule 1b (need_on=0)": lambda: evaluate(
            test, dataclasses.replace(like, need_on=0.0)
        ),
        "HGFS, the paper's parameters": lambda: evaluate(test, HGFSParams()),
    }
    for name, run in runs.items():
        o = run()
        print(
            f"{name}: QoS p90 {o.qos_p90:.2f}, saved {o.saved_fraction:.2%}, "
            f"{o.reconfigurations} reconfigurations"
        )


if __name__ == "__main__":
    main()
