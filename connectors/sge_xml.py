"""Parsers for Grid Engine's XML: ``qstat -xml -r -u *``, ``qstat -f -xml``, ``qstat -xml -j``,
``qhost -xml`` (Sun/Son of Grid Engine 6.x-8.x schemas; tested on the live 8.1.9 of the test
fixture and on recorded outputs of other sites).

Times in ``qstat -xml`` job lists are local ISO times (``2026-11-22T03:30:36``); in
``qstat -j`` epoch seconds (milliseconds on Univa).
"""

from __future__ import annotations

import re
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass, field

from wattsched.connectors.base import RMSParseError


def _root(text: str, what: str) -> ET.Element:
    try:
        return ET.fromstring(text)
    except ET.ParseError as exc:
        raise RMSParseError(what, text, f"not well-formed XML: {exc}") from None


def _text(el: ET.Element | None, tag: str, default: str = "") -> str:
    if el is None:
        return default
    found = el.find(tag)
    return (found.text or "").strip() if found is not None and found.text else default


def iso_time(text: str, to_epoch: Callable[[time.struct_time], float] = time.mktime) -> int | None:
    """``2026-11-22T03:30:36`` (local time; a trailing ``.mmm`` is dropped) -> epoch."""
    text = (text or "").strip().split(".")[0]
    if not text:
        return None
    try:
        return int(to_epoch(time.strptime(text, "%Y-%m-%dT%H:%M:%S")))
    except ValueError:
        return None


_MEM = re.compile(r"^(\d+(?:\.\d+)?)([KMGTP]?)$", re.IGNORECASE)
_MEM_MB = {"": 1 / 1024**2, "K": 1 / 1024, "M": 1.0, "G": 1024.0, "T": 1024.0**2, "P": 1024.0**3}


def mem_mb(text: str) -> int:
    """``23.5G`` -> MB; ``-`` or garbage -> 0."""
    m = _MEM.match((text or "").strip())
    if not m:
        return 0
    return int(float(m.group(1)) * _MEM_MB[m.group(2).upper()])


def duration_s(text: str) -> int | None:
    """``600`` / ``0:10:00`` / ``INFINITY`` -> seconds (None for none/infinite)."""
    text = (text or "").strip()
    if not text or text.upper() == "INFINITY":
        return None
    try:
        total = 0
        for part in text.split(":"):
            total = total * 60 + int(float(part or 0))
        return total
    except ValueError:
        return None


@dataclass(frozen=True, slots=True)
class SGEJob:
    """One job of ``qstat -xml -r``."""

    job_id: str
    state: str
    """Grid Engine's state letters: ``qw``, ``hqw``, ``r``, ``Rr``, ``t``, ``dr``, ``Eqw``..."""
    name: str
    owner: str
    slots: int
    queue: str | None
    """``all.q`` of ``all.q@host`` (running jobs)."""
    host: str | None
    submit_time: int | None
    start_time: int | None
    h_rt_s: int | None
    hard_queues: tuple[str, ...] = ()

    @property
    def pending(self) -> bool:
        """Waiting (``qw``, ``hqw``...), not in error."""
        return "q" in self.state and "w" in self.state and "E" not in self.state

    @property
    def held(self) -> bool:
        """Has a hold (``h`` in the state)."""
        return "h" in self.state

    @property
    def running(self) -> bool:
        """Running or transferring (``r``, ``t``, ``Rr``), not being deleted."""
        return ("r" in self.state or "t" in self.state) and "d" not in self.state


def parse_qstat(text: str) -> list[SGEJob]:
    """Jobs from ``qstat -xml [-r] [-u *]`` (running under queue_info, pending under job_info)."""
    root = _root(text, "qstat -xml")
    if root.tag != "job_info":
        raise RMSParseError("qstat -xml", text, f"root element is {root.tag!r}, not job_info")
    jobs: list[SGEJob] = []
    # In ``qstat -f -xml`` a running job sits in its queue instance's Queue-List, whose
    # <name> (queue@host) stands for the job's own <queue_name>.
    instance_of: dict[int, str] = {}
    for ql in root.iter("Queue-List"):
        for jl in ql.findall("job_list"):
            instance_of[id(jl)] = _text(ql, "name")
    for jl in root.iter("job_list"):
        jid = _text(jl, "JB_job_number")
        if not jid:
            raise RMSParseError("qstat -xml job", ET.tostring(jl, "unicode"), "no JB_job_number")
        qname = _text(jl, "queue_name") or instance_of.get(id(jl)) or None
        queue, host = ([*qname.split("@", 1), ""])[:2] if qname else (None, None)
        h_rt = None
        for hr in jl.findall("hard_request"):
            if hr.get("name") in ("h_rt", "s_rt"):
                h_rt = duration_s(hr.text or "")
        hard_queues = tuple((q.text or "").strip() for q in jl.findall("hard_req_queue") if q.text)
        try:
            slots = int(_text(jl, "slots", "1"))
        except ValueError:
            raise RMSParseError("qstat -xml job", text, f"bad slots in job {jid}") from None
        jobs.append(
            SGEJob(
                job_id=jid,
                state=_text(jl, "state"),
                name=_text(jl, "JB_name"),
                owner=_text(jl, "JB_owner"),
                slots=slots,
                queue=queue or None,
                host=host or None,
                submit_time=iso_time(_text(jl, "JB_submission_time")),
                start_time=iso_time(_text(jl, "JAT_start_time")),
                h_rt_s=h_rt,
                hard_queues=hard_queues,
            )
        )
    return jobs


@dataclass(frozen=True, slots=True)
class SGEHost:
    """One execution host of ``qhost -xml``."""

    name: str
    num_proc: int
    mem_mb: int
    reporting: bool
    """False when the host's execd has not reported (values ``-``)."""


def parse_qhost(text: str) -> list[SGEHost]:
    """Hosts from ``qhost -xml`` (the ``global`` pseudo-host left out)."""
    root = _root(text, "qhost -xml")
    if root.tag != "qhost":
        raise RMSParseError("qhost -xml", text, f"root element is {root.tag!r}, not qhost")
    hosts: list[SGEHost] = []
    for h in root.findall("host"):
        name = h.get("name") or ""
        if not name or name == "global":
            continue
        vals = {v.get("name"): (v.text or "").strip() for v in h.findall("hostvalue")}
        nproc = vals.get("num_proc", "-")
        hosts.append(
            SGEHost(
                name=name,
                num_proc=int(nproc) if nproc.isdigit() else 0,
                mem_mb=mem_mb(vals.get("mem_total", "")),
                reporting=nproc.isdigit(),
            )
        )
    return hosts


@dataclass(frozen=True, slots=True)
class SGEQueueInstance:
    """One ``queue@host`` of ``qstat -f -xml``."""

    queue: str
    host: str
    slots_total: int
    slots_used: int
    state: str
    """Letters: ``d`` disabled, ``u`` unknown, ``E`` error, ``a`` alarm, ``s``/``S`` suspended..."""


def parse_queue_instances(text: str) -> list[SGEQueueInstance]:
    """Queue instances from ``qstat -f -xml``."""
    root = _root(text, "qstat -f -xml")
    out: list[SGEQueueInstance] = []
    for q in root.iter("Queue-List"):
        name = _text(q, "name")
        queue, _, host = name.partition("@")
        try:
            out.append(
                SGEQueueInstance(
                    queue=queue,
                    host=host,
                    slots_total=int(_text(q, "slots_total", "0")),
                    slots_used=int(_text(q, "slots_used", "0")),
                    state=_text(q, "state"),
                )
            )
        except ValueError:
            raise RMSParseError("qstat -f -xml", text, f"bad slots of {name}") from None
    return out


@dataclass(frozen=True, slots=True)
class SGEJobDetail:
    """What ``qstat -xml -j`` adds: the job context (``-ac``/``-sc`` variables)."""

    job_id: str
    context: dict[str, str] = field(default_factory=dict)


def parse_job_details(text: str) -> dict[str, SGEJobDetail]:
    """``qstat -xml -j LIST``: job id -> details. Unknown jobs are simply absent (SGE prints
    a not-well-formed ``<unknown_jobs>`` document for them: read as no job)."""
    if "<unknown_jobs" in text and "<djob_info" not in text:
        return {}
    root = _root(text, "qstat -xml -j")
    out: dict[str, SGEJobDetail] = {}
    info = root.find("djob_info")
    if info is None:
        return out
    # 8.1 wraps each job in <element>; Son of Grid Engine puts one job's fields directly.
    elements = [info] if info.find("JB_job_number") is not None else info.findall("element")
    for el in elements:
        jid = _text(el, "JB_job_number")
        ctx: dict[str, str] = {}
        for var in el.iterfind("JB_context/*"):
            k = _text(var, "VA_variable")
            if k:
                ctx[k] = _text(var, "VA_value")
        out[jid] = SGEJobDetail(jid, ctx)
    return out
