"""Parsers for Slurm's machine-readable outputs: ``squeue --json``, ``sinfo --json``,
``scontrol show node --json`` (newer Slurm) and ``scontrol show job|node -o`` (key=value).

Two shapes of the JSON are handled (tested on recorded outputs of 21.08 to 25.11 and on the
live 22.05 of the test cluster):

* old (openapi v0.0.37/38, Slurm 21.08 and 22.05): numbers are plain (``null`` when unset),
  ``job_state`` is a string, a node's ``state`` is a lower-case string plus ``state_flags``;
  ``sinfo --json`` lists one record per node under ``nodes``.
* new (data_parser v0.0.39+, Slurm 23.02 on): numbers are ``{"set", "infinite", "number"}``,
  ``job_state`` and a node's ``state`` are lists of upper-case words; ``sinfo --json`` lists
  grouped records under ``sinfo`` (node detail then comes from ``scontrol show node --json``).

The parsers return plain records (:class:`SlurmNode`, :class:`SlurmJob`); turning them into
the domain model is the connector's job. Anything unreadable raises :class:`RMSParseError`
carrying the text.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ClusterShell.NodeSet import NodeSet, NodeSetParseError

from wattsched.connectors.base import RMSParseError
from wattsched.scheduler.model import PowerState

_INFINITE = object()


def number(value: Any) -> int | float | object | None:
    """A Slurm number in either shape: plain, ``null``, or ``{"set","infinite","number"}``.

    Returns None when unset, :data:`_INFINITE` when infinite, else the number.
    """
    if isinstance(value, Mapping):
        if value.get("infinite"):
            return _INFINITE
        if not value.get("set", True):
            return None
        value = value.get("number")
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return value
    return None


def int_or(value: Any, default: int | None = None) -> int | None:
    """A finite Slurm number as int, else ``default``."""
    v = number(value)
    if v is None or v is _INFINITE:
        return default
    return int(v)  # type: ignore[call-overload]


def is_infinite(value: Any) -> bool:
    """True for an ``{"infinite": true}`` number."""
    return number(value) is _INFINITE


def expand_hostlist(text: str) -> list[str]:
    """``n[1-3],gpu5`` -> ``["gpu5", "n1", "n2", "n3"]`` (ClusterShell's sorted order)."""
    text = (text or "").strip()
    if not text or text in ("(null)", "None"):
        return []
    try:
        return list(NodeSet(text))
    except NodeSetParseError as exc:
        raise RMSParseError("Slurm hostlist", text, str(exc)) from None


def fold_hostlist(names: list[str]) -> str:
    """``["n2", "n3"]`` -> ``n[2-3]``."""
    return str(NodeSet.fromlist(names))


_SIZE = re.compile(r"^(\d+(?:\.\d+)?)([KMGTP]?)$")
_UNIT_MB = {"": 1.0, "K": 1 / 1024, "M": 1.0, "G": 1024.0, "T": 1024.0**2, "P": 1024.0**3}


def parse_tres(text: str) -> dict[str, str]:
    """``cpu=4,mem=2000M,node=2,gres/gpu=2`` -> a dict (values as printed)."""
    out: dict[str, str] = {}
    for item in (text or "").split(","):
        if "=" in item:
            k, v = item.split("=", 1)
            out[k.strip()] = v.strip()
    return out


def size_mb(text: str) -> int | None:
    """``2000M`` / ``1.50T`` / ``32G`` -> megabytes (rounded up)."""
    m = _SIZE.match((text or "").strip())
    if not m:
        return None
    return math.ceil(float(m.group(1)) * _UNIT_MB[m.group(2)])


_GRES_GPU = re.compile(r"(?:^|,)gpu(?::[^:(,]+)?:(\d+)")


def gres_gpus(text: str) -> int:
    """GPUs in a node's gres string: ``gpu:a100:4(S:0-1),tmp:1T`` -> 4."""
    return sum(int(m.group(1)) for m in _GRES_GPU.finditer(text or ""))


_TRES_GPU = re.compile(r"^gres[/:]gpu(?::[^:=,]+)?[:=](\d+)$")


def _tres_gpus(text: str) -> int:
    """GPUs in ``gres/gpu:2`` / ``gres:gpu:a100:2`` / ``gres/gpu=2`` (summed over types)."""
    total = 0
    for item in (text or "").split(","):
        m = _TRES_GPU.match(item.strip())
        if m:
            total += int(m.group(1))
    return total


@dataclass(frozen=True, slots=True)
class SlurmNode:
    """One node as Slurm reports it."""

    name: str
    cpus: int
    memory_mb: int
    gpus: int
    state: str
    """Base state, upper case: IDLE, ALLOCATED, MIXED, DOWN, ..."""
    flags: frozenset[str]
    """State flags, upper case: DRAIN, POWERED_DOWN, POWERING_UP, NOT_RESPONDING, ..."""
    alloc_cpus: int
    partitions: tuple[str, ...]
    reason: str = ""


def load_json(text: str, what: str) -> dict[str, Any]:
    """Parse a Slurm ``--json`` output; reports Slurm's own ``errors`` list as a parse error."""
    try:
        doc = json.loads(text)
    except (json.JSONDecodeError, TypeError) as exc:
        raise RMSParseError(what, str(text), f"not JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise RMSParseError(what, str(text), "top level is not an object")
    errors = doc.get("errors") or []
    if errors:
        raise RMSParseError(what, str(text), f"Slurm reported errors: {errors!r}"[:300])
    return doc


def _states(node: Mapping[str, Any]) -> tuple[str, frozenset[str]]:
    raw = node.get("state")
    if isinstance(raw, list):
        words = [str(w).upper() for w in raw]
    elif isinstance(raw, str):
        words = [w.upper() for w in raw.replace("+", " ").split()]
    else:
        words = []
    words += [str(w).upper() for w in node.get("state_flags") or []]
    base = words[0] if words else "UNKNOWN"
    # 22.05 prints a drained idle node as state "idle" + flag DRAIN; some versions print
    # "drained"/"draining" as the base state: normalise to the flag.
    if base in ("DRAINED", "DRAINING"):
        words.append("DRAIN")
        base = "IDLE" if base == "DRAINED" else "MIXED"
    return base, frozenset(words[1:])


def parse_node_record(node: Mapping[str, Any], what: str = "Slurm node") -> SlurmNode:
    """One element of a ``nodes`` list (sinfo 21.08/22.05, scontrol/slurmrestd newer)."""
    try:
        name = str(node["name"])
        base, flags = _states(node)
        return SlurmNode(
            name=name,
            cpus=int_or(node.get("cpus"), 0) or 0,
            memory_mb=int_or(node.get("real_memory"), 0) or 0,
            gpus=gres_gpus(str(node.get("gres") or "")),
            state=base,
            flags=flags,
            alloc_cpus=int_or(node.get("alloc_cpus"), 0) or 0,
            partitions=tuple(str(p) for p in node.get("partitions") or ()),
            reason=_reason(node.get("reason")),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise RMSParseError(what, json.dumps(node)[:2000], f"bad node record: {exc!r}") from None


def _reason(value: Any) -> str:
    if isinstance(value, Mapping):
        return str(value.get("description") or "")
    return str(value or "")


def parse_nodes(text: str) -> list[SlurmNode]:
    """Nodes from ``sinfo --json`` (old shape, or grouped new shape) or ``scontrol show node
    --json`` / slurmrestd ``/nodes``."""
    doc = load_json(text, "sinfo/scontrol nodes JSON")
    if isinstance(doc.get("nodes"), list):
        return [parse_node_record(n) for n in doc["nodes"]]
    if isinstance(doc.get("sinfo"), list):
        return _nodes_from_sinfo_groups(doc["sinfo"], text)
    raise RMSParseError("Slurm nodes JSON", text, "neither a 'nodes' nor a 'sinfo' list")


def _nodes_from_sinfo_groups(groups: list[Any], text: str) -> list[SlurmNode]:
    """Per-node records from the grouped ``sinfo --json`` of Slurm 23.02+.

    A group shares one state and reports per-node CPU and memory as min/max: the minimum is
    taken. A node listed in several partitions appears once, with all its partitions.
    """
    out: dict[str, SlurmNode] = {}
    try:
        for g in groups:
            base, flags = _states(g.get("node") or {})
            names = list((g.get("nodes") or {}).get("nodes") or [])
            cpus = int_or((g.get("cpus") or {}).get("minimum"), 0) or 0
            mem = int_or((g.get("memory") or {}).get("minimum"), 0) or 0
            gpus = gres_gpus(str((g.get("gres") or {}).get("total") or ""))
            part = (g.get("partition") or {}).get("name")
            for nm in names:
                for name in expand_hostlist(str(nm)):
                    prev = out.get(name)
                    parts = (prev.partitions if prev else ()) + ((str(part),) if part else ())
                    out[name] = SlurmNode(
                        name, cpus, mem, gpus, base, flags, 0, parts, _reason(g.get("reason"))
                    )
    except (AttributeError, TypeError, ValueError) as exc:
        raise RMSParseError("sinfo --json groups", text, f"bad group: {exc!r}") from None
    return list(out.values())


UNAVAILABLE_FLAGS = frozenset(
    {"DRAIN", "DRAINED", "DRAINING", "FAIL", "FAILING", "MAINTENANCE", "RESERVED",
     "NOT_RESPONDING", "INVALID_REG", "REBOOT_REQUESTED", "REBOOT_ISSUED"}
)  # fmt: skip
UNAVAILABLE_STATES = frozenset({"DOWN", "FAIL", "FUTURE", "INVAL", "UNKNOWN", "ERROR"})


def power_state(node: SlurmNode) -> PowerState:
    """The model power state of a Slurm node (see the module docstring)."""
    f = node.flags
    # A queued POWER_UP shows next to POWERED_DOWN ("IDLE+POWER_UP+POWERED_DOWN"): it wins.
    if "POWERING_UP" in f or "POWER_UP" in f:
        return PowerState.BOOTING
    if "POWERED_DOWN" in f:
        return PowerState.OFF
    if "POWERING_DOWN" in f or "POWER_DOWN" in f:
        return PowerState.SHUTTING_DOWN
    if node.state in ("DOWN", "FAIL") or "FAIL" in f:
        return PowerState.FAILED
    return PowerState.ON


def available(node: SlurmNode) -> bool:
    """False when an admin or a fault keeps new work off the node."""
    if node.flags & UNAVAILABLE_FLAGS:
        return False
    if node.state in UNAVAILABLE_STATES:
        # A powered-down node reads DOWN-ish in some versions; powered down is available.
        return "POWERED_DOWN" in node.flags and node.state != "DOWN"
    return True
