"""System descriptions: a small TOML file of node groups, or N identical nodes.

```toml
[defaults]            # optional, applies to every group (a group's own keys win)
boot_s = 150
shutdown_s = 6
[[nodes]]
prefix = "n"          # n001..n300: zero-padded to the width of the count
count = 300           # or: names = "n[1-300]" (ClusterShell node-set syntax)
cores = 32
mem_mb = 131072
gpus = 0
mics = 0
efficiency = 1.0
[nodes.power]         # NodePowerModel fields; defaults.power fields merge under these
idle_w = 95
first_core_w = 0
core_w = 2.99
```

Keys a group may set: :data:`GROUP_KEYS` (plus ``prefix``/``count``/``start``/``names``);
``power`` takes the :class:`NodePowerModel` fields. An unknown key, a value of the wrong type,
duplicate node names or values the model rejects raise :class:`TraceError` naming the table
and key (TOML tables have no useful line number: ``line`` is None).
"""

from __future__ import annotations

import dataclasses
import tomllib
from collections.abc import Mapping
from os import PathLike
from pathlib import Path
from typing import Any

from ClusterShell.NodeSet import NodeSet, NodeSetParseError

from wattsched.connectors.traces.errors import TraceError, read_utf8
from wattsched.scheduler.model import ModelError, Node, NodePowerModel, PowerState, Resources
from wattsched.scheduler.power import BATSIM_NODE_POWER

POWER_KEYS: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(NodePowerModel))
"""Keys of a ``power`` table: the :class:`NodePowerModel` fields (watts)."""

GROUP_KEYS: dict[str, type | tuple[type, ...]] = {
    "cores": int,
    "mem_mb": int,
    "gpus": int,
    "mics": int,
    "efficiency": (int, float),
    "boot_s": int,
    "shutdown_s": int,
    "available": bool,
    "partition": str,
    "state": str,
    "rack": int,
    "power": dict,
}
"""Keys valid both in ``[defaults]`` and in a ``[[nodes]]`` group, with their TOML types."""

NAMING_KEYS: dict[str, type | tuple[type, ...]] = {
    "prefix": str,
    "count": int,
    "start": int,
    "names": str,
}
"""Keys valid only in a ``[[nodes]]`` group: how its nodes are named."""

TOP_KEYS = frozenset({"defaults", "nodes", "name", "description"})
"""Top-level keys; ``name`` and ``description`` are free text for people."""


def _type_ok(value: object, kind: type | tuple[type, ...]) -> bool:
    if isinstance(value, bool) and kind is not bool:
        return False  # TOML true is not a number
    return isinstance(value, kind)


def _check_keys(
    p: Path, where: str, table: Mapping[str, Any], allowed: Mapping[str, type | tuple[type, ...]]
) -> None:
    for key, value in table.items():
        if key not in allowed:
            raise TraceError(
                p,
                None,
                f"{where}.{key}",
                value,
                f"unknown key in [{where}] (known: {', '.join(sorted(allowed))})",
            )
        if not _type_ok(value, allowed[key]):
            raise TraceError(p, None, f"{where}.{key}", value, "wrong type")


def zero_padded_names(prefix: str, count: int, start: int = 1) -> list[str]:
    """``prefix`` + numbers ``start..start+count-1``, zero-padded to the widest (n001..n300)."""
    width = len(str(start + count - 1))
    return [f"{prefix}{i:0{width}d}" for i in range(start, start + count)]


def homogeneous_nodes(
    count: int,
    cores: int,
    mem_mb: int = 0,
    power: NodePowerModel | None = None,
    prefix: str = "n",
) -> list[Node]:
    """``count`` identical nodes (``--nodes N --cores C``), named like a TOML group.

    ``power`` defaults to :data:`~wattsched.scheduler.power.BATSIM_NODE_POWER`.
    """
    if count < 1:
        raise ValueError(f"homogeneous_nodes: count={count}: must be >= 1")
    capacity = Resources(cores=cores, mem_mb=mem_mb)
    model = power if power is not None else BATSIM_NODE_POWER
    return [Node(name=n, capacity=capacity, power=model) for n in zero_padded_names(prefix, count)]


def read_system_toml(path: str | PathLike[str]) -> list[Node]:
    """Read a TOML system description (module docstring) into nodes, in file order."""
    p = Path(path)
    try:
        doc = tomllib.loads(read_utf8(p))
    except tomllib.TOMLDecodeError as e:
        raise TraceError(p, None, "document", p.name, f"not valid TOML: {e}") from None
    _check_keys(p, "system", doc, {k: object for k in TOP_KEYS})
    defaults = doc.get("defaults", {})
    if not isinstance(defaults, dict):
        raise TraceError(p, None, "defaults", defaults, "must be a table")
    _check_keys(p, "defaults", defaults, GROUP_KEYS)
    default_power = defaults.get("power", {})
    _check_keys(p, "defaults.power", default_power, {k: (int, float) for k in POWER_KEYS})
    groups = doc.get("nodes")
    if not isinstance(groups, list) or not groups:
        raise TraceError(p, None, "nodes", groups, "need at least one [[nodes]] group")
    nodes: list[Node] = []
    seen: set[str] = set()
    for i, group in enumerate(groups):
        where = f"nodes[{i}]"
        _check_keys(p, where, group, {**GROUP_KEYS, **NAMING_KEYS})
        power_table = group.get("power", {})
        _check_keys(p, f"{where}.power", power_table, {k: (int, float) for k in POWER_KEYS})
        for node in _group_nodes(p, where, {**defaults, **group}, {**default_power, **power_table}):
            if node.name in seen:
                raise TraceError(p, None, f"{where}.names", node.name, "node name used twice")
            seen.add(node.name)
            nodes.append(node)
    return nodes


def _names(p: Path, where: str, group: Mapping[str, Any]) -> list[str]:
    count = group.get("count")
    if "names" in group:
        try:
            names = list(NodeSet(group["names"]))
        except NodeSetParseError as e:
            raise TraceError(
                p, None, f"{where}.names", group["names"], f"bad node set: {e}"
            ) from None
        if count is not None and count != len(names):
            raise TraceError(
                p,
                None,
                f"{where}.count",
                count,
                f"differs from the {len(names)} names of {group['names']!r}",
            )
        if "prefix" in group or "start" in group:
            raise TraceError(
                p,
                None,
                f"{where}.names",
                group["names"],
                "give either names or prefix/count/start, not both",
            )
        return names
    if count is None or "prefix" not in group:
        raise TraceError(p, None, where, None, "needs names, or prefix and count")
    if count < 1:
        raise TraceError(p, None, f"{where}.count", count, "must be >= 1")
    start = group.get("start", 1)
    if start < 0:
        raise TraceError(p, None, f"{where}.start", start, "must be >= 0")
    return zero_padded_names(group["prefix"], count, start)


def _group_nodes(
    p: Path, where: str, group: Mapping[str, Any], power: Mapping[str, float]
) -> list[Node]:
    names = _names(p, where, group)
    try:
        model = NodePowerModel(**{k: float(v) for k, v in power.items()})
        capacity = Resources(
            cores=group.get("cores", 0),
            mem_mb=group.get("mem_mb", 0),
            gpus=group.get("gpus", 0),
            mics=group.get("mics", 0),
        )
    except ModelError as e:
        raise TraceError(p, None, where, dict(group), str(e)) from None
    if not any(capacity.as_tuple()):
        raise TraceError(p, None, f"{where}.cores", 0, "a node needs some resource")
    state_word = group.get("state", PowerState.ON.value)
    try:
        state = PowerState(state_word)
    except ValueError:
        raise TraceError(
            p, None, f"{where}.state", state_word, f"not one of {[s.value for s in PowerState]}"
        ) from None
    extra = {
        k: group[k]
        for k in ("boot_s", "shutdown_s", "available", "partition", "rack")
        if k in group
    }
    if "efficiency" in group:
        extra["efficiency"] = float(group["efficiency"])
    try:
        return [Node(name=n, capacity=capacity, power=model, state=state, **extra) for n in names]
    except ModelError as e:
        raise TraceError(p, None, where, dict(group), str(e)) from None
