"""Runtime / walltime ratios known before an Eurora instance (the hybrid's runtime prior).

The hybrid never sees the runtimes of the jobs it plans; with ``runtime_ratios`` it weighs
its plan against PRB under runtimes drawn from ratios of jobs that ended *before*
(:mod:`wattsched.scheduler.hybrid.robust`). Here those come from every historical Eurora
trace (all sizes, each job once): the jobs whose end precedes the cutoff. The cutoff of a
historical instance is its first arrival; a synthetic instance has no date, so its cutoff is
the first arrival of the earliest historical 200-job instance (no data after the
benchmark's first instance is used for it). With too few earlier jobs the bench uses
:data:`UNIFORM_PRIOR`. Fields as in ``shared/data/eurora/FORMAT.txt``.
"""

from __future__ import annotations

from datetime import datetime
from functools import cache
from pathlib import Path

from wattsched.connectors.traces.eurora import read_eurora_jobs, read_queues
from wattsched.scheduler.model import Job

FMT = "%Y-%m-%d %H:%M:%S"
UNIFORM_PRIOR = tuple((k + 0.5) / 20 for k in range(20))
"""The prior without earlier data (the first historical instances, the synthetic ones): a
ratio uniform on (0, 1], as 20 midpoints."""


def _walltime_s(hhmm: str) -> int:
    h, m = hhmm.split(":")
    return int(h) * 3600 + int(m) * 60


@cache
def _history(root: Path) -> tuple[tuple[datetime, float], ...]:
    """(end, runtime / walltime) of every historical job, each id once, by end."""
    seen: dict[str, tuple[datetime, float]] = {}
    for f in sorted((root / "historical_traces").glob("*/*.log_crypt")):
        for line in f.read_text(encoding="utf-8").splitlines():
            parts = line.strip().split("__")
            if len(parts) < 3:
                continue
            head, tail = parts[0].split(";"), parts[-1].split(";")
            try:
                start, end = datetime.strptime(tail[0], FMT), datetime.strptime(tail[1], FMT)
                wall = _walltime_s(tail[5])
            except (ValueError, IndexError):
                continue
            if wall <= 0 or end < start:
                continue
            run = (end - start).total_seconds()
            seen.setdefault(head[0], (end, min(1.0, max(run, 1.0) / wall)))
    return tuple(sorted(seen.values()))


def first_arrival(path: Path) -> datetime:
    """The earliest arrival time in an instance file."""
    out = None
    for line in path.read_text(encoding="utf-8").splitlines():
        if "__" not in line:
            continue
        t = datetime.strptime(line.split("__")[0].split(";")[4], FMT)
        out = t if out is None or t < out else out
    if out is None:
        raise ValueError(f"{path}: no job line")
    return out


def runtime_ratios(root: Path, instance: Path, earliest: Path) -> tuple[float, ...]:
    """Ratios of the historical jobs that ended before ``instance`` (a historical one) or
    before ``earliest`` (for a synthetic one)."""
    ref = instance if "historical" in str(instance) else earliest
    cutoff = first_arrival(ref)
    return tuple(r for end, r in _history(root) if end < cutoff)


@cache
def _ended_jobs(root: Path) -> tuple[tuple[datetime, Job, int], ...]:
    """(end, job, runtime s) of every historical job, each id once, by end (jobs as
    :func:`read_eurora_jobs` reads them, so their classes are the dispatcher's)."""
    queues = read_queues(root / "system_configs" / "system_queues")
    ends = {}
    for f in sorted((root / "historical_traces").glob("*/*.log_crypt")):
        for line in f.read_text(encoding="utf-8").splitlines():
            parts = line.strip().split("__")
            if len(parts) >= 3:
                try:
                    ends.setdefault(
                        parts[0].split(";")[0], datetime.strptime(parts[-1].split(";")[1], FMT)
                    )
                except (ValueError, IndexError):
                    continue  # fmt: skip
    seen: dict[str, tuple[datetime, Job, int]] = {}
    for f in sorted((root / "historical_traces").glob("*/*.log_crypt")):
        for job in read_eurora_jobs(f, queues=queues).jobs:
            if job.id in ends and job.id not in seen and job.runtime is not None:
                seen[job.id] = (ends[job.id], job, job.runtime)
    return tuple(sorted(seen.values(), key=lambda e: (e[0], e[1].id)))


def ended_before(root: Path, instance: Path, earliest: Path) -> list[tuple[Job, int]]:
    """``(job, runtime)`` of the historical jobs that ended before ``instance`` (a historical
    one) or before ``earliest`` (for a synthetic one), in end order: the history a runtime
    predictor (:mod:`wattsched.scheduler.runtime_predictor`) is given, as for the prior."""
    ref = instance if "historical" in str(instance) else earliest
    cutoff = first_arrival(ref)
    return [(job, run) for end, job, run in _ended_jobs(root) if end < cutoff]
