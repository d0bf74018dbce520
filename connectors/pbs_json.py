"""Parsers for PBS Pro / OpenPBS JSON: ``qstat -f -F json`` and ``pbsnodes -a -F json``.

Shapes as PBS Pro documents them (and as recorded from OpenPBS 23.06 and PBS Pro 2022-2025):
``{"timestamp", "pbs_version", "pbs_server", "Jobs": {id: {...}}}`` and
``{..., "nodes": {name: {...}}}``. Times in ``qstat`` are the server's local time as text
(``"Thu Jun 19 10:36:47 2025"``), sizes are ``<n><unit>`` with units b/kb/mb/gb/tb.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from wattsched.connectors.base import RMSParseError

_SIZE = re.compile(r"^(\d+)(b|kb|mb|gb|tb|pb|w|kw|mw|gw)?$", re.IGNORECASE)
_MB = {"b": 1 / 1024**2, "kb": 1 / 1024, "mb": 1.0, "gb": 1024.0, "tb": 1024.0**2, "pb": 1024.0**3}


def size_mb(value: Any) -> int:
    """``"1022318284kb"`` -> megabytes (rounded down); ints are bytes; unreadable -> 0."""
    if isinstance(value, int):
        return value // 1024**2
    m = _SIZE.match(str(value or "").strip())
    if not m:
        return 0
    unit = (m.group(2) or "b").lower()
    return int(int(m.group(1)) * _MB.get(unit, 1 / 1024**2))


def duration_s(value: Any) -> int | None:
    """``"HH:MM:SS"`` / ``"MM:SS"`` / seconds -> seconds."""
    if isinstance(value, int):
        return value
    text = str(value or "").strip()
    if not text:
        return None
    try:
        parts = [int(p) for p in text.split(":")]
    except ValueError:
        return None
    total = 0
    for p in parts:
        total = total * 60 + p
    return total


def pbs_time(value: Any, to_epoch: Callable[[time.struct_time], float] = time.mktime) -> int | None:
    """``"Thu Jun 19 10:36:47 2025"`` (server local time) or an epoch int -> epoch seconds."""
    if isinstance(value, int):
        return value
    text = " ".join(str(value or "").split())
    if not text:
        return None
    try:
        return int(to_epoch(time.strptime(text, "%a %b %d %H:%M:%S %Y")))
    except ValueError:
        return None


@dataclass(frozen=True, slots=True)
class Chunk:
    """One ``select`` chunk: ``count`` units each asking for these resources."""

    count: int
    ncpus: int
    mem_mb: int
    ngpus: int


def parse_select(select: str) -> list[Chunk]:
    """``"2:ncpus=4:mem=8gb+1:ngpus=2"`` -> chunks (count defaults to 1, ncpus to 1)."""
    chunks: list[Chunk] = []
    for spec in str(select or "").split("+"):
        spec = spec.strip()
        if not spec:
            continue
        parts = spec.split(":")
        count = 1
        if parts and parts[0].isdigit():
            count = int(parts.pop(0))
        res: dict[str, str] = {}
        for p in parts:
            k, _, v = p.partition("=")
            res[k.strip()] = v.strip()
        chunks.append(
            Chunk(
                count=count,
                ncpus=int(res["ncpus"]) if res.get("ncpus", "").isdigit() else 1,
                mem_mb=size_mb(res["mem"]) if "mem" in res else 0,
                ngpus=int(res["ngpus"]) if res.get("ngpus", "").isdigit() else 0,
            )
        )
    return chunks


@dataclass(frozen=True, slots=True)
class PBSJob:
    """One job as PBS reports it."""

    job_id: str
    state: str
    """Q, H, R, E, F, W, S, B, T, X, M, U."""
    hold_types: str
    queue: str
    owner: str | None
    submit_time: int
    start_time: int | None
    walltime_s: int | None
    chunks: tuple[Chunk, ...]
    exec_hosts: tuple[str, ...]
    """One host per chunk placed (``exec_host``), in order."""
    comment: str
    place: str = ""
    """``Resource_List.place``: ``free``, ``pack``, ``scatter``, ``vscatter``, with ``:excl``,
    ``:exclhost`` or ``:shared`` (empty: the server's default, ``free``)."""


@dataclass(frozen=True, slots=True)
class PBSNode:
    """One (v)node as ``pbsnodes`` reports it."""

    name: str
    states: frozenset[str]
    ncpus: int
    mem_mb: int
    ngpus: int
    assigned_ncpus: int
    partition: str | None
    queues: tuple[str, ...]


def _load(text: str, what: str, key: str) -> Mapping[str, Any]:
    try:
        doc = json.loads(text)
    except (json.JSONDecodeError, TypeError) as exc:
        raise RMSParseError(what, str(text), f"not JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise RMSParseError(what, str(text), "top level is not an object")
    table = doc.get(key, {})  # no jobs at all: qstat prints no "Jobs" key
    if not isinstance(table, dict):
        raise RMSParseError(what, str(text), f"{key!r} is not an object")
    return table


def parse_qstat(text: str) -> list[PBSJob]:
    """Jobs from ``qstat -f -F json`` (with or without ``-x``)."""
    jobs = _load(text, "qstat -f -F json", "Jobs")
    out: list[PBSJob] = []
    for jid, j in jobs.items():
        try:
            rl = j.get("Resource_List") or {}
            chunks = parse_select(rl.get("select", ""))
            if not chunks:
                n = int(rl.get("nodect") or 1)
                ncpus = int(rl.get("ncpus") or n)
                chunks = [Chunk(n, max(ncpus // n, 1), size_mb(rl.get("mem", 0)) // n, 0)]
            hosts = tuple(h.split("/")[0] for h in str(j.get("exec_host") or "").split("+") if h)
            owner = str(j.get("Job_Owner") or "").split("@")[0] or None
            out.append(
                PBSJob(
                    job_id=str(jid),
                    state=str(j.get("job_state") or "?"),
                    hold_types=str(j.get("Hold_Types") or "n"),
                    queue=str(j.get("queue") or ""),
                    owner=owner,
                    submit_time=pbs_time(j.get("qtime") or j.get("ctime")) or 0,
                    start_time=pbs_time(j.get("stime")),
                    walltime_s=duration_s(rl.get("walltime")),
                    chunks=tuple(chunks),
                    exec_hosts=hosts,
                    comment=str(j.get("comment") or ""),
                    place=str(rl.get("place") or ""),
                )
            )
        except (AttributeError, TypeError, ValueError) as exc:
            raise RMSParseError("qstat job", json.dumps(j)[:2000], repr(exc)) from None
    return out


def parse_pbsnodes(text: str) -> list[PBSNode]:
    """Nodes from ``pbsnodes -a -F json``; the empty natural vnode of a multi-vnode host is
    left out (its vnodes carry the resources)."""
    nodes = _load(text, "pbsnodes -a -F json", "nodes")
    out: list[PBSNode] = []
    for name, n in nodes.items():
        try:
            avail = n.get("resources_available") or {}
            assigned = n.get("resources_assigned") or {}
            ncpus = int(avail.get("ncpus") or 0)
            if ncpus == 0 and n.get("in_multivnode_host"):
                continue
            states = frozenset(s.strip() for s in str(n.get("state") or "").split(",") if s)
            qlist = tuple(q for q in str(avail.get("qlist") or "").split(",") if q)
            out.append(
                PBSNode(
                    name=str(name),
                    states=states,
                    ncpus=ncpus,
                    mem_mb=size_mb(avail.get("mem", 0)),
                    ngpus=int(avail.get("ngpus") or 0),
                    assigned_ncpus=int(assigned.get("ncpus") or 0),
                    partition=str(n["partition"]) if n.get("partition") else None,
                    queues=qlist,
                )
            )
        except (AttributeError, TypeError, ValueError) as exc:
            raise RMSParseError("pbsnodes node", json.dumps(n)[:2000], repr(exc)) from None
    return out
