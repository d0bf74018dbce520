"""The guarded replays whose schedules ``tests/data/thermal/guard_golden_*.csv`` record (made
before the guard was sped up: the faster guard must take the same decisions)."""

from __future__ import annotations

from pathlib import Path

from wattsched.connectors.traces.eurora import (
    read_eurora_jobs,
    read_eurora_nodes,
    read_power_predictions,
    read_queues,
)
from wattsched.daemon.replay import replay
from wattsched.daemon.thermal_sim import thermal_setup
from wattsched.scheduler.dispatcher import create
from wattsched.scheduler.model import PowerCap
from wattsched.scheduler.power import assign_power_table

REPO = Path(__file__).resolve().parents[2]
EURORA = REPO.parent / "shared" / "data" / "eurora"
TRACE = "historical_traces/200"
GOLDEN = REPO / "tests" / "data" / "thermal"


def guarded_rows(dispatcher: str, eurora: Path = EURORA) -> list[tuple[str, int, int, str]]:
    """(job, start, end, nodes) of a guarded replay of the first 200-job Eurora trace on 8 nodes
    with ``bench/thermal_eurora.toml`` (the guard holds jobs back there)."""
    trace = sorted((eurora / TRACE).iterdir())[0]
    nodes = read_eurora_nodes(eurora / "system_configs" / "nodes_#8")
    wl = read_eurora_jobs(trace, queues=read_queues(eurora / "system_configs" / "system_queues"))
    jobs, _ = assign_power_table(
        list(wl.jobs),
        read_power_predictions(eurora / "eurora_power_predictions" / "power_predictions"),
    )
    cluster, disp = thermal_setup(
        REPO / "bench" / "thermal_eurora.toml",
        nodes,
        jobs,
        PowerCap.unlimited(),
        False,
        create(dispatcher),
    )
    replay(cluster, disp)
    return sorted(
        (r.job.id, r.start, r.end, " ".join(r.nodes))
        for r in cluster.records.values()
        if r.start is not None and r.end is not None
    )
