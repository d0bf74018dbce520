"""The inputs of ``wattsched simulate`` (and of the benchmarks, sweeps and the tuner that
replay the same way): the system, the jobs of a trace, their power, the cap, ``--param``."""

from __future__ import annotations

import enum
from pathlib import Path
from typing import Any

import typer

from wattsched.scheduler.model import Job, Node, PowerCap


class TraceFormat(enum.StrEnum):
    """The workload formats ``simulate`` reads."""

    SWF = "swf"
    EURORA = "eurora"


def _fail(msg: str) -> typer.Exit:
    typer.secho(f"error: {msg}", err=True, fg=typer.colors.RED)
    return typer.Exit(2)


def load_system(
    system: Path | None, nodes: int | None, cores: int | None, mem_mb: int | None, fmt: TraceFormat
) -> list[Node]:
    """Nodes from a TOML system file, a Eurora nodes file, or ``--nodes/--cores``."""
    from wattsched.connectors.traces.system import homogeneous_nodes, read_system_toml

    if system is not None:
        if system.suffix == ".toml":
            return read_system_toml(system)
        from wattsched.connectors.traces.eurora import read_eurora_nodes

        return read_eurora_nodes(system)
    if nodes is None or cores is None:
        raise _fail("give --system FILE, or --nodes N and --cores C")
    return homogeneous_nodes(nodes, cores, mem_mb=mem_mb or 0)


def _load_jobs(
    trace: Path,
    fmt: TraceFormat,
    node_list: list[Node],
    queues: Path | None,
    limit: int | None,
) -> tuple[list[Job], int, dict[str, Any]]:
    if fmt is TraceFormat.SWF:
        from wattsched.connectors.traces.swf import read_swf

        cores = max(n.capacity.cores for n in node_list)
        mem = max(n.capacity.mem_mb for n in node_list) or None
        wl = read_swf(
            trace, cores_per_node=cores, nodes=len(node_list), mem_mb_per_node=mem, limit=limit
        )
    else:
        from wattsched.connectors.traces.eurora import read_eurora_jobs, read_queues

        if queues is None:
            raise _fail("--format eurora needs --queues FILE (the system_queues file)")
        wl = read_eurora_jobs(trace, queues=read_queues(queues))
        if limit is not None:
            wl.jobs = wl.jobs[:limit]
    report = {
        "read": wl.report.read,
        "kept": wl.report.kept,
        "skipped": dict(wl.report.skipped),
        "clamped": dict(wl.report.clamped),
    }
    return list(wl.jobs), sum(wl.report.skipped.values()), report


def _assign_power(
    jobs: list[Job], job_power: Path | None, core_watts: str | None, seed: int
) -> list[Job]:
    from wattsched.scheduler.power import assign_core_watts, assign_power_table, parse_range

    if job_power is not None:
        from wattsched.connectors.traces.eurora import read_power_predictions

        jobs, _ = assign_power_table(jobs, read_power_predictions(job_power))
    if core_watts is not None:
        lo, hi = parse_range(core_watts)
        jobs = assign_core_watts(jobs, lo, hi, seed)
    return jobs


def _load_cap(
    power_cap: float | None, power_cap_file: Path | None, jobs: list[Job], offline: bool
) -> PowerCap:
    if power_cap is not None and power_cap_file is not None:
        raise _fail("give --power-cap or --power-cap-file, not both")
    if power_cap_file is not None:
        from wattsched.connectors.traces.caps import read_power_cap

        origin = min((j.submit for j in jobs), default=0)
        return read_power_cap(power_cap_file, origin=origin)
    if power_cap is not None:
        return PowerCap.constant(power_cap) if power_cap > 0 else PowerCap.unlimited()
    return PowerCap.unlimited()


def _parse_params(items: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise _fail(f"--param wants KEY=VALUE, got {item!r}")
        out[key.strip().replace("-", "_")] = _coerce(value.strip())
    return out


def _coerce(value: str) -> Any:
    low = value.lower()
    if low in ("true", "false"):
        return low == "true"
    for cast in (int, float):
        try:
            return cast(value)
        except ValueError:
            pass
    return value
