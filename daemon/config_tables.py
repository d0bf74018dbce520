"""The ``[power]``, ``[cooling]`` and ``[thermal]`` tables of the daemon's configuration
(read as part of :class:`~wattsched.daemon.config.Settings`)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class BMCSettings(BaseModel):
    """The ``[power.bmc]`` table: where each node's BMC is and how to log in."""

    model_config = ConfigDict(extra="forbid")

    template: str | None = "{node}-bmc"
    """BMC host (or ``host:port``) of a node not in ``table``; ``{node}`` is its name."""
    port: int = Field(default=623, ge=1, le=65535)
    user: str = "admin"
    table: dict[str, str] = Field(default_factory=dict)
    """``node = "host"`` or ``"host:port"``."""
    users: dict[str, str] = Field(default_factory=dict)
    """``node = "user"`` where it differs from ``user``."""
    password_file: Path | None = None
    """First line: the password (mode 600); else ``$WATTSCHED_IPMI_PASSWORD``."""


class PowerSSHSettings(BaseModel):
    """The ``[power.ssh]`` table: the management host ``ipmi-ssh`` runs ipmitool on."""

    model_config = ConfigDict(extra="forbid")

    host: str
    port: int = Field(default=22, ge=1, le=65535)
    user: str
    key_file: Path
    known_hosts: Path
    """Required: an unknown or changed host key is refused (no trust on first use)."""
    connections: int = Field(default=1, ge=1, le=16)
    """SSH connections kept open (each reused; at most 8 commands at once on each)."""


class PowerSettings(BaseModel):
    """The ``[power]`` table: the node power policy the cycle runs after the dispatcher, and
    the driver that switches nodes."""

    model_config = ConfigDict(extra="forbid")

    policy: Literal["none", "idle", "hgfs"] = "none"
    """``none``: nodes stay as they are; ``idle``: off after ``idle_s`` idle; ``hgfs``."""
    idle_s: int = Field(default=1800, ge=0, le=7 * 86400)
    """Idle seconds before a node is switched off (``idle``)."""
    hgfs_params_file: Path | None = None
    """HGFS parameters (JSON or TOML of :class:`HGFSParams` fields, as the tuner writes)."""
    driver: Literal["rms", "ipmi-ssh", "ipmi-local", "ipmi-native"] = "rms"
    """``rms``: the RMS's own power commands (Slurm POWER_DOWN/UP; the simulated cluster);
    ``ipmi-*``: the node's BMC."""
    boot_timeout_s: int = Field(default=600, gt=0, le=86400)
    """A node not back this long after power on is ``failed``."""
    shutdown_timeout_s: int = Field(default=300, gt=0, le=86400)
    command_timeout_s: float = Field(default=20.0, gt=0, le=600)
    attempts: int = Field(default=3, ge=1, le=10)
    """Tries of a command that failed for a temporary reason (exponential back-off)."""
    retry_backoff_s: float = Field(default=1.0, ge=0, le=60)
    max_parallel: int = Field(default=16, ge=1, le=256)
    backoff_s: int = Field(default=3600, ge=0, le=7 * 86400)
    """A node whose power command failed is left alone this long (safety rule)."""
    bmc: BMCSettings = Field(default_factory=BMCSettings)
    ssh: PowerSSHSettings | None = None

    @model_validator(mode="after")
    def _driver_needs(self) -> PowerSettings:
        if self.driver == "ipmi-ssh" and self.ssh is None:
            raise ValueError(
                "driver ipmi-ssh needs a [power.ssh] table (host, user, key_file, known_hosts)"
            )
        return self


class CoolingSettings(BaseModel):
    """The ``[cooling]`` table: PUE, cooling power and profit rate in ``/status`` and the
    metrics (``kind = "none"``: not reported)."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["none", "air", "hybrid"] = "none"
    season: Literal["winter", "summer"] = "summer"
    """The built-in daily temperature profile (UTC), unless ``temperature_file``."""
    temperature_file: Path | None = None
    """``time,celsius`` CSV (a forecast)."""
    prices_file: Path | None = None
    """Prices TOML (core-hour, GPU-hour, energy per kWh or a tariff file)."""


class ThermalSettings(BaseModel):
    """The ``[thermal]`` table: node outlet temperatures (readings over the RC model) and the
    thermal guard around the dispatcher (``docs/thermal.md``)."""

    model_config = ConfigDict(extra="forbid")

    file: Path
    """The thermal parameters (TOML: ``t_sup``, ``t_thresh``, ``r``, ``c``, optional ``d``)."""
    readings_file: Path | None = None
    """``NODE CELSIUS`` lines, rewritten by the administrator's own collector."""
    readings_command: list[str] = Field(default_factory=list)
    """An argument list (no shell) that prints ``NODE CELSIUS`` lines."""
    readings_timeout_s: float = Field(default=10.0, gt=0, le=300)

    @model_validator(mode="after")
    def _one_source(self) -> ThermalSettings:
        if self.readings_file is not None and self.readings_command:
            raise ValueError("give readings_file or readings_command, not both")
        return self
