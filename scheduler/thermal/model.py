"""The spatio-temporal thermal model of Pierson et al. (pure numpy, no I/O).

Per node ``i`` (vectorised over nodes, all arrays of shape ``(N,)``):

- RC step (paper eq. 1): ``T_out(t+dt) = P R + T_in + (T_out - P R - T_in) exp(-dt / (R C))``,
  with ``P``, ``T_in`` constant over ``[t, t+dt)``; exact for constant power, so many small
  steps equal one big step.
- Recirculation (eq. 2): ``T_in = T_sup + D @ P``, ``D`` an ``N x N`` matrix in C per W.
- Energy (eq. 23): compute energy x ``(1 + 1/CoP(T_sup))``; cooling energy = compute / CoP.
  ``CoP(T) = 0.0068 T^2 + 0.0008 T + 0.458`` (the water-chilled CRAC curve of Moore et al.,
  "Making scheduling cool", USENIX 2005, the paper's reference [19]: the paper only says the
  curve is quadratic).

Units: R in C/W (the paper's table says W/C, but ``P R`` is a temperature), C in J/C, power in
W, time in s, temperatures in C.

:func:`default_recirculation` is the documented default ``D`` for two rows of racks;
:func:`params_from_toml` reads a thermal TOML document (the file itself is read at the edge,
:mod:`wattsched.connectors.traces.thermal_file`).
"""

from __future__ import annotations

import math
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

FloatArray = NDArray[np.float64]

OVERHEAT_MODES = ("suspend", "throttle", "none")
"""``on_overheat`` values (:class:`ThermalParams`)."""

COP_COEFFS = (0.0068, 0.0008, 0.458)
"""``a, b, c`` of ``CoP(T) = a T^2 + b T + c`` (Moore et al. 2005, HP Labs' chilled-water CRAC)."""


class ThermalModelError(ValueError):
    """Invalid thermal parameters; names the source (file), the field and the value."""

    def __init__(self, source: str, field: str, value: object, reason: str) -> None:
        self.source = source
        self.field = field
        self.value = value
        self.reason = reason
        super().__init__(f"{source}: field {field!r} = {value!r}: {reason}")


def rc_step(
    t_out: ArrayLike, power: ArrayLike, t_in: ArrayLike, r: ArrayLike, c: ArrayLike, dt: float
) -> FloatArray:
    """Outlet temperatures after ``dt`` seconds at constant ``power`` and inlet ``t_in`` (eq. 1)."""
    pr_in = np.asarray(power, dtype=float) * np.asarray(r, dtype=float) + np.asarray(t_in, float)
    f = np.exp(-dt / (np.asarray(r, dtype=float) * np.asarray(c, dtype=float)))
    return pr_in + (np.asarray(t_out, dtype=float) - pr_in) * f


def inlet(t_sup: float, d: FloatArray, power: ArrayLike) -> FloatArray:
    """Inlet temperatures ``T_sup + D @ P`` (eq. 2)."""
    return t_sup + d @ np.asarray(power, dtype=float)


def cop(t_sup: float) -> float:
    """Coefficient of performance of the cooling at supply temperature ``t_sup`` (C)."""
    a, b, c = COP_COEFFS
    return a * t_sup * t_sup + b * t_sup + c


def cooling_energy(compute_j: float, t_sup: float) -> float:
    """Energy the cooling spends to remove ``compute_j`` joules of heat."""
    return compute_j / cop(t_sup)


def total_energy(compute_j: float, t_sup: float) -> float:
    """Compute plus cooling energy (eq. 23)."""
    return compute_j * (1.0 + 1.0 / cop(t_sup))


def default_recirculation(
    n: int,
    rows: int = 2,
    self_c_per_w: float = 0.004,
    decay_slots: float = 1.0,
    cross_row: float = 0.5,
) -> FloatArray:
    """The default air-recirculation matrix for ``n`` nodes in ``rows`` rows of racks.

    Nodes fill the rows in order (``ceil(n / rows)`` per row, node ``k`` at position
    ``k mod per_row`` of row ``k // per_row``). Hot air from node ``j`` reaches node ``i``'s
    inlet with ``D[i, j] = self_c_per_w * exp(-|pos_i - pos_j| / decay_slots)``, times
    ``cross_row`` when they stand in different rows (facing rows share the cold aisle, so part of
    the hot air spilling over the top of one row reaches the other). With the defaults a node
    drawing 160 W warms its own inlet by 0.64 C, its neighbours' by 0.24 C, the facing node's
    by 0.32 C: a few degrees in all when a small machine is fully loaded, the order of the
    recirculation Tang et al. measured. Replace it by a measured matrix (a file) where one exists.
    """
    if n < 1:
        raise ThermalModelError("default_recirculation", "n", n, "must be >= 1")
    if rows < 1:
        raise ThermalModelError("default_recirculation", "rows", rows, "must be >= 1")
    per_row = max(1, math.ceil(n / rows))
    k = np.arange(n)
    row, pos = k // per_row, k % per_row
    dist = np.abs(pos[:, None] - pos[None, :]).astype(float)
    d = self_c_per_w * np.exp(-dist / decay_slots)
    return np.where(row[:, None] == row[None, :], d, d * cross_row)


@dataclass(frozen=True, slots=True, eq=False)
class ThermalParams:
    """Per-node thermal parameters of a machine (node order = ``names``)."""

    names: tuple[str, ...]
    r: FloatArray
    """Thermal resistance per node, C/W."""
    c: FloatArray
    """Thermal capacitance per node, J/C."""
    d: FloatArray
    """Recirculation matrix, C/W, shape (N, N)."""
    t_sup: float = 20.0
    t_thresh: float = 100.0
    source: str = "<thermal params>"
    on_overheat: str = "suspend"
    """What the simulated cluster does to a node whose outlet reaches ``t_thresh``:
    ``suspend`` (HPC: its jobs pause), ``throttle`` (Cloud: power and speed x
    ``throttle_factor``) or ``none`` (temperatures recorded only)."""
    hysteresis_c: float = 2.0
    """A suspended or throttled node resumes at ``t_thresh - hysteresis_c``."""
    throttle_factor: float = 0.5
    """Speed and dynamic power of a throttled node's jobs (0 < f < 1)."""

    def __post_init__(self) -> None:
        n = len(self.names)
        src = self.source
        if n < 1:
            raise ThermalModelError(src, "nodes", list(self.names), "needs at least one node")
        for name in ("r", "c"):
            arr = getattr(self, name)
            if arr.shape != (n,):
                raise ThermalModelError(src, name, arr.tolist(), f"must have {n} values")
            bad = [(nm, v) for nm, v in zip(self.names, arr.tolist(), strict=True) if not v > 0]
            if bad or not np.all(np.isfinite(arr)):
                nm, v = bad[0] if bad else (self.names[0], arr.tolist())
                raise ThermalModelError(src, f"{name} ({nm})", v, "must be a finite number > 0")
        if self.d.shape != (n, n):
            raise ThermalModelError(
                src,
                "d",
                f"shape {self.d.shape}",
                f"must be {n} x {n} (one row and column per node)",
            )
        if not np.all(np.isfinite(self.d)) or np.any(self.d < 0):
            raise ThermalModelError(src, "d", self.d.tolist(), "entries must be finite and >= 0")
        if not math.isfinite(self.t_sup):
            raise ThermalModelError(src, "t_sup", self.t_sup, "must be finite")
        if not (math.isfinite(self.t_thresh) and self.t_thresh > self.t_sup):
            raise ThermalModelError(
                src,
                "t_thresh",
                self.t_thresh,
                f"must be above the supply temperature t_sup = {self.t_sup}",
            )

        if self.on_overheat not in OVERHEAT_MODES:
            raise ThermalModelError(
                src, "on_overheat", self.on_overheat, f"must be one of {', '.join(OVERHEAT_MODES)}"
            )
        if not (math.isfinite(self.hysteresis_c) and self.hysteresis_c > 0):
            raise ThermalModelError(src, "hysteresis_c", self.hysteresis_c, "must be > 0")
        if not (math.isfinite(self.throttle_factor) and 0 < self.throttle_factor < 1):
            raise ThermalModelError(
                src, "throttle_factor", self.throttle_factor, "must be between 0 and 1 (excluded)"
            )

    @property
    def n(self) -> int:
        """Number of nodes."""
        return len(self.names)

    def index(self) -> dict[str, int]:
        """Node name -> position."""
        return {nm: i for i, nm in enumerate(self.names)}

    def inlet(self, power: ArrayLike) -> FloatArray:
        """Inlet temperatures at these node powers."""
        return inlet(self.t_sup, self.d, power)

    def step(self, t_out: ArrayLike, power: ArrayLike, dt: float) -> FloatArray:
        """Outlet temperatures after ``dt`` s at constant ``power`` (eq. 3)."""
        return rc_step(t_out, power, self.inlet(power), self.r, self.c, dt)

    def decay(self, dt: float) -> FloatArray:
        """``F = exp(-dt / (R C))`` per node."""
        return np.exp(-dt / (self.r * self.c))

    def steady(self, power: ArrayLike) -> FloatArray:
        """Outlet temperatures after an infinite time at constant ``power``."""
        p = np.asarray(power, dtype=float)
        return p * self.r + self.inlet(p)

    @classmethod
    def uniform(
        cls,
        names: Sequence[str],
        r: float,
        c: float,
        t_sup: float = 20.0,
        t_thresh: float = 100.0,
        d: FloatArray | None = None,
        source: str = "<thermal params>",
    ) -> ThermalParams:
        """The same R and C on every node; ``d`` defaults to :func:`default_recirculation`."""
        n = len(names)
        return cls(
            tuple(names),
            np.full(n, float(r)),
            np.full(n, float(c)),
            default_recirculation(n) if d is None else np.asarray(d, dtype=float),
            float(t_sup),
            float(t_thresh),
            source,
        )


_TOP_KEYS = {
    "t_sup",
    "t_thresh",
    "r",
    "c",
    "nodes",
    "d",
    "rows",
    "node",
    "on_overheat",
    "hysteresis_c",
    "throttle_factor",
}


def params_from_toml(text: str, source: str, names: Sequence[str] | None = None) -> ThermalParams:
    """Thermal parameters from a TOML document (``source``: the file name, for messages).

    Keys: ``t_sup``, ``t_thresh`` (C); ``r`` (C/W) and ``c`` (J/C) for every node; ``nodes`` (the
    node order, else ``names``); optional ``d`` (N x N, C/W; default: two rows of racks,
    ``rows`` to change the number of rows); ``[node.NAME]`` tables with ``r`` / ``c`` per node;
    for the simulated cluster ``on_overheat`` (``suspend``, ``throttle``, ``none``),
    ``hysteresis_c`` and ``throttle_factor`` (:class:`ThermalParams`).
    """
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ThermalModelError(source, "<file>", "", f"not valid TOML: {exc}") from None
    doc = doc.get("thermal", doc)
    for key in doc:
        if key not in _TOP_KEYS:
            raise ThermalModelError(
                source, key, doc[key], f"unknown key (known: {', '.join(sorted(_TOP_KEYS))})"
            )
    node_names = doc.get("nodes", names)
    if node_names is None:
        raise ThermalModelError(source, "nodes", None, "name the nodes (a list of node names)")
    if not isinstance(node_names, list | tuple) or not all(isinstance(x, str) for x in node_names):
        raise ThermalModelError(source, "nodes", node_names, "must be a list of node names")
    n = len(node_names)
    per_node = doc.get("node", {})
    if not isinstance(per_node, Mapping):
        raise ThermalModelError(source, "node", per_node, "must be a table of node tables")
    for nm in per_node:
        if nm not in node_names:
            raise ThermalModelError(source, f"node.{nm}", per_node[nm], "not one of the nodes")
    arrays = {}
    for key in ("r", "c"):
        default = doc.get(key)
        vals = []
        for nm in node_names:
            v = per_node.get(nm, {}).get(key, default)
            field = f"node.{nm}.{key}" if key in per_node.get(nm, {}) else key
            if v is None:
                raise ThermalModelError(source, field, None, f"missing for node {nm}")
            if (
                isinstance(v, bool)
                or not isinstance(v, int | float)
                or not (math.isfinite(v) and v > 0)
            ):
                raise ThermalModelError(source, field, v, "must be a finite number > 0")
            vals.append(float(v))
        arrays[key] = np.array(vals)
    mode = doc.get("on_overheat", "suspend")
    if not isinstance(mode, str):
        raise ThermalModelError(source, "on_overheat", mode, f"must be one of {OVERHEAT_MODES}")
    for key, dflt in (
        ("t_sup", 20.0),
        ("t_thresh", 100.0),
        ("hysteresis_c", 2.0),
        ("throttle_factor", 0.5),
    ):
        v = doc.get(key, dflt)
        if isinstance(v, bool) or not isinstance(v, int | float):
            raise ThermalModelError(source, key, v, "must be a number")
    if "d" in doc:
        try:
            d = np.array(doc["d"], dtype=float)
        except (TypeError, ValueError):
            raise ThermalModelError(source, "d", doc["d"], "must be a matrix of numbers") from None
        if d.shape != (n, n):
            raise ThermalModelError(
                source, "d", f"shape {d.shape}", f"must be {n} x {n} (one row and column per node)"
            )
    else:
        d = default_recirculation(n, rows=int(doc.get("rows", 2)))
    return ThermalParams(
        tuple(node_names),
        arrays["r"],
        arrays["c"],
        d,
        float(doc.get("t_sup", 20.0)),
        float(doc.get("t_thresh", 100.0)),
        source,
        mode,
        float(doc.get("hysteresis_c", 2.0)),
        float(doc.get("throttle_factor", 0.5)),
    )
