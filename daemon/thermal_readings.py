"""Node outlet temperatures in the daemon, and the thermal guard around its dispatcher.

With a ``[thermal]`` table the daemon keeps each node's outlet temperature: read from a source
the administrator names, the model as the fallback.

* A **readings file** (``readings_file``) or **command** (``readings_command``, an argument
  list run without a shell, e.g. a script around ``ipmitool sdr type Temperature`` on each BMC)
  gives lines ``NODE CELSIUS``; blank lines and ``#`` comments are ignored.
* The **model** (``scheduler/thermal``: RC + recirculation, the thermal file's parameters)
  advances every node's temperature from cycle to cycle with the node's power, estimated from
  the snapshot. A reading replaces the model's figure for its node; a node without a reading,
  or every node when the source fails (the cycle logs why), keeps the model's.

The guard (:class:`~wattsched.scheduler.thermal.guard.ThermalGuard`) then sees these
temperatures: a node over its threshold, or that a start would take over it, gets no job.
"""

from __future__ import annotations

import logging
import math
import subprocess
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from wattsched.scheduler.dispatcher import Dispatcher
from wattsched.scheduler.model import Plan, Snapshot
from wattsched.scheduler.thermal.guard import ThermalGuard, node_powers
from wattsched.scheduler.thermal.model import FloatArray, ThermalParams
from wattsched.scheduler.thermal.tracker import ThermalTracker

log = logging.getLogger(__name__)


class ReadingsError(ValueError):
    """A readings source that could not be read or parsed; names the source, line and value."""


def parse_readings(text: str, source: str) -> dict[str, float]:
    """``NODE CELSIUS`` lines as a dict; :class:`ReadingsError` naming the line and value."""
    out: dict[str, float] = {}
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.split()
        if len(parts) != 2:
            raise ReadingsError(f"{source}: line {lineno}: want 'NODE CELSIUS', got {raw!r}")
        try:
            value = float(parts[1])
        except ValueError:
            value = math.nan
        if not math.isfinite(value) or not -50.0 <= value <= 200.0:
            raise ReadingsError(
                f"{source}: line {lineno}: celsius {parts[1]!r} of node {parts[0]!r} "
                "is not a temperature between -50 and 200"
            )
        out[parts[0]] = value
    return out


class NodeTemperatures:
    """The outlet temperature of each node of ``params``: readings over the model."""

    def __init__(
        self,
        params: ThermalParams,
        *,
        readings_file: Path | None = None,
        readings_command: Sequence[str] = (),
        timeout_s: float = 10.0,
    ) -> None:
        self.params = params
        self.readings_file = readings_file
        self.readings_command = list(readings_command)
        self.timeout_s = timeout_s
        self.tracker: ThermalTracker | None = None
        self.source: dict[str, str] = {}
        """Per node: ``reading`` or ``model`` (at the last cycle)."""
        self.read_errors = 0

    def _read(self) -> dict[str, float]:
        if self.readings_command:
            name = " ".join(self.readings_command)
            try:
                proc = subprocess.run(
                    self.readings_command, capture_output=True, text=True,
                    timeout=self.timeout_s, check=False,
                )  # fmt: skip
            except (OSError, subprocess.TimeoutExpired) as exc:
                raise ReadingsError(f"readings command {name!r}: {exc}") from None
            if proc.returncode != 0:
                raise ReadingsError(
                    f"readings command {name!r} exited {proc.returncode}: "
                    f"{proc.stderr.strip()[:200]}"
                )
            return parse_readings(proc.stdout, f"readings command {name!r}")
        if self.readings_file is not None:
            try:
                text = self.readings_file.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise ReadingsError(f"readings file {self.readings_file}: {exc}") from None
            return parse_readings(text, f"readings file {self.readings_file}")
        return {}

    def power_w(self, snap: Snapshot) -> FloatArray:
        """Each node's power now (``params`` order), from the snapshot's power models."""
        return node_powers(self.params, snap)[0]

    def observe(self, snap: Snapshot) -> None:
        """Advance the model to the snapshot's time, then lay the readings over it."""
        power = self.power_w(snap)
        if self.tracker is None:
            self.tracker = ThermalTracker(self.params, power, t0=snap.time)
        else:
            self.tracker.advance(max(snap.time, self.tracker.time), power)
        try:
            readings = self._read()
        except ReadingsError as exc:
            self.read_errors += 1
            log.warning("node temperatures from the model only: %s", exc)
            readings = {}
        pos = self.params.index()
        self.source = {}
        for name, k in pos.items():
            if name in readings:
                self.tracker.t_out[k] = readings[name]
                self.source[name] = "reading"
            else:
                self.source[name] = "model"

    def temperatures(self) -> FloatArray:
        """The outlet temperatures (``params`` order) of the last :meth:`observe`."""
        if self.tracker is None:
            return np.full(self.params.n, self.params.t_sup)
        return self.tracker.t_out.copy()

    def by_node(self) -> dict[str, tuple[float, str]]:
        """Node name -> (outlet celsius, ``reading`` or ``model``), at the last cycle."""
        if self.tracker is None:
            return {}
        t = self.tracker.t_out
        return {name: (float(t[k]), self.source.get(name, "model")) for name, k in
                self.params.index().items()}  # fmt: skip


class DaemonThermalGuard(ThermalGuard):
    """The thermal guard fed by :class:`NodeTemperatures`, observed at every plan."""

    def __init__(self, inner: Dispatcher, temps: NodeTemperatures) -> None:
        super().__init__(inner, temps.params, temps.temperatures)
        self.temps = temps

    def plan(self, snap: Snapshot) -> Plan:
        self.temps.observe(snap)
        return super().plan(snap)
