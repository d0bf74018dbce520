"""Benchmark: the power-capping paper's experiment (PRB vs the hybrid) on the Eurora instances.

Offline (the paper's section 6.1): every 200-job Eurora instance in ``shared/data/eurora``
(historical ``historical_traces/200`` and synthetic ``synthetic_workloads/jobs_200/*``),
32 nodes, every job kept (a job is dropped only if its unit fits in no node: units are sized
per resource, so GPU jobs stay), all jobs submitted at time 0. Two protocols: ``walltime``
(runtime = the user estimate, as the paper) and ``real`` (the trace's runtimes, shorter: a
plan goes stale at early ends). Job power: ``power_predictions`` per job over its units, else
the node model's per-resource watts. Caps: per instance, ``N_CAPS`` steps from the tightest
feasible (static draw + the hungriest job alone on its cheapest node) to the peak of the
uncapped PRB schedule. Each (instance, protocol, cap) is replayed through the simulated
cluster (which checks every start and the cap) with PRB and the hybrid (offline mode); the
mean weighted queue time comes from the cluster's records. The gap: each objective over a
valid lower bound (:mod:`wattsched.scheduler.hybrid.bound`: fluid and time-indexed LP from the
time-0 snapshot, with the protocol's durations).

Online: ``hist_400`` traces with real arrivals and runtimes, the hybrid in the control cycle
(online mode, 1 s cycle budget), mean weighted queue time against PRB over several runs.

Usage: ``.venv/bin/python bench/hybrid_eurora.py [--instances SUBSTR,...] [--caps 0,1]
[--protocols walltime,real] [--budget 5] [--online-traces 2] [--online-runs 3]
[--online-from 0]``; the report (markdown, plots) is ``bench/hybrid_eurora_report.py``,
also run at the end.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from hybrid_runtime_prior import UNIFORM_PRIOR, ended_before, first_arrival, runtime_ratios

from wattsched.connectors.simulated import SimulatedCluster
from wattsched.connectors.traces.eurora import (
    read_eurora_jobs,
    read_eurora_nodes,
    read_power_predictions,
    read_queues,
)
from wattsched.daemon.replay import replay
from wattsched.scheduler.dispatcher import create
from wattsched.scheduler.hybrid import solver_summary
from wattsched.scheduler.hybrid.bound import fluid_bound, lp_bound
from wattsched.scheduler.hybrid.problem import weighted_queue_time
from wattsched.scheduler.hybrid.robust import KINDS
from wattsched.scheduler.model import Job, Node, PowerCap, PowerState, Snapshot, SolverStats
from wattsched.scheduler.reservation import ARRIVALS, whole_node_cores
from wattsched.scheduler.runtime_predictor import RuntimePredictor

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "eurora"
MACHINE = "nodes_#32"
FOLDERS = (
    "historical_traces/200",
    "synthetic_workloads/jobs_200/ws_3600",
    "synthetic_workloads/jobs_200/ws_21600",
)
N_CAPS = 6
MIN_EARLIER = 50
"""Fewer ratios of earlier jobs than this: the hybrid's runtime prior is the uniform one."""
PROTOCOLS = ("walltime", "real")
EXTRA_PROTOCOLS = ("clairvoyant",)
"""Not run by default: ``clairvoyant`` (the trace's runtimes, and each walltime set to its
job's runtime: what a dispatcher that knew every runtime could do; a reference for ``real``)."""


def instances(filters: list[str]) -> list[Path]:
    """Every 200-job instance, or those whose name contains one of ``filters``."""
    files = [f for d in FOLDERS for f in sorted((DATA / d).glob("*.log_crypt"))]
    return [f for f in files if not filters or any(s in f.name for s in filters)]


def load(path: Path) -> tuple[list[Node], list[Job], dict[str, Any]]:
    """Nodes and jobs of an instance; a job is dropped only if its unit fits in no node."""
    nodes = read_eurora_nodes(DATA / "system_configs" / MACHINE)
    queues = read_queues(DATA / "system_configs" / "system_queues")
    power = read_power_predictions(DATA / "eurora_power_predictions" / "power_predictions")
    wl = read_eurora_jobs(path, queues=queues, power=power)
    kept = [j for j in wl.jobs if any(j.unit.fits_in(n.capacity) for n in nodes)]
    info = {
        "jobs": len(kept),
        "read": len(wl.jobs),
        "dropped_no_node": len(wl.jobs) - len(kept),
        "gpu_jobs": sum(1 for j in kept if j.unit.gpus),
        "with_prediction": sum(1 for j in kept if j.unit_power_w is not None),
    }
    return nodes, kept, info


def with_protocol(jobs: list[Job], protocol: str) -> list[Job]:
    """runtime = walltime (``walltime``), the trace's runtimes (``real``), or the trace's
    runtimes known as walltimes (``clairvoyant``)."""
    if protocol == "walltime":
        return [dataclasses.replace(j, runtime=j.walltime) for j in jobs]
    if protocol == "clairvoyant":
        return [
            dataclasses.replace(j, runtime=r, walltime=r)
            for j in jobs
            for r in [max(1, min(j.runtime or j.walltime, j.walltime))]
        ]
    return list(jobs)


def static_w(nodes: list[Node]) -> float:
    return sum(n.power.state_watts(n.state) for n in nodes if n.state is PowerState.ON)


def job_alone_w(job: Job, node: Node) -> float:
    """The job alone on nodes like ``node`` (units packed), first cores included."""
    unit = job.unit_power_w if job.unit_power_w is not None else node.power.unit_watts(job.unit)
    per_node = max(
        1,
        min(
            c // u for u, c in zip(job.unit.as_tuple(), node.capacity.as_tuple(), strict=True) if u
        ),
    )
    return unit * job.units + node.power.first_core_w * math.ceil(job.units / per_node)


def tightest_cap(nodes: list[Node], jobs: list[Job]) -> int:
    """The tightest feasible cap: the static draw + the hungriest job alone (10 W steps)."""
    hungriest = max(
        min(job_alone_w(j, n) for n in nodes if j.unit.fits_in(n.capacity)) for j in jobs
    )
    return math.ceil((static_w(nodes) + hungriest) / 10) * 10


def cap_sweep(nodes: list[Node], jobs: list[Job], prb_peak: float) -> list[float]:
    """From the tightest feasible cap to the uncapped PRB peak, ``N_CAPS`` steps."""
    lo = tightest_cap(nodes, jobs)
    hi = max(prb_peak, lo + 10)
    return [round(lo + (hi - lo) * k / (N_CAPS - 1)) for k in range(N_CAPS)]


def time0_snapshots(
    files: list[Path], caps: list[int]
) -> Iterator[tuple[Path, int, float, list[Job], Snapshot]]:
    """For each instance file and cap index: ``(file, index, cap W, jobs, snapshot)``, every
    job queued at time 0 with runtime = walltime, the caps swept from PRB's uncapped peak (the
    one-search benchmarks' set-up)."""
    for f in files:
        nodes, jobs, _ = load(f)
        jobs = [dataclasses.replace(j, submit=0) for j in with_protocol(jobs, "walltime")]
        base = run_one(nodes, jobs, PowerCap.unlimited(), "prb", {})
        sweep = cap_sweep(nodes, jobs, base["peak_w"])
        for k in caps:
            cap = PowerCap.constant(sweep[k])
            yield f, k, sweep[k], jobs, Snapshot(0, tuple(nodes), (), tuple(jobs), cap)


def run_one(
    nodes: list[Node], jobs: list[Job], cap: PowerCap, name: str, params: dict[str, Any]
) -> dict[str, Any]:
    """One offline replay; its objective and figures."""
    cluster = SimulatedCluster(nodes, jobs, cap, offline=True, record_power=False)
    res = replay(cluster, create(name, **params), keep_stats=name != "prb")
    starts = {jid: r.start for jid, r in cluster.records.items() if r.start is not None}
    t0 = cluster.start_time
    done = len(starts) == len(jobs)
    obj = (
        weighted_queue_time(
            [dataclasses.replace(j, submit=t0) for j in jobs], starts, max(j.ewt for j in jobs)
        )
        if done
        else math.inf
    )
    out: dict[str, Any] = {
        "objective": obj,
        "cap_violation_s": cluster.cap_violation_s,
        "start_errors": res.start_errors,
        "peak_w": cluster.peak_power_w,
        "plan_s_max": max(res.plan_seconds, default=0.0),
        "plan_s_total": sum(res.plan_seconds),
        "cycles": res.cycles,
    }
    if name != "prb":
        out["solver"] = solver_summary(res.solver_stats)
        out["best_source"] = out["solver"].get("first_source") or "prb"
    return out


def bound_of(nodes: list[Node], jobs: list[Job], cap: PowerCap, protocol: str) -> dict[str, Any]:
    """Fluid and LP bounds from the time-0 snapshot, durations as the protocol runs them."""
    runs = [
        dataclasses.replace(
            j, submit=0, walltime=(j.runtime or j.walltime) if protocol == "real" else j.walltime
        )
        for j in jobs
    ]
    snap = Snapshot(0, tuple(nodes), (), tuple(runs), cap)
    t = time.perf_counter()
    fluid = fluid_bound(snap)
    horizon = sum(j.walltime for j in runs) // 4 + max(j.walltime for j in runs)
    lp = lp_bound(snap, slots=120, horizon=horizon, time_limit_s=60.0)
    return {"fluid": fluid, "lp": lp, "bound": max(fluid, lp or 0.0),
            "bound_s": round(time.perf_counter() - t, 2)}  # fmt: skip


FILLS: dict[str, bool | str] = {"greedy": True, "plan": "plan"}
"""``--fill``: the hybrid's ``fill_now`` online."""

REAL_ONLINE_ROW = ("foresight", "cold_prb", "rollout_margin", "seed", "rollout_by_class",
                   "twin_power", "urgent_first", "reserve_accel", "rollout",
                   "hold_margin", "margin", "fill_now")  # fmt: skip
"""The ``--real-mode online`` hybrid's parameters a row records as they are."""


def cold_prior(kind: str, earlier: tuple[float, ...]) -> tuple[float, ...]:
    """The ratios the online rollout draws from before it has seen enough runtimes:
    ``kind`` 'uniform', 'history' (``earlier``, the ratios of the jobs that ended before the
    instance, where there are at least :data:`MIN_EARLIER`; else none) or 'none'."""
    if kind == "uniform":
        return UNIFORM_PRIOR
    if kind == "history" and len(earlier) >= MIN_EARLIER:
        return earlier
    return ()


def offline(args: argparse.Namespace) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    hybrid = {"mode": "offline", "total_budget_s": args.budget, "workers": args.workers,
              "lower_bound": "fluid"}  # fmt: skip
    historical = [f for f in instances([]) if "historical" in str(f)]
    earliest = min(historical, key=first_arrival)
    for f in instances(args.instances):
        nodes, jobs, info = load(f)
        earlier = runtime_ratios(DATA, f, earliest)
        prior = earlier if len(earlier) >= MIN_EARLIER else UNIFORM_PRIOR
        wjobs = with_protocol(jobs, "walltime")
        base = run_one(nodes, wjobs, PowerCap.unlimited(), "prb", {})
        caps = cap_sweep(nodes, jobs, base["peak_w"])
        for protocol in args.protocols:
            pj = with_protocol(jobs, protocol)
            for k in args.caps:
                cap = PowerCap.constant(caps[k])
                row: dict[str, Any] = {
                    "instance": f.name,
                    "set": f.parent.name if "synthetic" in str(f) else "historical",
                    "protocol": protocol,
                    "cap_idx": k,
                    "cap_w": caps[k],
                    **info,
                }
                row["prb"] = run_one(nodes, pj, cap, "prb", {})
                params = dict(hybrid)
                if protocol == "real" and args.real_mode == "online":
                    # the online dispatcher, its defaults (1 s deterministic cycle, rollout)
                    params = {"mode": "online", "workers": args.workers,
                              "foresight": args.real_foresight,
                              "cold_prb": args.real_cold_prb == "on",
                              "rollout_margin": args.online_rollout_margin,
                              "cold_prior": cold_prior(args.real_cold_prior, earlier),
                              "seed": args.real_seed,
                              "rollout_by_class": args.real_by_class == "on",
                              "twin_power": args.real_twin_power == "on",
                              "urgent_first": args.online_urgent == "on",
                              "urgent_wait": args.online_urgent_wait,
                              "reserve_accel": args.reserve_accel == "on",
                              "fill_now": FILLS[args.fill],
                              "rollout": args.online_rollout,
                              "hold_margin": args.online_hold_margin,
                              "margin": args.online_margin}  # fmt: skip
                    if args.online_serial is not None:  # absent: the dispatcher's default
                        params["serial"] = row["serial"] = args.online_serial
                    row.update({k: params[k] for k in REAL_ONLINE_ROW})
                    row.update(real_mode="online", cold_prior=args.real_cold_prior,
                               prior_jobs=len(earlier))  # fmt: skip
                online_mode = params.get("mode") == "online"
                if protocol == "real" and args.runtime_prior == "history" and not online_mode:
                    params["runtime_ratios"] = prior
                    params["scenario_kinds"] = args.scenario_kinds
                    row["prior"] = "earlier" if prior is earlier else "uniform"
                    row["prior_jobs"] = len(earlier)
                if protocol == "real" and args.real_twin_power == "off" and not online_mode:
                    params["twin_power"] = row["twin_power"] = False  # absent: True
                if protocol == "real" and args.research is not None and not online_mode:
                    params["research"] = args.research
                if protocol == "real" and args.predict != "off":
                    params["predictor"] = predictor = RuntimePredictor()
                    if args.predict == "history":  # the jobs that ended before the instance
                        predictor.learn_all(ended_before(DATA, f, earliest))
                    row["predictor_history"] = predictor.learned
                    if "runtime_ratios" in params:  # its own errors: runtime / prediction
                        errors = tuple(min(1.0, e) for e in predictor.errors)
                        use = len(errors) >= MIN_EARLIER
                        params["runtime_ratios"] = errors if use else UNIFORM_PRIOR
                        row["prior"] = "errors" if use else "uniform"
                row["hybrid"] = run_one(nodes, pj, cap, "hybrid", params)
                row.update(bound_of(nodes, pj, cap, protocol))
                p, h, lb = row["prb"]["objective"], row["hybrid"]["objective"], row["bound"]
                row["ratio"] = (p / h) if h > 0 else (1.0 if p == 0 else math.inf)
                row["gap_prb"] = p / lb if lb > 0 else None
                row["gap_hybrid"] = h / lb if lb > 0 else None
                rows.append(row)
                print(
                    f"{f.name[:26]:26s} {protocol:8s} cap{k} {caps[k]:>5} prb {p:9.0f} "
                    f"ratio {row['ratio']:.3f} LB {lb:8.0f} gap {row['gap_hybrid'] or 0:.2f} "
                    f"src {row['hybrid']['best_source']} plan max "
                    f"{row['hybrid']['plan_s_max']:.1f}s",
                    flush=True,
                )
    return rows


def hist400_traces(
    online_cap: float, start: int = 0, count: int | None = None, protocol: str = "real"
) -> Iterator[tuple[Path, list[Node], list[Job], float]]:
    """The ``hist_400`` traces ``start`` .. ``start + count`` (all: None), each as its path,
    the nodes, its jobs (those whose unit fits some node; runtimes by ``protocol``) and its
    online cap: ``online_cap``, or the tightest feasible cap where that is below it (a cap
    under which some job could never start compares nothing; the offline sweep's cap 0)."""
    nodes = read_eurora_nodes(DATA / "system_configs" / MACHINE)
    queues = read_queues(DATA / "system_configs" / "system_queues")
    power = read_power_predictions(DATA / "eurora_power_predictions" / "power_predictions")
    paths = sorted((DATA / "historical_traces" / "400").glob("*.log_crypt"))
    for path in paths[start : None if count is None else start + count]:
        wl = read_eurora_jobs(path, queues=queues, power=power)
        jobs = [j for j in wl.jobs if any(j.unit.fits_in(n.capacity) for n in nodes)]
        jobs = with_protocol(jobs, protocol)
        yield path, nodes, jobs, max(online_cap, float(tightest_cap(nodes, jobs)))


def _margin_or_off(text: str) -> float | None:
    """A share >= 0, or 'off' (None)."""
    if text == "off":
        return None
    value = float(text)
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"{text!r}: a share >= 0 or 'off'")
    return value


def online(args: argparse.Namespace) -> list[dict[str, Any]]:
    """The hybrid online on ``hist_400`` traces (real arrivals and runtimes), several runs."""
    out = []
    for path, nodes, jobs, cap_w in hist400_traces(
        args.online_cap, args.online_from, args.online_traces, args.online_protocol
    ):
        cap = PowerCap.constant(cap_w)
        row: dict[str, Any] = {"instance": path.name, "jobs": len(jobs), "cap_w": cap_w,
                               "protocol": args.online_protocol,
                               "predict": args.online_predict,
                               "gate": args.online_gate,
                               "urgent": args.online_urgent}  # fmt: skip
        if args.online_margin:  # absent: 0 (rows of earlier runs have neither)
            row["margin"] = args.online_margin
        if args.online_rollout:
            row["rollout"] = args.online_rollout
        if args.online_foresight:
            row["foresight"] = args.online_foresight
        if args.online_rollout_margin:
            row["rollout_margin"] = args.online_rollout_margin
        if args.online_hold_margin is not None:  # absent: none (the runs before session 32)
            row["hold_margin"] = args.online_hold_margin
        row["reserve"] = args.online_reserve  # absent: off (the runs before session 20)
        if args.online_reserve == "on":  # absent: ranked against the queue (session 20)
            row["reserve_rank"] = f"last {ARRIVALS} arrivals"
        if args.online_deterministic == "on":  # absent: off (wall-clock budgets)
            row["deterministic"] = "on"
        if args.online_min_runs is not None:  # absent: the predictor's default then
            row["min_runs"] = args.online_min_runs
        if args.online_local_search is not None:  # absent: the dispatcher's default then
            row["local_search"] = args.online_local_search
        if args.online_serial is not None:  # absent: the dispatcher's default then (none)
            row["serial"] = args.online_serial
        if args.online_urgent == "on" and args.online_urgent_wait:  # absent: every urgent job
            row["urgent_wait"] = args.online_urgent_wait
        if args.online_spread is not None:  # absent: the predictor's default then (the mean)
            row["spread"] = args.online_spread
        reserve_cores = args.online_reserve_cores
        if reserve_cores is None:  # the dispatcher's default: the largest node's cores
            reserve_cores = whole_node_cores(nodes)
        if reserve_cores and args.online_reserve == "on":  # absent: 0 (two units or more)
            row["reserve_cores"] = reserve_cores
        if args.online_reservations != 1 and args.online_reserve == "on":  # absent: 1
            row["reservations"] = args.online_reservations
        if args.reserve_accel == "on" and args.online_reserve == "on":  # absent: off
            row["reserve_accel"] = True
        if args.fill != "greedy":  # absent: the greedy fill
            row["fill_now"] = FILLS[args.fill]
        if cap_w > args.online_cap:
            row["cap_raised_from"] = args.online_cap
            print(f"{path.name}: --online-cap {args.online_cap:.0f} W leaves some job no room; "
                  f"the tightest feasible cap {cap_w:.0f} W instead", flush=True)  # fmt: skip
        for name, runs in (("prb", 1), ("hybrid", args.online_runs)):
            row[name] = []
            first = 0 if name == "prb" else args.online_first_seed
            for seed in range(first, first + runs):
                cluster = SimulatedCluster(nodes, jobs, cap, record_power=False)
                params: dict[str, Any] = {} if name == "prb" else {"cycle_budget_s": 1.0,
                                                                    "seed": seed}  # fmt: skip
                if name == "hybrid" and args.online_urgent == "on":
                    params["urgent_first"] = True
                    params["urgent_wait"] = args.online_urgent_wait
                if name == "hybrid":
                    params["margin"] = args.online_margin
                    params["rollout"] = args.online_rollout
                    params["foresight"] = args.online_foresight
                    params["rollout_margin"] = args.online_rollout_margin
                    params["hold_margin"] = args.online_hold_margin
                    params["reserve"] = args.online_reserve == "on"
                    params["reserve_accel"] = args.reserve_accel == "on"
                    params["fill_now"] = FILLS[args.fill]
                    params["reserve_cores"] = args.online_reserve_cores
                    params["reservations"] = args.online_reservations
                    params["deterministic"] = args.online_deterministic == "on"
                    if args.online_local_search is not None:
                        params["local_search"] = args.online_local_search
                    if args.online_serial is not None:
                        params["serial"] = args.online_serial
                if name == "hybrid" and args.online_predict == "off":
                    params["predictor"] = False  # walltimes (online, the default learns)
                elif name == "hybrid":
                    mr = args.online_min_runs
                    extra: dict[str, Any] = {} if mr is None else {"min_runs": mr}
                    if args.online_spread is not None:
                        extra["spread"] = args.online_spread
                    predictor = RuntimePredictor(gate=args.online_gate == "on", **extra)
                    params["predictor"] = predictor
                    if args.online_predict == "history":  # jobs ended before the trace
                        predictor.learn_all(ended_before(DATA, path, path))
                    row["predictor_history"] = predictor.learned
                res = replay(cluster, create(name, **params), keep_stats=name != "prb")
                starts = {j: r.start for j, r in cluster.records.items() if r.start is not None}
                secs = sorted(res.plan_seconds)
                row[name].append({
                    "seed": seed,
                    "objective": weighted_queue_time(jobs, starts, max(j.ewt for j in jobs))
                    if len(starts) == len(jobs) else None,
                    "never_started": len(jobs) - len(starts),
                    "cycles": res.cycles,
                    "cycle_p99_s": secs[int(0.99 * (len(secs) - 1))],
                    "cycle_max_s": secs[-1],
                    "cap_violation_s": cluster.cap_violation_s,
                    "start_errors": res.start_errors,
                    "starts": starts,  # per job, for per-job comparisons of the runs
                    "plans": plan_sources(res.solver_stats),
                    "reserved": reserved_heads(res.solver_stats),
                    **search_effort(res.solver_stats),
                })  # fmt: skip
                print(path.name, name, seed, json.dumps(row[name][-1]), flush=True)
        out.append(row)
    return out


def reserved_heads(stats: Sequence[SolverStats]) -> dict[str, int]:
    """Job id -> how many cycles' plans held a reservation for it (``extra.reserved``; none
    without ``reserve``): whether a trace's run reserved at all, and for whom."""
    return dict(Counter(str(r) for st in stats if (r := st.extra.get("reserved")) is not None))


def search_effort(stats: Sequence[SolverStats]) -> dict[str, Any]:
    """The searches' median local-search tries and plan seconds (none for PRB): how much a
    wall-clock and a work budget (``--online-deterministic``) search on this machine."""
    searched = [st for st in stats if "ls_tries" in st.extra]
    if not searched:
        return {}
    tries = statistics.median(int(st.extra["ls_tries"]) for st in searched)
    seconds = statistics.median(st.seconds for st in searched)
    cp_s = statistics.median(float(st.extra.get("solver_seconds", 0.0)) for st in searched)
    capped = sum(1 for st in searched if st.extra.get("work_capped"))
    return {"searches": len(searched), "ls_tries_median": tries,
            "search_s_median": round(seconds, 3), "cp_s_median": round(cp_s, 3),
            "work_capped": capped}  # fmt: skip


def plan_sources(stats: Sequence[SolverStats]) -> dict[str, int]:
    """How many cycles' plans came from where: a status (``reused``, ``prb_fallback``,
    ``idle``...), or for a search its winning source (``margin:SRC`` or ``rollout:SRC`` when
    the margin or the rollout kept PRB's plan over it)."""
    out: Counter[str] = Counter()
    for st in stats:
        src = st.extra.get("best_source")
        if src is None:
            out[st.status] += 1
        else:
            veto = "margin" if st.extra.get("margin") else "rollout"
            judged = st.extra.get("margin") or st.extra.get("rollout")
            out[f"{veto}:{src}" if judged == "prb" else str(src)] += 1
    return dict(out)


def protocol_list(text: str) -> list[str]:
    """``--protocols``: a comma-separated list of known protocols."""
    out = [p for p in text.split(",") if p]
    bad = [p for p in out if p not in PROTOCOLS + EXTRA_PROTOCOLS]
    if bad or not out:
        raise argparse.ArgumentTypeError(
            f"--protocols {text!r}: unknown {bad}; known: {PROTOCOLS + EXTRA_PROTOCOLS}"
        )
    return out


def research_spec(text: str) -> dict[str, Any] | None:
    """``off``: None; ``on``: the default policy; else ``key=value,...`` (numbers, booleans
    ``true``/``false``, words) for :class:`~wattsched.scheduler.hybrid.research.ResearchPolicy`."""
    if text == "off":
        return None
    out: dict[str, Any] = {}
    for item in filter(None, text.split(",")):
        if item == "on":
            continue
        key, _, raw = item.partition("=")
        value: Any
        try:
            value = float(raw)
        except ValueError:
            value = (raw == "true") if raw in ("true", "false") else raw
        out[key] = value
    return out


def machine_info() -> dict[str, Any]:
    return {
        "nproc": os.cpu_count(),
        "uname": " ".join(platform.uname()),
        "python": platform.python_version(),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "loadavg_start": os.getloadavg(),
        "command": " ".join([".venv/bin/python", *sys.argv]),
        "commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                                 text=True, cwd=Path(__file__).parent).stdout.strip(),
    }  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument(
        "--instances",
        type=lambda s: s.split(","),
        default=[],
        help="substrings of instance names (default: every 200-job instance)",
    )
    ap.add_argument(
        "--caps",
        type=lambda s: [int(x) for x in s.split(",")],
        default=list(range(N_CAPS)),
        help="cap indices, 0 = tightest",
    )
    ap.add_argument(
        "--protocols", type=protocol_list, default=list(PROTOCOLS),
        help=f"comma-separated, of {PROTOCOLS + EXTRA_PROTOCOLS}",
    )  # fmt: skip
    ap.add_argument("--budget", type=float, default=5.0, help="offline search s per replay")
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument(
        "--scenario-kinds",
        type=lambda s: s.split(","),
        default=list(KINDS),
        help="real protocol: the robust choice's kinds of runtime scenario",
    )
    ap.add_argument(
        "--runtime-prior",
        choices=("history", "none"),
        default="history",
        help="real protocol: the hybrid's runtime prior (see hybrid_runtime_prior)",
    )
    ap.add_argument(
        "--research",
        type=research_spec,
        default=None,
        help="real protocol: re-search at early ends, 'on' or key=value,... of "
        "ResearchPolicy (budget_s, total_s, when, durations, cp); 'off': none",
    )
    ap.add_argument(
        "--real-mode",
        choices=("offline", "online"),
        default="offline",
        help="real protocol: the hybrid's mode: 'offline' (one search on walltimes, the "
        "robust choice, PRB's rule after the first early end) or 'online' (the online "
        "dispatcher with its defaults: a 1 s search at every event judged by its rollout)",
    )
    ap.add_argument(
        "--real-foresight",
        type=int,
        default=14_400,
        help="real protocol, --real-mode online: the rollout's foresight (s; 0: no jobs to "
        "arrive in its scenarios, as in a closed batch)",
    )
    ap.add_argument(
        "--real-cold-prb",
        choices=("on", "off"),
        default="off",
        help="real protocol, --real-mode online: PRB's plan while the rollout has too few "
        "runtimes seen to judge a search's starts ('on'), or the search's ('off')",
    )
    ap.add_argument(
        "--real-cold-prior",
        choices=("uniform", "history", "none"),
        default="none",
        help="real protocol, --real-mode online: while fewer runtimes have been seen than "
        "the rollout needs, it draws runtime/walltime ratios from a uniform prior too "
        "('uniform'), from those of the historical jobs that ended before the instance "
        f"where there are at least {MIN_EARLIER}, else none ('history'), or does not judge "
        "('none')",
    )
    ap.add_argument(
        "--fill",
        choices=tuple(FILLS),
        default="greedy",
        help="the online rows and the --real-mode online rows: after the plan's starts, every "
        "job that fits now ('greedy') or only what delays no later start of the plan ('plan'; "
        "HybridDispatcher fill_now)",
    )
    ap.add_argument(
        "--reserve-accel",
        choices=("on", "off"),
        default="off",
        help="the online rows and the --real-mode online rows: a job whose units need all the "
        "GPUs (or MICs) of a node is wide for the hybrid's reservation too ('on'), or not "
        "('off'; HybridDispatcher reserve_accel)",
    )
    ap.add_argument(
        "--real-by-class",
        choices=("on", "off"),
        default="off",
        help="real protocol, --real-mode online: in the rollout's scenarios the jobs of a "
        "class still planned on walltimes share one drawn runtime ratio ('on'), or draw "
        "their own ('off')",
    )
    ap.add_argument(
        "--real-twin-power",
        choices=("on", "off"),
        default="on",
        help="real protocol: jobs alike but for their power estimates "
        "are not twins ('on'), or are, and start in PRB's order ('off')",
    )
    ap.add_argument(
        "--real-seed",
        type=int,
        default=0,
        help="real protocol, --real-mode online: the hybrid's seed (its searches and rollouts)",
    )
    ap.add_argument(
        "--predict",
        choices=("off", "history", "online"),
        default="off",
        help="real protocol: the hybrid plans on predicted runtimes (RuntimePredictor) "
        "learned from the historical jobs that ended before the instance and online "
        "('history'), or online only ('online'); 'off': on walltimes",
    )
    ap.add_argument("--online-traces", type=int, default=2)
    ap.add_argument("--online-runs", type=int, default=3)
    ap.add_argument(
        "--online-first-seed", type=int, default=0,
        help="the hybrid's runs take seeds K, K+1, ... (to add runs to a trace measured before)",
    )  # fmt: skip
    ap.add_argument(
        "--online-from", type=int, default=0,
        help="skip this many hist_400 traces (by name) before the --online-traces taken",
    )  # fmt: skip
    ap.add_argument(
        "--online-cap", type=float, default=1500.0,
        help="W; raised to a trace's tightest feasible cap where some job needs more",
    )  # fmt: skip
    ap.add_argument(
        "--online-protocol", choices=("real", "clairvoyant"), default="real",
        help="online: the trace's runtimes ('real'), or known as walltimes ('clairvoyant')",
    )  # fmt: skip
    ap.add_argument(
        "--online-predict", choices=("off", "history", "online"), default="online",
        help="online: the hybrid plans on predicted runtimes (RuntimePredictor) learned "
        "from the jobs seen to end ('online', the dispatcher's default), and before that "
        "from the historical jobs that ended before the trace ('history'); 'off': on "
        "walltimes (the default before session 18)",
    )  # fmt: skip
    ap.add_argument(
        "--online-gate", choices=("on", "off"), default="on",
        help="online, with --online-predict: plan on the predictions only while they beat "
        "the walltimes ('on', RuntimePredictor.better_than_walltimes) or always ('off')",
    )  # fmt: skip
    ap.add_argument(
        "--online-margin",
        type=float,
        default=0.0,
        help="online (and --real-mode online): the hybrid takes a searched plan only when it "
        "beats PRB's plan by this share of the weighted wait from now on "
        "(scheduler/hybrid/dispatcher.py margin; 0: the best)",
    )
    ap.add_argument(
        "--online-rollout",
        type=int,
        default=8,
        help="online (and --real-mode online): scenarios of the rollout judging a search's "
        "starts against PRB's rule (scheduler/hybrid/rollout.py; 0: none)",
    )
    ap.add_argument(
        "--online-foresight",
        type=int,
        default=14_400,
        help="online: seconds ahead of which the rollout's scenarios hold jobs to arrive, "
        "drawn from the last arrivals (scheduler/hybrid/rollout.py; 0: none)",
    )
    ap.add_argument(
        "--online-rollout-margin",
        type=float,
        default=0.005,
        help="online: a search's starts are kept unless they lose the rollout by this share "
        "(0: unless they lose or tie)",
    )
    ap.add_argument(
        "--online-hold-margin",
        type=_margin_or_off,
        default=0.02,
        help="online (and --real-mode online): a wide waited job that fails the "
        "reservation's value test holds one "
        "when a rollout says it beats PRB's rule by this share (scheduler/hybrid/holds.py; "
        "0.02, the dispatcher's default since session 32; 'off': never)",
    )
    ap.add_argument(
        "--online-reserve",
        choices=("on", "off"),
        default="on",
        help="online: the hybrid's reservation for a starving wide job (scheduler/reservation.py)",
    )
    ap.add_argument(
        "--online-deterministic",
        choices=("on", "off"),
        default="on",
        help="online: the hybrid's search budget counts work, not wall seconds "
        "(scheduler/hybrid/workclock.py; the dispatcher's default online since session 25): "
        "a run is reproducible on any machine and load; off: a wall-clock budget",
    )
    ap.add_argument(
        "--online-min-runs",
        type=int,
        default=None,
        help="online: ended jobs a class needs before the predictor trusts it "
        "(RuntimePredictor min_runs; default: the predictor's)",
    )
    ap.add_argument(
        "--online-urgent-wait",
        type=float,
        default=0.0,
        help="online, with --online-urgent on: only the urgent queue's jobs that have waited "
        "this many times their queue's expected wait start first (HybridDispatcher "
        "urgent_wait; 0: all)",
    )
    ap.add_argument(
        "--online-reserve-cores",
        type=int,
        default=None,
        help="online, with --online-reserve on: a job whose units need this many cores in "
        "all is wide too (HybridDispatcher reserve_cores; absent: the largest node's cores, "
        "a whole node; 0: wide means two units or more)",
    )
    ap.add_argument(
        "--online-reservations",
        type=int,
        default=1,
        help="online, with --online-reserve on: how many starving jobs hold a reservation at "
        "once (HybridDispatcher reservations; 1: the first only)",
    )
    ap.add_argument(
        "--online-spread",
        type=float,
        default=None,
        help="online: a class whose recent runtimes differ by more than this factor is "
        "predicted at the longest of them (RuntimePredictor spread; default: the mean)",
    )
    ap.add_argument(
        "--online-local-search",
        type=float,
        default=None,
        help="online: the share of a search's budget the priority-list local search takes "
        "before CP-SAT (HybridDispatcher local_search; default: the dispatcher's, 0.5)",
    )
    ap.add_argument(
        "--online-serial",
        type=float,
        default=None,
        help="online, and real protocol with --real-mode online: the share of what the local "
        "search leaves that the serial decoder takes (HybridDispatcher serial; default: the "
        "dispatcher's, none online)",
    )
    ap.add_argument(
        "--online-urgent", choices=("on", "off"), default="off",
        help="online, and real protocol with --real-mode online: the hybrid's urgent_first "
        "(the most urgent queue's jobs that fit now start first, scheduler/hybrid/urgent.py)",
    )  # fmt: skip
    ap.add_argument("--skip-offline", action="store_true")
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    ap.add_argument("--name", default="hybrid_eurora", help="result file stem")
    args = ap.parse_args()  # fmt: skip
    t0 = time.perf_counter()
    info = machine_info()
    rows = [] if args.skip_offline else offline(args)
    onl = online(args) if args.online_traces > 0 else []
    info["loadavg_end"] = os.getloadavg()
    data = {
        "machine": info,
        "offline": rows,
        "online": onl,
        "params": {
            "budget_s": args.budget,
            "workers": args.workers,
            "caps": args.caps,
            "protocols": args.protocols,
            "n_caps": N_CAPS,
            "runtime_prior": args.runtime_prior,
            "scenario_kinds": args.scenario_kinds,
            "research": args.research,
            "predict": args.predict,
            "real_mode": args.real_mode,
            "real_foresight": args.real_foresight,
            "real_cold_prb": args.real_cold_prb,
            "real_cold_prior": args.real_cold_prior,
            "real_seed": args.real_seed,
            "real_by_class": args.real_by_class,
            "real_twin_power": args.real_twin_power,
            "reserve_accel": args.reserve_accel,
            "fill": args.fill,
            "online_protocol": args.online_protocol,
            "online_predict": args.online_predict,
            "online_gate": args.online_gate,
            "online_urgent": args.online_urgent,
            "online_margin": args.online_margin,
            "online_rollout": args.online_rollout,
            "online_reserve": args.online_reserve,
            "online_deterministic": args.online_deterministic,
            "online_min_runs": args.online_min_runs,
            "online_spread": args.online_spread,
            "online_urgent_wait": args.online_urgent_wait,
            "online_reserve_cores": args.online_reserve_cores,
            "online_reservations": args.online_reservations,
            "online_first_seed": args.online_first_seed,
        },
        "total_s": round(time.perf_counter() - t0, 1),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"{args.name}.json"
    path.write_text(json.dumps(data, indent=1, default=str))
    subprocess.run([sys.executable, str(Path(__file__).with_name("hybrid_eurora_report.py")),
                    str(path)], check=False)  # fmt: skip
    print(f"done in {data['total_s']} s")


if __name__ == "__main__":
    main()
