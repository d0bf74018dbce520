"""Readers for the Eurora data of the power-capping paper (PA-HPC-SIM ``test_data``).

Formats (``shared/data/eurora/FORMAT.txt``, with the quirks found in the files; more in
``docs/traces.md``):

- ``system_configs/system_queues``: ``name seconds`` lines, the queue's expected wait (EWT).
- ``system_configs/nodes_#N``: ``node_id cores gpus mics memory reserved``. FORMAT.txt says
  the memory is in bytes, but it is in **KB**: ``33554432`` is 32 GB (as bytes it would be
  32 MB, less than the 14 GB some jobs of the traces use on one node).
- ``eurora_power_predictions/power_predictions``: ``job_id;watts`` with ids like
  ``498459.node129`` (the PBS server's name after the dot): keyed by the number.
- ``*.log_crypt`` job instances: one job a line, ``;``-separated, with the node allocations
  between two ``__`` markers, ``#``-terminated entries ``node;cores;gpus;mics;mem_kb``; so the
  number of ``;`` fields varies with the number of nodes: split on ``__`` first.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from os import PathLike
from pathlib import Path

from wattsched.connectors.traces.errors import TraceError, TraceReport, Workload, read_utf8
from wattsched.scheduler.model import Job, Node, NodePowerModel, Resources
from wattsched.scheduler.power import EURORA_NODE_POWER

EURORA_QUEUE_ALIASES: Mapping[str, str] = {"R": "reservation"}
"""Queue names seen in the traces but not in ``system_queues``: ``R`` is the reservation queue
(6,874 lines across the shared instances; its jobs run on reserved nodes)."""

HEAD_FIELDS = ("job_id", "executable", "user", "queue", "arrival")
ALLOC_FIELDS = ("node", "cores", "gpus", "mics", "mem_kb")
TAIL_FIELDS = (
    "start",
    "end",
    "requested_nodes",
    "requested_cores",
    "requested_memory",
    "estimated_duration",
    "na1",
    "na2",
    "status",
    "application_type",
)


def _int(tok: str, path: Path, lineno: int, name: str) -> int:
    try:
        return int(tok)
    except ValueError:
        raise TraceError(path, lineno, name, tok, "not an integer") from None


def read_queues(path: str | PathLike[str]) -> dict[str, int]:
    """``system_queues``: queue name -> expected wait in seconds (> 0)."""
    p = Path(path)
    out: dict[str, int] = {}
    for lineno, line in enumerate(read_utf8(p).splitlines(), 1):
        toks = line.split()
        if not toks:
            continue
        if len(toks) != 2:
            raise TraceError(p, lineno, "line", line, "expected 'name seconds'")
        ewt = _int(toks[1], p, lineno, "ewt")
        if ewt <= 0:
            raise TraceError(p, lineno, "ewt", toks[1], "must be > 0")
        out[toks[0]] = ewt
    return out


def read_eurora_nodes(
    path: str | PathLike[str],
    power: NodePowerModel | None = None,
    *,
    prefix: str = "node",
) -> list[Node]:
    """``nodes_#N``: one :class:`Node` per line, named ``f"{prefix}{node_id}"``.

    Memory is read as KB (see the module docstring). A reserved node (last column 1) stays
    available but gets ``partition="reservation"``. ``power`` defaults to
    :data:`~wattsched.scheduler.power.EURORA_NODE_POWER`.
    """
    p = Path(path)
    model = power if power is not None else EURORA_NODE_POWER
    names = ("node_id", "cores", "gpus", "mics", "memory", "reserved")
    nodes: list[Node] = []
    seen: set[str] = set()
    for lineno, line in enumerate(read_utf8(p).splitlines(), 1):
        toks = line.split()
        if not toks:
            continue
        if len(toks) != len(names):
            raise TraceError(p, lineno, "line", line, f"has {len(toks)} fields, expected 6")
        node_id, cores, gpus, mics, mem_kb, reserved = (
            _int(t, p, lineno, n) for t, n in zip(toks, names, strict=True)
        )
        for name, value in zip(names[:5], (node_id, cores, gpus, mics, mem_kb), strict=True):
            if value < 0:
                raise TraceError(p, lineno, name, str(value), "must be >= 0")
        if reserved not in (0, 1):
            raise TraceError(p, lineno, "reserved", str(reserved), "must be 0 or 1")
        name = f"{prefix}{node_id}"
        if name in seen:
            raise TraceError(p, lineno, "node_id", str(node_id), "duplicate node")
        seen.add(name)
        nodes.append(
            Node(
                name=name,
                capacity=Resources(cores=cores, mem_mb=mem_kb // 1024, gpus=gpus, mics=mics),
                power=model,
                partition="reservation" if reserved else None,
            )
        )
    return nodes


def read_power_predictions(path: str | PathLike[str]) -> dict[str, float]:
    """``power_predictions``: job number (the part of the id before the first dot) -> watts."""
    p = Path(path)
    out: dict[str, float] = {}
    for lineno, line in enumerate(read_utf8(p).splitlines(keepends=True), 1):
        job_id, sep, watts = line.partition(";")
        if not sep:
            if not line.strip():
                continue
            raise TraceError(p, lineno, "line", line.rstrip("\n"), "expected 'job_id;watts'")
        key = job_id.partition(".")[0].strip()
        if not key:
            raise TraceError(p, lineno, "job_id", job_id, "empty")
        try:
            w = float(watts)
        except ValueError:
            raise TraceError(p, lineno, "watts", watts.strip(), "not a number") from None
        if not w >= 0:  # also rejects NaN
            raise TraceError(p, lineno, "watts", watts.strip(), "must be >= 0")
        out[key] = w
    return out


_EPOCH = datetime(1970, 1, 1)
_SECOND = timedelta(seconds=1)


def _epoch(tok: str, path: Path, lineno: int, name: str) -> int:
    """``2014-03-31 11:09:04`` (UTC) -> epoch seconds (naive arithmetic: faster than tz)."""
    try:
        return (datetime.fromisoformat(tok) - _EPOCH) // _SECOND
    except ValueError:
        raise TraceError(path, lineno, name, tok, "not a date-time 'YYYY-MM-DD HH:MM:SS'") from None


def _duration(tok: str, path: Path, lineno: int) -> int:
    """``HH:MM`` -> seconds."""
    hh, sep, mm = tok.partition(":")
    if not sep or not hh.isdigit() or not mm.isdigit() or int(mm) >= 60:
        raise TraceError(path, lineno, "estimated_duration", tok, "not a duration 'HH:MM'")
    return int(hh) * 3600 + int(mm) * 60


def read_eurora_jobs(
    path: str | PathLike[str],
    *,
    queues: Mapping[str, int],
    power: Mapping[str, float] | None = None,
    unknown_queue_ewt: int | None = None,
    aliases: Mapping[str, str] = EURORA_QUEUE_ALIASES,
    max_unit: Resources | None = None,
) -> Workload:
    """Read a ``*.log_crypt`` instance into jobs.

    - units = the number of allocation entries; each unit needs the entry's cores, GPUs, MICs
      and memory (the per-resource maximum when entries differ, noted ``unit_entries_differ``);
      when that number differs from the "requested nodes" field, the entries win (they are what
      ran), noted ``units_differ_from_requested_nodes``;
    - submit = arrival, runtime = end - start, walltime = the user estimate (``HH:MM``); a
      runtime above it is clamped (``clamped['runtime_over_walltime']``);
    - queue: renamed through ``aliases`` (``R`` -> ``reservation``); a name still not in
      ``queues`` gets ``unknown_queue_ewt``, or the largest EWT of ``queues`` (noted
      ``unknown_queue``);
    - power: per unit = ``power[job_id] / units`` when the id is in ``power``, else None
      (noted ``no_power_prediction``);
    - skipped: a repeated job id (``duplicate_id``: some historical instances list a job twice,
      identically), an end before the start (``negative_runtime``), a zero estimate
      (``zero_walltime``), an allocation with no resource (``no_resources``), and, when
      ``max_unit`` (a node's capacity) is given, a unit that does not fit in it
      (``unit_larger_than_node``: three synthetic jobs ask 18 cores on each of 18 nodes).

    ``meta`` holds ``path`` and ``first_submit`` (the origin of the power-cap profiles).
    Raises :class:`TraceError` on a malformed line.
    """
    if not queues:
        raise ValueError("read_eurora_jobs: queues must not be empty")
    p = Path(path)
    fallback_ewt = unknown_queue_ewt if unknown_queue_ewt is not None else max(queues.values())
    report = TraceReport()
    jobs: list[Job] = []
    seen: set[str] = set()
    for lineno, line in enumerate(read_utf8(p).splitlines(keepends=True), 1):
        line = line.strip()
        if not line:
            continue
        report.read += 1
        job = _parse_job(line, p, lineno, report, queues, power, fallback_ewt, aliases, seen)
        if job is None:
            continue
        if max_unit is not None and not job.unit.fits_in(max_unit):
            report.skip("unit_larger_than_node")
            continue
        seen.add(job.id)
        jobs.append(job)
        report.kept += 1
    meta = {"path": str(p)}
    if jobs:
        # The power-capping paper counts cap offsets from the first arrival of the instance.
        meta["first_submit"] = str(min(j.submit for j in jobs))
    return Workload(jobs=jobs, report=report, meta=meta)


def _parse_job(
    line: str,
    p: Path,
    lineno: int,
    report: TraceReport,
    queues: Mapping[str, int],
    power: Mapping[str, float] | None,
    fallback_ewt: int,
    aliases: Mapping[str, str],
    seen: set[str],
) -> Job | None:
    """One ``log_crypt`` line -> a job, or None (reason counted) when it is skipped."""
    parts = line.split("__")
    if len(parts) != 3:
        raise TraceError(p, lineno, "line", line, f"has {len(parts) - 1} '__' markers, expected 2")
    head = parts[0].split(";")
    if len(head) != len(HEAD_FIELDS):
        raise TraceError(
            p,
            lineno,
            "line",
            parts[0],
            f"has {len(head)} fields before '__', expected {len(HEAD_FIELDS)}",
        )
    tail = parts[2].split(";")
    if len(tail) != len(TAIL_FIELDS):
        raise TraceError(
            p,
            lineno,
            "line",
            parts[2],
            f"has {len(tail)} fields after '__', expected {len(TAIL_FIELDS)}",
        )
    job_id, _exe, user, queue, arrival = head
    if not job_id:
        raise TraceError(p, lineno, "job_id", job_id, "empty")
    if job_id in seen:
        report.skip("duplicate_id")
        return None
    entries = [e for e in parts[1].split("#") if e]
    if not entries:
        raise TraceError(p, lineno, "allocation", parts[1], "no node entry")
    unit_max = [0, 0, 0, 0]  # cores, gpus, mics, mem_kb
    first: list[int] | None = None
    differ = False
    for entry in entries:
        toks = entry.split(";")
        if len(toks) != len(ALLOC_FIELDS):
            raise TraceError(
                p,
                lineno,
                "allocation",
                entry,
                f"has {len(toks)} fields, expected {len(ALLOC_FIELDS)}",
            )
        vals = [_int(t, p, lineno, n) for t, n in zip(toks[1:], ALLOC_FIELDS[1:], strict=True)]
        for name, v in zip(ALLOC_FIELDS[1:], vals, strict=True):
            if v < 0:
                raise TraceError(p, lineno, name, str(v), "must be >= 0")
        if first is None:
            first = vals
        elif vals != first:
            differ = True
        unit_max = [max(a, b) for a, b in zip(unit_max, vals, strict=True)]
    submit = _epoch(arrival, p, lineno, "arrival")
    start = _epoch(tail[0], p, lineno, "start")
    end = _epoch(tail[1], p, lineno, "end")
    requested_nodes = _int(tail[2], p, lineno, "requested_nodes")
    walltime = _duration(tail[5], p, lineno)
    units = len(entries)
    cores, gpus, mics, mem_kb = unit_max
    unit = Resources(cores=cores, mem_mb=-(-mem_kb // 1024), gpus=gpus, mics=mics)
    if not any(unit.as_tuple()):
        report.skip("no_resources")
        return None
    runtime = end - start
    if runtime < 0:
        report.skip("negative_runtime")
        return None
    if walltime <= 0:
        report.skip("zero_walltime")
        return None
    if differ:
        report.note("unit_entries_differ")
    if units != requested_nodes:
        report.note("units_differ_from_requested_nodes")
    if runtime > walltime:
        runtime = walltime
        report.clamp("runtime_over_walltime")
    qname = aliases.get(queue, queue)
    if qname != queue:
        report.note(f"queue_alias_{queue}_to_{qname}")
    ewt = queues.get(qname)
    if ewt is None:
        ewt = fallback_ewt
        report.note("unknown_queue")
    unit_power: float | None = None
    if power is not None:
        watts = power.get(job_id.partition(".")[0])
        if watts is None:
            report.note("no_power_prediction")
        else:
            unit_power = watts / units
    return Job(
        id=job_id,
        submit=submit,
        walltime=walltime,
        units=units,
        unit=unit,
        unit_power_w=unit_power,
        queue=qname,
        ewt=ewt,
        runtime=runtime,
        user=user or None,
    )
