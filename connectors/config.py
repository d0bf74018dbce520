"""Connector configuration and the :func:`build_connector` factory.

The ``[connector]`` table of a TOML file (the daemon's config, or a small file for
``wattsched rms``)::

    [connector]
    kind = "slurm"                  # slurm | sge | pbs | simulated
    partitions = ["batch"]          # partitions/queues wattsched manages (empty: all)
    default_walltime_s = 86400      # walltime of a job that asks for none
    timeout_s = 30                  # every RMS command
    job_source = "squeue-json"      # Slurm: or "scontrol" (scontrol show job -o, faster)

    [connector.runner]              # where the RMS commands run
    kind = "ssh"                    # local (default) | ssh
    host = "head1"
    port = 22
    user = "wattsched"
    key_file = "/etc/wattsched/id_ed25519"
    known_hosts = "/etc/wattsched/known_hosts"

    [connector.env]                 # the commands' environment (nothing else is passed)
    SLURM_CONF = "/etc/slurm/slurm.conf"

    [connector.node_power]          # NodePowerModel of every node (watts)
    idle_w = 95
    core_w = 3

    [connector.job_power]           # per-unit estimate; "power=NNN" in a job comment wins
    core_w = 10
    gpu_w = 250

:func:`build_connector` takes that table as a plain dict (or a :class:`ConnectorConfig`), so
the daemon's configuration can hand over its own ``[connector]`` table unchanged.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from wattsched.connectors.base import Connector, ConnectorError
from wattsched.connectors.rms_options import JobPowerModel, RMSOptions
from wattsched.connectors.runner import DEFAULT_TIMEOUT_S, CommandRunner, LocalRunner, SSHRunner
from wattsched.scheduler.model import Node, NodePowerModel, Resources


class ConnectorConfigError(ConnectorError):
    """The connector configuration is invalid; names the source and each bad key."""

    def __init__(self, source: str, problems: list[tuple[str, object, str]]) -> None:
        self.source = source
        self.problems = problems
        lines = "; ".join(f"{k}={v!r}: {why}" for k, v, why in problems)
        super().__init__(f"invalid connector config in {source}: {lines}")


class RunnerConfig(BaseModel):
    """Where RMS commands run: this host, or a head node over SSH."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["local", "ssh"] = "local"
    host: str | None = None
    port: int = Field(default=22, ge=1, le=65535)
    user: str | None = None
    key_file: Path | None = None
    known_hosts: Path | None = None
    connect_timeout_s: float = Field(default=10.0, gt=0)

    @model_validator(mode="after")
    def _ssh_needs(self) -> RunnerConfig:
        if self.kind == "ssh":
            needed = ("host", "user", "key_file", "known_hosts")
            missing = [k for k in needed if not getattr(self, k)]
            if missing:
                raise ValueError(f"an ssh runner needs {', '.join(missing)}")
        return self


class JobPowerConfig(BaseModel):
    """Per-unit power estimate of a job (see :class:`JobPowerModel`)."""

    model_config = ConfigDict(extra="forbid")

    core_w: float | None = Field(default=None, ge=0)
    gpu_w: float | None = Field(default=None, ge=0)
    base_w: float = Field(default=0.0, ge=0)


class NodePowerConfig(BaseModel):
    """The power model of every node (see :class:`NodePowerModel`)."""

    model_config = ConfigDict(extra="forbid")

    idle_w: float = Field(default=95.0, ge=0)
    first_core_w: float = Field(default=0.0, ge=0)
    core_w: float = Field(default=3.0, ge=0)
    gpu_w: float = Field(default=0.0, ge=0)
    mic_w: float = Field(default=0.0, ge=0)
    transition_w: float = Field(default=95.0, ge=0)
    off_w: float = Field(default=0.0, ge=0)


class ConnectorConfig(BaseModel):
    """The ``[connector]`` table. Unknown keys are ignored (the daemon keeps its own there)."""

    model_config = ConfigDict(extra="ignore")

    kind: Literal["slurm", "sge", "pbs", "simulated"] = "slurm"
    runner: RunnerConfig = Field(default_factory=RunnerConfig)
    env: dict[str, str] = Field(default_factory=dict)
    timeout_s: float = Field(default=DEFAULT_TIMEOUT_S, gt=0)
    partitions: list[str] = Field(default_factory=list)
    default_walltime_s: int = Field(default=86400, gt=0)
    boot_s: int = Field(default=150, ge=0)
    shutdown_s: int = Field(default=6, ge=0)
    node_power: NodePowerConfig = Field(default_factory=NodePowerConfig)
    job_power: JobPowerConfig = Field(default_factory=JobPowerConfig)
    gate_marker: str = "wattsched:gate"
    """Slurm: the AdminComment job_submit.lua puts on the jobs it holds for wattsched."""
    track_memory: bool | None = None
    """Slurm: count job memory (None: when SelectTypeParameters allocates memory)."""
    job_source: Literal["squeue-json", "scontrol"] = "squeue-json"
    """Slurm: read jobs from ``squeue --json`` or (faster) ``scontrol show job -o``."""
    sge_queue: str = "all.q"
    """Grid Engine: the cluster queue a started job is bound to (``qalter -q queue@host``)."""
    simulated_nodes: int = Field(default=4, ge=1)
    """simulated (``wattsched rms`` only): an empty cluster of this many identical nodes."""
    simulated_cores: int = Field(default=4, ge=1)
    simulated_mem_mb: int = Field(default=16000, ge=0)

    def options(self) -> RMSOptions:
        """The settings shared by the real-RMS connectors."""
        return RMSOptions(
            partitions=tuple(self.partitions),
            default_walltime_s=self.default_walltime_s,
            node_power=NodePowerModel(**self.node_power.model_dump()),
            job_power=JobPowerModel(**self.job_power.model_dump()),
            boot_s=self.boot_s,
            shutdown_s=self.shutdown_s,
        )


def parse_connector_config(
    table: Mapping[str, Any] | ConnectorConfig, source: str = "<dict>"
) -> ConnectorConfig:
    """Validate a ``[connector]`` table; :class:`ConnectorConfigError` names every bad key."""
    if isinstance(table, ConnectorConfig):
        return table
    try:
        return ConnectorConfig.model_validate(dict(table))
    except ValidationError as exc:
        problems: list[tuple[str, object, str]] = [
            (".".join(str(x) for x in e["loc"]) or "<root>", e.get("input"), e["msg"])
            for e in exc.errors()
        ]
        raise ConnectorConfigError(source, problems) from None


def load_connector_config(path: str | Path) -> ConnectorConfig:
    """The ``[connector]`` table of a TOML file (relative key paths resolved from its folder)."""
    p = Path(path)
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConnectorConfigError(str(p), [("<file>", str(p), str(exc))]) from None
    except tomllib.TOMLDecodeError as exc:
        raise ConnectorConfigError(str(p), [("<file>", str(p), f"not TOML: {exc}")]) from None
    table = data.get("connector")
    if not isinstance(table, dict):
        raise ConnectorConfigError(str(p), [("connector", table, "missing [connector] table")])
    runner = table.get("runner")
    if isinstance(runner, dict):
        for key in ("key_file", "known_hosts"):
            v = runner.get(key)
            if isinstance(v, str) and v and not Path(v).is_absolute():
                runner[key] = str(p.resolve().parent / v)
    return parse_connector_config(table, str(p))


def build_runner(cfg: ConnectorConfig) -> CommandRunner:
    """The command runner the config names."""
    r = cfg.runner
    if r.kind == "ssh":
        if not (r.host and r.user and r.key_file and r.known_hosts):  # the model checks too
            raise ConnectorConfigError("runner", [("runner", r.model_dump(), "ssh incomplete")])
        return SSHRunner(
            r.host,
            user=r.user,
            port=r.port,
            key_file=r.key_file,
            known_hosts=r.known_hosts,
            env=cfg.env,
            timeout=cfg.timeout_s,
            connect_timeout=r.connect_timeout_s,
        )
    return LocalRunner(cfg.env, timeout=cfg.timeout_s)


def build_connector(
    table: Mapping[str, Any] | ConnectorConfig, *, runner: CommandRunner | None = None
) -> Connector:
    """The connector a ``[connector]`` table describes (``runner`` overrides the config's)."""
    cfg = parse_connector_config(table)
    if cfg.kind == "simulated":
        from wattsched.connectors.simulated import SimulatedCluster

        cap = Resources(cores=cfg.simulated_cores, mem_mb=cfg.simulated_mem_mb)
        power = NodePowerModel(**cfg.node_power.model_dump())
        nodes = [Node(f"n{i}", cap, power=power) for i in range(1, cfg.simulated_nodes + 1)]
        return SimulatedCluster(nodes, [], start_time=0)
    run = runner or build_runner(cfg)
    if cfg.kind == "slurm":
        from wattsched.connectors.slurm import SlurmConnector

        return SlurmConnector(
            run,
            cfg.options(),
            gate_marker=cfg.gate_marker,
            track_memory=cfg.track_memory,
            job_source=cfg.job_source,
        )
    if cfg.kind == "pbs":
        from wattsched.connectors.pbs import PBSConnector

        return PBSConnector(run, cfg.options())
    from wattsched.connectors.sge import SGEConnector

    return SGEConnector(run, cfg.options(), queue=cfg.sge_queue)
