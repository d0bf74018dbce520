"""Build the node power policy and driver a configuration names, checking everything at start
(a node with no BMC address, an unreadable password file, a HGFS parameter file of the wrong
shape) with a message that names the key, node or file and the value."""

from __future__ import annotations

import json
import tomllib
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Protocol

from wattsched.connectors.base import Connector
from wattsched.connectors.runner import SSHRunner
from wattsched.powerctl.drivers.base import PowerDriver, PowerDriverConfigError
from wattsched.powerctl.drivers.bmc import BMCTable, read_password
from wattsched.powerctl.hgfs import HGFSParams, HGFSPolicy
from wattsched.powerctl.policy import PowerPolicy, PowerPolicyError
from wattsched.powerctl.registry import make_power_policy


class _BMC(Protocol):
    template: str | None
    port: int
    user: str
    table: dict[str, str]
    users: dict[str, str]
    password_file: Path | None


class _SSH(Protocol):
    connections: int
    host: str
    port: int
    user: str
    key_file: Path
    known_hosts: Path


class PowerConfig(Protocol):
    """What the builder reads of ``[power]`` (:class:`wattsched.daemon.config.PowerSettings`)."""

    policy: str
    idle_s: int
    hgfs_params_file: Path | None
    driver: str
    command_timeout_s: float
    bmc: Any
    ssh: Any


def load_hgfs_params(path: Path) -> HGFSParams:
    """HGFS parameters from a JSON or TOML file of :class:`HGFSParams` fields (the tuner's
    output: a ``params`` table or the fields at the top)."""
    try:
        text = path.read_text(encoding="utf-8")
        data = tomllib.loads(text) if path.suffix == ".toml" else json.loads(text)
    except OSError as exc:
        raise PowerDriverConfigError(f"[power] hgfs_params_file {str(path)!r}: {exc}") from None
    except (ValueError, tomllib.TOMLDecodeError) as exc:
        raise PowerDriverConfigError(
            f"[power] hgfs_params_file {str(path)!r}: not valid {path.suffix[1:] or 'JSON'}: {exc}"
        ) from None
    if isinstance(data, dict) and isinstance(data.get("params"), dict):
        data = data["params"]
    if not isinstance(data, dict):
        raise PowerDriverConfigError(
            f"[power] hgfs_params_file {str(path)!r}: expected a table of HGFS parameters"
        )
    fields = set(HGFSParams.__dataclass_fields__)
    unknown = sorted(set(data) - fields)
    if unknown:
        raise PowerDriverConfigError(
            f"[power] hgfs_params_file {str(path)!r}: unknown key(s) {', '.join(unknown)}"
            f" (expected some of {', '.join(sorted(fields))})"
        )
    for key in ("centers", "weights"):
        if key in data:
            data[key] = tuple(data[key])
    try:
        return HGFSParams(**data)
    except (PowerPolicyError, TypeError) as exc:
        raise PowerDriverConfigError(f"[power] hgfs_params_file {str(path)!r}: {exc}") from None


def build_policy(cfg: PowerConfig) -> PowerPolicy | None:
    """The policy of the ``[power]`` table (HGFS with its parameter file when given)."""
    if cfg.policy == "hgfs" and cfg.hgfs_params_file is not None:
        return HGFSPolicy(load_hgfs_params(cfg.hgfs_params_file))
    return make_power_policy(cfg.policy, cfg.idle_s)


def bmc_table(bmc: _BMC) -> BMCTable:
    """The BMC addressing of ``[power.bmc]``."""
    return BMCTable(bmc.template, bmc.port, bmc.user, dict(bmc.table), dict(bmc.users))


def build_driver(cfg: PowerConfig, connector: Connector, nodes: Iterable[str] = ()) -> PowerDriver:
    """The driver of the ``[power]`` table; every node of ``nodes`` must have a BMC."""
    from wattsched.powerctl.drivers.rms import RMSPowerDriver

    if cfg.driver == "rms":
        name = "simulated" if getattr(connector, "name", "") == "simulated" else "rms"
        return RMSPowerDriver(connector, name)
    table = bmc_table(cfg.bmc)
    for node in nodes:
        table.address(node)  # raises, naming the node, when it has none
    password = read_password(cfg.bmc.password_file)
    if cfg.driver == "ipmi-native":
        from wattsched.powerctl.drivers.native import NativeIPMIDriver

        return NativeIPMIDriver(table, password)
    from wattsched.powerctl.drivers.ipmitool import IpmitoolDriver

    if cfg.driver == "ipmi-local":
        return IpmitoolDriver(table, password, timeout_s=cfg.command_timeout_s)
    if cfg.driver == "ipmi-ssh":
        ssh: _SSH = cfg.ssh
        runners = [
            SSHRunner(
                ssh.host,
                user=ssh.user,
                port=ssh.port,
                key_file=ssh.key_file,
                known_hosts=ssh.known_hosts,
                timeout=cfg.command_timeout_s,
            )
            for _ in range(ssh.connections)
        ]
        return IpmitoolDriver(table, password, ssh=runners, timeout_s=cfg.command_timeout_s)
    raise PowerDriverConfigError(f"[power] driver {cfg.driver!r}: unknown")
