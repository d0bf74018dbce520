"""Sweeps: many replays at once, in parallel processes or on a Dask cluster (issue 11).

Benchmarks and the tuning of the node power policy replay the same traces many times with
different settings. A :class:`ReplaySpec` names one replay by files and values only (so that
it travels to another process or machine as it is); :func:`run_replay` runs it through the
very code of ``wattsched simulate`` (the simulated cluster, :func:`wattsched.daemon.replay.replay`,
the control cycle) and returns its metrics; :func:`sweep` runs many, in a process pool on this
machine or, given a scheduler address, as one task per replay on a ``dask.distributed``
cluster (each worker needs wattsched installed and the trace files at the same paths).

    wattsched sweep SPECS.json --out RESULTS.json [--workers N] [--dask-scheduler tcp://HOST:8786]
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import typer


@dataclass(frozen=True)
class ReplaySpec:
    """One replay of a sweep, by files and values (see :func:`run_replay`)."""

    name: str
    trace: str
    system: str
    dispatcher: str = "easy"
    fmt: str = "swf"
    queues: str | None = None
    job_power: str | None = None
    core_watts: str | None = None
    seed: int = 0
    limit_jobs: int | None = None
    power_cap_w: float | None = None
    power_policy: str = "none"
    idle_s: int = 1800
    hgfs: dict[str, Any] = field(default_factory=dict)
    """HGFS parameters (``HGFSParams`` fields) for ``power_policy = "hgfs"``: what tuning varies."""
    params: dict[str, Any] = field(default_factory=dict)
    """Dispatcher parameters."""

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ReplaySpec:
        """A spec from its JSON form; unknown keys are refused, naming them."""
        known = {f.name for f in dataclasses.fields(cls)}
        extra = sorted(set(data) - known)
        if extra:
            raise ValueError(f"replay spec {data.get('name')!r}: unknown keys {extra}")
        return cls(**data)


def run_replay(spec: ReplaySpec) -> dict[str, Any]:
    """Replay ``spec`` and return its metrics (those of ``wattsched simulate``) with its name
    and a digest of every job's start and nodes (``starts_sha256``)."""
    from wattsched.connectors.simulated import SimulatedCluster
    from wattsched.daemon import replay_output
    from wattsched.daemon.replay import replay
    from wattsched.daemon.simulate_cli import (
        TraceFormat,
        _assign_power,
        _load_cap,
        _load_jobs,
        load_system,
    )
    from wattsched.powerctl.registry import make_power_policy
    from wattsched.scheduler import dispatcher as registry

    fmt = TraceFormat(spec.fmt)
    nodes = load_system(Path(spec.system), None, None, None, fmt)
    queues = Path(spec.queues) if spec.queues else None
    jobs, skipped, _ = _load_jobs(Path(spec.trace), fmt, nodes, queues, spec.limit_jobs)
    power_table = Path(spec.job_power) if spec.job_power else None
    jobs = _assign_power(jobs, power_table, spec.core_watts, spec.seed)
    cap = _load_cap(spec.power_cap_w, None, jobs, False)
    if spec.power_policy == "hgfs" and spec.hgfs:
        from wattsched.powerctl.hgfs import HGFSParams, HGFSPolicy

        hgfs = {k: tuple(v) if isinstance(v, list) else v for k, v in spec.hgfs.items()}
        policy = HGFSPolicy(HGFSParams(**hgfs))
    else:
        policy = make_power_policy(spec.power_policy, spec.idle_s)
    cluster = SimulatedCluster(nodes, jobs, cap)
    result = replay(cluster, registry.create(spec.dispatcher, **spec.params), power_policy=policy)
    rows = sorted(
        (jid, r.start if r.start is not None else -1, list(r.nodes))
        for jid, r in cluster.records.items()
    )
    digest = hashlib.sha256(json.dumps(rows, separators=(",", ":")).encode()).hexdigest()
    extra = {
        "name": spec.name,
        "cycles": result.cycles,
        "cycles_skipped": result.skipped,
        "energy_saved_kwh": cluster.power_saved_j / 3.6e6,
        "reconfigurations": cluster.power_commands,
        "starts_sha256": digest,
    }
    return replay_output.replay_metrics(result, skipped_jobs=skipped, extra=extra)


def sweep(
    specs: Sequence[ReplaySpec],
    *,
    workers: int | None = None,
    dask_scheduler: str | None = None,
) -> list[dict[str, Any]]:
    """Run every spec; results in the order of ``specs``.

    ``dask_scheduler`` (an address such as ``tcp://10.0.0.5:8786``, or a
    ``distributed.Client``'s scheduler address): one task per replay on that cluster.
    Otherwise a pool of ``workers`` processes on this machine (default: one per core;
    1 runs them here, one after the other)."""
    if dask_scheduler is not None:
        from distributed import Client

        with Client(dask_scheduler) as client:
            futures = client.map(run_replay, list(specs), pure=False)
            return list(client.gather(futures))
    if workers == 1 or len(specs) <= 1:
        return [run_replay(s) for s in specs]
    with ProcessPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(run_replay, specs))


def register(app: typer.Typer) -> None:
    """Add the sweep command to the main app."""
    app.command("sweep")(sweep_command)


def sweep_command(
    specs: Annotated[
        Path, typer.Argument(exists=True, dir_okay=False, help="JSON list of replay specs.")
    ],
    out: Annotated[Path, typer.Option(help="Results JSON to write (one object per spec).")],
    workers: Annotated[
        int | None, typer.Option(min=1, help="Processes on this machine (default: cores).")
    ] = None,
    dask_scheduler: Annotated[
        str | None,
        typer.Option(help="Run on this dask.distributed scheduler (tcp://HOST:PORT) instead."),
    ] = None,
) -> None:
    """Run many replays (see ``docs/sweep.md``) and write their metrics."""
    try:
        items = [ReplaySpec.from_dict(d) for d in json.loads(specs.read_text())]
    except (ValueError, TypeError) as exc:
        typer.secho(f"error: {specs}: {exc}", err=True, fg=typer.colors.RED)
        raise typer.Exit(2) from exc
    results = sweep(items, workers=workers, dask_scheduler=dask_scheduler)
    out.write_text(json.dumps(results, indent=1, default=float) + "\n")
    typer.echo(f"{len(results)} replays -> {out}")
