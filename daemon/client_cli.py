"""Client commands to a running daemon: ``status``, ``plan``, ``cap set|clear``, ``mode``.

What an administrator would otherwise do with curl. The daemon's address and token come
from ``--url`` / ``--token-file`` when given, else from the daemon's config file (found as
every command finds it: ``-c``, ``$WATTSCHED_CONFIG``, ``/etc/wattsched/wattsched.toml``),
else ``http://127.0.0.1:8080`` and no token. The token is read from its file and sent in the
``Authorization`` header: it never appears on a command line.

Exit status: 0 done, 1 the daemon refused or did not answer, 2 bad arguments or config.
"""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import typer

from wattsched.daemon.cli_common import CliError, ConfigOpt, fail, find_config

DEFAULT_URL = "http://127.0.0.1:8080"

UrlOpt = Annotated[
    str | None,
    typer.Option(help=f"The daemon's API (default: api.bind of the config, else {DEFAULT_URL})."),
]
TokenOpt = Annotated[
    Path | None,
    typer.Option(
        "--token-file",
        dir_okay=False,
        help="File holding the API token (default: api.token_file of the config).",
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print the daemon's JSON answer.")]
TimeoutOpt = Annotated[float, typer.Option(help="Seconds to wait for the answer.")]

cap_app = typer.Typer(
    help="The power cap of a running daemon.", no_args_is_help=True, rich_markup_mode=None
)


class ModeArg(enum.StrEnum):
    """The daemon's modes."""

    ADVISE = "advise"
    ENFORCE = "enforce"


def register(app: typer.Typer) -> None:
    """Add the client commands to the main app."""
    app.command("status")(status)
    app.command("plan")(plan)
    app.command("mode")(mode)
    app.command("power")(power)
    app.add_typer(cap_app, name="cap")


@dataclass(frozen=True)
class Target:
    """Where the daemon answers, and the token for mutations (None: none known)."""

    url: str
    token: str | None


def resolve_target(
    config: Path | None, url: str | None, token_file: Path | None, *, need_token: bool = True
) -> Target:
    """The daemon's URL and token from the options, else the config file, else defaults.

    The token is read only when ``need_token``. Raises :class:`CliError` for a config file
    that does not load or an unreadable token file.
    """
    from wattsched.daemon.config import ConfigError, load_config

    cfg_token: Path | None = None
    if url is None or (need_token and token_file is None):
        path = find_config(config, required=config is not None)
        if path is not None:
            try:
                settings = load_config(path)
            except ConfigError as exc:
                raise CliError(str(exc)) from None
            host = settings.api.host
            host = "127.0.0.1" if host in ("0.0.0.0", "") else host
            host = f"[{host}]" if ":" in host else host
            url = url or f"http://{host}:{settings.api.port}"
            cfg_token = settings.api.token_file
    token_path = token_file or cfg_token
    token = None
    if need_token and token_path is not None:
        try:
            token = token_path.read_text(encoding="utf-8").strip() or None
        except (OSError, UnicodeDecodeError) as exc:
            raise CliError(f"cannot read the token file {token_path}: {exc}") from None
    return Target((url or DEFAULT_URL).rstrip("/"), token)


def _call(
    target: Target, method: str, path: str, timeout: float, body: Any = None, auth: bool = False
) -> Any:
    import httpx2

    if auth and target.token is None:
        raise fail("no token: give --token-file or set api.token_file in the config")
    headers = {"Authorization": f"Bearer {target.token}"} if auth else {}
    try:
        resp = httpx2.request(
            method, target.url + path, json=body, headers=headers, timeout=timeout
        )
    except httpx2.HTTPError as exc:
        raise fail(f"cannot reach {target.url}{path}: {exc}", 1) from None
    if resp.status_code >= 400:
        try:
            detail = resp.json().get("detail", resp.text)
        except ValueError:
            detail = resp.text
        raise fail(f"{method} {target.url}{path}: {resp.status_code} {detail}", 1)
    return resp.json()


def _target(
    config: Path | None, url: str | None, token_file: Path | None = None, need_token: bool = True
) -> Target:
    try:
        return resolve_target(config, url, token_file, need_token=need_token)
    except CliError as exc:
        raise fail(str(exc)) from None


def _print_kv(title: str, data: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title, show_header=False)
    table.add_column("key", style="bold")
    table.add_column("value")
    for key, value in data.items():
        if isinstance(value, dict):
            value = ", ".join(f"{k}={v}" for k, v in value.items()) or "-"
        elif key.endswith("_at") and isinstance(value, int | float):
            value = datetime.fromtimestamp(value, UTC).isoformat(timespec="seconds")
        elif isinstance(value, float):
            value = f"{value:,.3f}"
        table.add_row(key, "-" if value is None else str(value))
    Console().print(table)


def status(
    config: ConfigOpt = None,
    url: UrlOpt = None,
    as_json: JsonOpt = False,
    timeout: TimeoutOpt = 5.0,
) -> None:
    """Ask a running daemon for its status (a table, or --json)."""
    target = _target(config, url, need_token=False)
    data = _call(target, "GET", "/status", timeout)
    if as_json:
        typer.echo(json.dumps(data, indent=2))
    else:
        _print_kv(f"wattsched at {target.url}", data)


def plan(
    config: ConfigOpt = None,
    url: UrlOpt = None,
    as_json: JsonOpt = False,
    timeout: TimeoutOpt = 5.0,
) -> None:
    """Show a running daemon's current plan: each job's start, end and nodes."""
    from ClusterShell.NodeSet import NodeSet
    from rich.console import Console
    from rich.table import Table

    target = _target(config, url, need_token=False)
    data = _call(target, "GET", "/plan", timeout)
    if as_json:
        typer.echo(json.dumps(data, indent=2))
        return
    table = Table(
        title=f"plan of cycle {data['cycle_id']} at t={data['time']} "
        f"({data['solver_status'] or 'no solver'})"
    )
    for col in ("job", "start", "end", "nodes"):
        table.add_column(col)
    for e in data["entries"]:
        nodes = e["nodes"]
        shown = str(NodeSet.fromlist(nodes)) if len(set(nodes)) == len(nodes) else ",".join(nodes)
        table.add_row(e["job_id"], str(e["start"]), str(e["end"]), shown)
    Console().print(table)


def mode(
    new_mode: Annotated[ModeArg, typer.Argument(metavar="MODE", help="advise or enforce.")],
    config: ConfigOpt = None,
    url: UrlOpt = None,
    token_file: TokenOpt = None,
    timeout: TimeoutOpt = 10.0,
) -> None:
    """Switch a running daemon between advise and enforce (needs the token)."""
    target = _target(config, url, token_file)
    out = _call(target, "PUT", "/config/mode", timeout, {"mode": new_mode.value}, auth=True)
    typer.echo(json.dumps(out))


@cap_app.command("set")
def cap_set(
    watts: Annotated[float, typer.Argument(help="The cap in watts.", min=1)],
    config: ConfigOpt = None,
    url: UrlOpt = None,
    token_file: TokenOpt = None,
    timeout: TimeoutOpt = 10.0,
) -> None:
    """Set a constant power cap from the next cycle on (needs the token)."""
    target = _target(config, url, token_file)
    out = _call(target, "PUT", "/config/power-cap", timeout, {"watts": watts}, auth=True)
    typer.echo(json.dumps(out))


@cap_app.command("clear")
def cap_clear(
    config: ConfigOpt = None,
    url: UrlOpt = None,
    token_file: TokenOpt = None,
    timeout: TimeoutOpt = 10.0,
) -> None:
    """Remove the power cap from the next cycle on (needs the token)."""
    target = _target(config, url, token_file)
    out = _call(target, "PUT", "/config/power-cap", timeout, {"watts": None}, auth=True)
    typer.echo(json.dumps(out))


class OnOff(enum.StrEnum):
    """A node power command."""

    ON = "on"
    OFF = "off"
    STATUS = "status"


def power(
    nodes: Annotated[str, typer.Argument(help="Nodes, as a node set: n[1-4],n7.")],
    state: Annotated[OnOff, typer.Argument(help="on, off, or status.")],
    config: ConfigOpt = None,
    url: UrlOpt = None,
    token_file: TokenOpt = None,
    timeout: TimeoutOpt = 30.0,
) -> None:
    """Switch nodes on or off through a running daemon, under its safety rules (needs the
    token); a node a rule protects is reported and the others go on (exit 1 if any failed).
    ``status``: each node's power state as the daemon sees it and its last power command."""
    from wattsched.daemon.cli_common import parse_nodes

    try:
        names = list(dict.fromkeys(parse_nodes(nodes)))
    except CliError as exc:
        raise fail(str(exc)) from None
    target = _target(config, url, token_file)
    if state is OnOff.STATUS:
        known = {n["name"]: n for n in _call(target, "GET", "/nodes", timeout)}
        missing = [n for n in names if n not in known]
        for name in names:
            if name in known:
                n = known[name]
                last = n.get("last_power_command") or {}
                typer.echo(
                    f"{name} {n['power_state']}"
                    + (
                        f" (last: {last['command']} {last['state']} at {last['time']})"
                        if last
                        else ""
                    )
                )
        if missing:
            raise fail(f"unknown node(s): {', '.join(missing)}", 1)
        return
    failed = 0
    for name in names:
        try:
            out = _call(
                target, "POST", f"/nodes/{name}/power", timeout, {"on": state is OnOff.ON},
                auth=True,
            )  # fmt: skip
        except typer.Exit:
            failed += 1
            continue
        typer.echo(json.dumps(out))
    if failed:
        raise typer.Exit(1)
