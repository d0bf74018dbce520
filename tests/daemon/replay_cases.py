"""Real-trace replays whose decisions are pinned (issue 11): the cases, run through the same
code as ``wattsched simulate``, and a compact digest of what they decided."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from wattsched.connectors.simulated import SimulatedCluster
from wattsched.daemon.replay import ReplayResult, replay
from wattsched.daemon.simulate_cli import (
    TraceFormat,
    _assign_power,
    _load_cap,
    _load_jobs,
    load_system,
)
from wattsched.powerctl.registry import make_power_policy
from wattsched.scheduler import dispatcher as registry
from wattsched.scheduler.model import Job, Node, PowerCap

REPO = Path(__file__).resolve().parents[2]
DATA = REPO.parent / "shared" / "data"
EURORA = DATA / "eurora"
EURORA_TRACE = EURORA / "historical_traces" / "1000" / "hist_1000_20140331_093036.log_crypt"


@dataclass(frozen=True)
class Case:
    """One pinned replay: a workload, a machine, a cap, a dispatcher, maybe a power policy."""

    name: str
    load: Callable[[], tuple[list[Node], list[Job], PowerCap]]
    dispatcher: str
    policy: str = "none"


def _kth(limit: int) -> tuple[list[Node], list[Job], PowerCap]:
    nodes = load_system(REPO / "deploy" / "systems" / "kth-sp2.toml", None, None, None,
                        TraceFormat.SWF)  # fmt: skip
    jobs, _, _ = _load_jobs(DATA / "swf" / "KTH-SP2-1996.swf", TraceFormat.SWF, nodes, None, limit)
    return nodes, jobs, PowerCap.unlimited()


def _curie(limit: int) -> tuple[list[Node], list[Job], PowerCap]:
    nodes = load_system(REPO / "deploy" / "systems" / "curie-300.toml", None, None, None,
                        TraceFormat.SWF)  # fmt: skip
    jobs, _, _ = _load_jobs(
        DATA / "swf" / "CEA-Curie-2011-sample.swf", TraceFormat.SWF, nodes, None, limit
    )
    return nodes, _assign_power(jobs, None, "7.8:11.11", 0), PowerCap.unlimited()


def _eurora() -> tuple[list[Node], list[Job], PowerCap]:
    sysdir = EURORA / "system_configs"
    nodes = load_system(sysdir / "nodes_#32", None, None, None, TraceFormat.EURORA)
    jobs, _, _ = _load_jobs(EURORA_TRACE, TraceFormat.EURORA, nodes, sysdir / "system_queues",
                            None)  # fmt: skip
    jobs = _assign_power(jobs, EURORA / "eurora_power_predictions" / "power_predictions", None, 0)
    cap = _load_cap(None, EURORA / "variable_power_caps" / "power_caps_100", jobs, False)
    return nodes, jobs, cap


CASES: dict[str, Case] = {
    c.name: c
    for c in (
        Case("kth-easy-5000", lambda: _kth(5000), "easy"),
        Case("curie-prb-5000", lambda: _curie(5000), "prb"),
        Case("eurora-easy-cap", _eurora, "easy"),
        Case("eurora-prb-cap", _eurora, "prb"),
        Case("kth-easy-hgfs-2000", lambda: _kth(2000), "easy", "hgfs"),
        Case("kth-easy-idle-2000", lambda: _kth(2000), "easy", "idle"),
    )
}


def run_case(case: Case) -> tuple[list[Node], PowerCap, ReplayResult]:
    """Replay one case through :func:`wattsched.daemon.replay.replay`."""
    nodes, jobs, cap = case.load()
    cluster = SimulatedCluster(nodes, jobs, cap)
    result = replay(
        cluster, registry.create(case.dispatcher), power_policy=make_power_policy(case.policy)
    )
    return nodes, cap, result


def decisions(result: ReplayResult) -> dict[str, object]:
    """What a replay decided, compactly: every job's (start, nodes) and every power command,
    as sha256 digests, with a few counts to read when they differ."""
    cluster = result.cluster
    rows = sorted(
        (jid, r.start if r.start is not None else -1, list(r.nodes))
        for jid, r in cluster.records.items()
    )
    starts = json.dumps(rows, separators=(",", ":")).encode()
    power = json.dumps([list(p) for p in cluster.power_log], separators=(",", ":")).encode()
    return {
        "jobs": len(rows),
        "started": sum(1 for r in rows if r[1] >= 0),
        "sum_start": sum(r[1] for r in rows),
        "starts_sha256": hashlib.sha256(starts).hexdigest(),
        "power_commands": len(cluster.power_log),
        "power_sha256": hashlib.sha256(power).hexdigest(),
    }
