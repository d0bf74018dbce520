"""Reader for the Standard Workload Format (SWF) of the Parallel Workloads Archive.

One job a line, 18 whitespace-separated numeric fields, ``-1`` for unknown; lines starting
with ``;`` are header comments (``; MaxProcs: 100`` lands in :attr:`Workload.meta`).

How a record becomes a :class:`Job` (details and reasons in ``docs/traces.md``):

- processors ``p`` = allocated (field 5), or requested (field 8) when allocated is -1;
- ``units = ceil(p / cores_per_node)``, each unit ``ceil(p / units)`` cores; memory per unit
  from field 7 (used memory per processor, KB) times the unit's cores, capped at the node's;
- walltime = requested time (field 9); when unknown, ``walltime_default`` or the runtime;
  a runtime above the walltime is clamped to it (counted in ``clamped``);
- skipped and counted, never raised: unknown submit time, unknown runtime, a job cancelled
  before it started (status 5, runtime <= 0), no processors, more processors than the machine.
"""

from __future__ import annotations

from dataclasses import dataclass
from os import PathLike
from pathlib import Path

from wattsched.connectors.traces.errors import TraceError, TraceReport, Workload
from wattsched.scheduler.model import Job, Resources

SWF_FIELDS: tuple[str, ...] = (
    "job_number",
    "submit_time",
    "wait_time",
    "run_time",
    "allocated_processors",
    "average_cpu_time",
    "used_memory",
    "requested_processors",
    "requested_time",
    "requested_memory",
    "status",
    "user_id",
    "group_id",
    "executable",
    "queue_number",
    "partition_number",
    "preceding_job",
    "think_time",
)
"""The 18 SWF fields, in file order (field 1 is ``job_number``)."""

_FLOAT_FIELDS = frozenset({5, 6, 9})
"""0-based positions of the fields that may hold fractions (CPU time, memory in KB)."""

STATUS_CANCELLED = 5


@dataclass(slots=True)
class SWFRecord:
    """One SWF job line, every field as read (``-1``: unknown).

    Not frozen: a frozen dataclass sets its 18 fields through ``object.__setattr__``, which
    doubles the parse time of a 30k-line trace.
    """

    job_number: int
    submit_time: int
    wait_time: int
    run_time: int
    allocated_processors: int
    average_cpu_time: float
    used_memory: float
    requested_processors: int
    requested_time: int
    requested_memory: float
    status: int
    user_id: int
    group_id: int
    executable: int
    queue_number: int
    partition_number: int
    preceding_job: int
    think_time: int

    @property
    def processors(self) -> int:
        """Allocated processors, or requested ones when the allocation is unknown."""
        if self.allocated_processors != -1:
            return self.allocated_processors
        return self.requested_processors


def _number(tok: str, i: int, path: Path, lineno: int) -> int | float:
    """Parse field ``i`` (0-based) of a line; slow path of :func:`parse_swf_line`."""
    try:
        x = float(tok)
    except ValueError:
        raise TraceError(path, lineno, SWF_FIELDS[i], tok, "not a number") from None
    if i in _FLOAT_FIELDS:
        return x
    if not x.is_integer():
        raise TraceError(path, lineno, SWF_FIELDS[i], tok, "not an integer")
    return int(x)


def parse_swf_line(line: str, path: Path, lineno: int) -> SWFRecord:
    """One job line -> :class:`SWFRecord`; :class:`TraceError` when it is malformed."""
    toks = line.split()
    if len(toks) != len(SWF_FIELDS):
        raise TraceError(
            path,
            lineno,
            "line",
            line.strip(),
            f"has {len(toks)} fields, expected {len(SWF_FIELDS)}",
        )
    try:
        vals: list[int | float] = list(map(int, toks))
    except ValueError:
        vals = [_number(t, i, path, lineno) for i, t in enumerate(toks)]
    return SWFRecord(*vals)  # type: ignore[arg-type]


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def read_swf(
    path: str | PathLike[str],
    *,
    cores_per_node: int,
    nodes: int,
    mem_mb_per_node: int | None = None,
    limit: int | None = None,
    walltime_default: int | None = None,
    ewt: int = 3600,
) -> Workload:
    """Read an SWF trace into jobs for a machine of ``nodes`` x ``cores_per_node`` cores.

    ``limit`` stops after that many kept jobs. ``walltime_default`` replaces an unknown
    requested time (else the runtime does). Every job gets ``ewt`` as its expected wait.
    Raises :class:`TraceError` on a malformed line; see the module docstring for the rest.
    """
    if cores_per_node < 1 or nodes < 1:
        raise ValueError(f"read_swf: cores_per_node={cores_per_node}, nodes={nodes}: must be >= 1")
    p = Path(path)
    report = TraceReport()
    meta: dict[str, str] = {}
    jobs: list[Job] = []
    # Frozen, so equal unit requirements can share one validated object (a 2x speed-up).
    units_seen: dict[tuple[int, int], Resources] = {}
    max_procs = nodes * cores_per_node
    with p.open(encoding="utf-8", errors="replace") as f:
        for lineno, line in enumerate(f, 1):
            s = line.lstrip()
            if not s:
                continue
            if s[0] == ";":
                key, sep, value = s[1:].partition(":")
                # "; MaxProcs: 100"; indented lines continue the previous field: ignored.
                if sep and key.strip().isalnum() and len(key) - len(key.lstrip()) <= 1:
                    meta[key.strip()] = value.strip()
                continue
            if limit is not None and report.kept >= limit:
                break
            rec = parse_swf_line(s, p, lineno)
            report.read += 1
            job = _to_job(
                rec,
                report,
                cores_per_node,
                max_procs,
                mem_mb_per_node,
                walltime_default,
                ewt,
                units_seen,
            )
            if job is not None:
                jobs.append(job)
                report.kept += 1
    return Workload(jobs=jobs, report=report, meta=meta)


def _to_job(
    rec: SWFRecord,
    report: TraceReport,
    cores_per_node: int,
    max_procs: int,
    mem_mb_per_node: int | None,
    walltime_default: int | None,
    ewt: int,
    units_seen: dict[tuple[int, int], Resources],
) -> Job | None:
    """The job of one record, or None (and the reason counted) when it is skipped."""
    if rec.submit_time < 0:
        report.skip("submit_unknown")
        return None
    if rec.status == STATUS_CANCELLED and rec.run_time <= 0:
        report.skip("cancelled_before_start")
        return None
    if rec.run_time < 0:
        report.skip("runtime_unknown")
        return None
    procs = rec.processors
    if procs <= 0:
        report.skip("no_processors")
        return None
    if procs > max_procs:
        report.skip("too_many_processors")
        return None
    units = _ceil_div(procs, cores_per_node)
    cores = _ceil_div(procs, units)
    mem_mb = 0
    if rec.used_memory > 0:
        mem_mb = _ceil_div(int(rec.used_memory * cores), 1024)
        if mem_mb_per_node is not None and mem_mb > mem_mb_per_node:
            mem_mb = mem_mb_per_node
            report.clamp("memory_over_node")
    runtime = rec.run_time
    walltime = rec.requested_time
    if walltime <= 0:
        walltime = walltime_default if walltime_default is not None else runtime
        report.note("walltime_unknown")
    if walltime <= 0:
        # A zero runtime and no request: the model needs a positive walltime.
        walltime = 1
        report.clamp("walltime_raised_to_1")
    if runtime > walltime:
        runtime = walltime
        report.clamp("runtime_over_walltime")
    unit = units_seen.get((cores, mem_mb))
    if unit is None:
        unit = units_seen[(cores, mem_mb)] = Resources(cores=cores, mem_mb=mem_mb)
    return Job(
        id=str(rec.job_number),
        submit=rec.submit_time,
        walltime=walltime,
        units=units,
        unit=unit,
        queue=str(rec.queue_number) if rec.queue_number >= 0 else "default",
        ewt=ewt,
        runtime=runtime,
        user=str(rec.user_id) if rec.user_id >= 0 else None,
    )
