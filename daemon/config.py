"""The daemon's configuration: one TOML file plus ``WATTSCHED_`` environment overrides.

Built by :func:`load_config` (no import-time settings object). Environment variables win
over the file: ``WATTSCHED_MODE=enforce``, ``WATTSCHED_API__BIND=127.0.0.1:9000``,
``WATTSCHED_CONNECTOR__SPEEDUP=120`` (nested keys joined by ``__``). Relative file paths in
the file are taken relative to the file's folder; a relative SQLite path relative to the
current directory (``sqlite:///var/wattsched.db``).

Validation errors name the key and the bad value (:class:`ConfigError`).
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from wattsched.connectors.config import (
    ConnectorConfig,
    ConnectorConfigError,
    parse_connector_config,
)
from wattsched.daemon.config_tables import (  # re-exported: part of the settings' API
    CoolingSettings,
    PowerSettings,
    ThermalSettings,
)
from wattsched.daemon.limits import CycleSeconds, PowerWatts

Mode = Literal["advise", "enforce"]

# Tokens that look like a template someone forgot to fill in: refused at start.
_PLACEHOLDER_TOKENS = frozenset(
    {"changeme", "changethis", "change-me", "secret", "token", "password", "xxx", "todo", "example"}
)


class ConfigError(ValueError):
    """The configuration is invalid; the message names each bad key and its value."""

    def __init__(self, source: str, problems: list[tuple[str, object, str]]) -> None:
        self.source = source
        self.problems = problems
        lines = [f"  {key} = {value!r}: {msg}" for key, value, msg in problems]
        super().__init__(f"invalid configuration in {source}:\n" + "\n".join(lines))


class ApiSettings(BaseModel):
    """The REST API and metrics endpoint."""

    model_config = ConfigDict(extra="forbid")

    bind: str = "127.0.0.1:8080"
    """host:port; loopback by default (put a TLS reverse proxy in front to expose it)."""
    token_file: Path | None = None
    """File holding the bearer token for mutating calls; none: mutations are refused."""

    @field_validator("bind")
    @classmethod
    def _bind(cls, v: str) -> str:
        host, sep, port = v.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError("must be host:port with a port in 1..65535")
        return v

    @property
    def host(self) -> str:
        """The bind host (brackets of an IPv6 literal removed)."""
        return self.bind.rpartition(":")[0].strip("[]")

    @property
    def port(self) -> int:
        """The bind port."""
        return int(self.bind.rpartition(":")[2])


class ConnectorSettings(BaseModel):
    """Which resource manager to drive, and its parameters.

    For ``simulated``: the nodes (``nodes_file`` in Eurora's format, or ``system_file`` in
    TOML), the workload (``trace_file`` in ``trace_format``), the Eurora ``queues_file`` and
    ``power_predictions_file``, how fast the virtual clock runs (``speedup``: virtual seconds
    per wall second) and ``offline`` (every job submitted at the start). Other kinds take
    their own keys (kept in :attr:`params`), read by the connectors' builder.
    """

    model_config = ConfigDict(extra="allow")

    kind: Literal["simulated", "slurm", "sge", "pbs"] = "simulated"
    system_file: Path | None = None
    nodes_file: Path | None = None
    trace_file: Path | None = None
    trace_format: Literal["eurora", "swf"] = "eurora"
    queues_file: Path | None = None
    power_predictions_file: Path | None = None
    speedup: float = Field(default=60.0, gt=0)
    offline: bool = False

    @property
    def params(self) -> dict[str, Any]:
        """Every key of the table (the extra ones included), for the connectors' builder."""
        out = self.model_dump()
        out.update(self.model_extra or {})
        return out

    @model_validator(mode="after")
    def _simulated_needs_files(self) -> ConnectorSettings:
        if self.kind == "simulated":
            if self.system_file is None and self.nodes_file is None:
                raise ValueError("simulated connector needs nodes_file or system_file")
            if self.trace_file is None:
                raise ValueError("simulated connector needs trace_file")
        return self

    @model_validator(mode="after")
    def _rms_keys_valid(self) -> ConnectorSettings:
        """The whole table is checked here, once, when the configuration is read: a key
        neither this model nor the connectors know is refused (a typo would otherwise be
        ignored), and the connectors' own keys are validated by their model."""
        known = set(ConnectorConfig.model_fields) | set(ConnectorSettings.model_fields)
        unknown = sorted(set(self.model_extra or {}) - known)
        if unknown:
            raise ValueError(f"unknown key(s) {', '.join(unknown)} in [connector]")
        if self.kind != "simulated":
            try:
                parse_connector_config(self.params, "[connector]")
            except ConnectorConfigError as exc:  # it names each key and value
                raise ValueError(str(exc)) from None
        return self

    def rms_config(self) -> ConnectorConfig:
        """The connectors' validated model of this table (a real RMS)."""
        return parse_connector_config(self.params, "[connector]")


class Settings(BaseSettings):
    """Everything the daemon needs to run. Safe defaults: advise mode, loopback, SQLite."""

    model_config = SettingsConfigDict(
        env_prefix="WATTSCHED_", env_nested_delimiter="__", extra="forbid"
    )

    mode: Mode = "advise"
    """advise (default, safe): plan and publish only; enforce: start jobs through the RMS."""
    cycle_seconds: CycleSeconds = 30.0
    dispatcher: str = "prb"
    dispatcher_params: dict[str, Any] = Field(default_factory=dict)
    power_cap_w: PowerWatts | None = None
    power_cap_file: Path | None = None
    log_file: Path | None = None
    """Write the log to this file instead of stderr (reopened when logrotate moves it:
    ``deploy/logrotate/wattsched``). Unset: stderr, which systemd sends to the journal."""
    database_url: str = "sqlite:///var/wattsched.db"
    max_start_attempts: int = Field(default=3, ge=1, le=100)
    """How many cycles in a row a failing start of one job is retried before giving up."""
    requeue: Literal["replan", "hold"] = "replan"
    """A job the RMS requeued after we started it: planned again (``replan``) or held for an
    operator (``hold``); see :mod:`wattsched.daemon.requeue`."""
    api: ApiSettings = Field(default_factory=ApiSettings)
    power: PowerSettings = Field(default_factory=PowerSettings)
    connector: ConnectorSettings = Field(default_factory=lambda: ConnectorSettings(kind="slurm"))
    cooling: CoolingSettings = Field(default_factory=CoolingSettings)
    thermal: ThermalSettings | None = None

    @field_validator("dispatcher")
    @classmethod
    def _dispatcher_known(cls, v: str) -> str:
        from wattsched.scheduler import dispatcher as registry

        known = registry.names()
        if v not in known:
            raise ValueError(f"unknown dispatcher; known: {', '.join(known)}")
        return v

    @field_validator("database_url")
    @classmethod
    def _db_url(cls, v: str) -> str:
        from sqlalchemy.engine import make_url
        from sqlalchemy.exc import ArgumentError

        try:
            url = make_url(v)
        except ArgumentError as exc:
            raise ValueError(f"not a database URL: {exc}") from None
        if url.get_backend_name() not in ("sqlite", "postgresql"):
            raise ValueError("only sqlite and postgresql are supported")
        return v

    @model_validator(mode="after")
    def _one_cap(self) -> Settings:
        if self.power_cap_w is not None and self.power_cap_file is not None:
            raise ValueError("set power_cap_w or power_cap_file, not both")
        return self

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # The environment overrides the file, which :func:`load_config` passes as defaults.
        return (env_settings, init_settings)

    def read_token(self) -> str | None:
        """The API token from ``api.token_file`` (None when no file is configured).

        Raises :class:`ConfigError` for an unreadable, empty or placeholder token.
        """
        path = self.api.token_file
        if path is None:
            return None
        try:
            token = path.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError("api.token_file", [("api.token_file", str(path), str(exc))]) from None
        why = weak_token(token)
        if why:
            raise ConfigError("api.token_file", [("api.token_file", str(path), why)])
        return token


def weak_token(token: str) -> str:
    """Why ``token`` is too weak to guard the API ("" when it is not): empty, a placeholder,
    shorter than 16 characters, fewer than 8 distinct characters (``aaaa...``), or one short
    pattern repeated (``abcabcabc...``, ``passwordpassword``)."""
    if not token:
        return "token is empty"
    if token.lower() in _PLACEHOLDER_TOKENS or len(token) < 16:
        return "token is a placeholder or shorter than 16 chars"
    if len(set(token)) < 8:
        return "token has fewer than 8 distinct characters (low entropy)"
    for p in range(1, len(token) // 2 + 1):
        if token == (token[:p] * (len(token) // p + 1))[: len(token)]:
            return f"token repeats a {p}-character pattern (low entropy)"
    return ""


_PATH_KEYS = ("power_cap_file", "log_file")
_API_PATH_KEYS = ("token_file",)
_CONNECTOR_PATH_KEYS = (
    "system_file",
    "nodes_file",
    "trace_file",
    "queues_file",
    "power_predictions_file",
)


def _resolve(base: Path, table: dict[str, Any], keys: tuple[str, ...]) -> None:
    for key in keys:
        value = table.get(key)
        if isinstance(value, str) and value and not Path(value).is_absolute():
            table[key] = str(base / value)


def load_config(path: Path | str | None) -> Settings:
    """Read the TOML file at ``path`` (None: defaults and environment only) into Settings.

    Raises :class:`ConfigError` naming every bad key and its value.
    """
    data: dict[str, Any] = {}
    source = "environment"
    if path is not None:
        p = Path(path)
        source = str(p)
        try:
            data = tomllib.loads(p.read_text(encoding="utf-8"))
        except OSError as exc:
            raise ConfigError(source, [("<file>", str(p), str(exc))]) from None
        except UnicodeDecodeError as exc:
            raise ConfigError(
                source, [("<file>", str(p), f"not UTF-8 text (byte {exc.start})")]
            ) from None
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(source, [("<file>", str(p), f"not valid TOML: {exc}")]) from None
        base = p.resolve().parent
        _resolve(base, data, _PATH_KEYS)
        if isinstance(data.get("api"), dict):
            _resolve(base, data["api"], _API_PATH_KEYS)
        if isinstance(data.get("connector"), dict):
            _resolve(base, data["connector"], _CONNECTOR_PATH_KEYS)
        if isinstance(data.get("cooling"), dict):
            _resolve(base, data["cooling"], ("temperature_file", "prices_file"))
        if isinstance(data.get("thermal"), dict):
            _resolve(base, data["thermal"], ("file", "readings_file"))
        power = data.get("power")
        if isinstance(power, dict):
            _resolve(base, power, ("hgfs_params_file",))
            for sub, keys in (("bmc", ("password_file",)), ("ssh", ("key_file", "known_hosts"))):
                if isinstance(power.get(sub), dict):
                    _resolve(base, power[sub], keys)
    try:
        return Settings(**data)
    except ValidationError as exc:
        problems: list[tuple[str, object, str]] = []
        from_env: list[str] = []
        for err in exc.errors():
            key = ".".join(str(x) for x in err["loc"]) or "<root>"
            var = env_var_of(err["loc"])
            if var is not None:
                # The environment overrides the file: the bad value is the variable's.
                key = f"{key} (from ${var})"
                from_env.append(var)
            problems.append((key, err.get("input"), err["msg"]))
        where = source if len(from_env) < len(problems) else "the environment"
        raise ConfigError(where, problems) from None


def env_var_of(loc: tuple[int | str, ...]) -> str | None:
    """The ``WATTSCHED_...`` variable that sets the key at ``loc``, if one is set."""
    for n in range(len(loc), 0, -1):
        name = "WATTSCHED_" + "__".join(str(x) for x in loc[:n]).upper()
        if name in os.environ:
            return name
    return None
