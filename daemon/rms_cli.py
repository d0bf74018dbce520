"""``wattsched rms ...``: admin commands against a resource manager through a connector.

Each command reads the ``[connector]`` table of ``-c CONFIG`` (see
:mod:`wattsched.connectors.config`), acts, and prints JSON (or tables with ``--table``).
Exit status: 0 done, 1 the RMS refused or failed (the typed error is printed), 2 bad config
or arguments.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

from wattsched.connectors.base import Connector, ConnectorError
from wattsched.daemon.cli_common import CliError, ConfigOpt, config_or_exit, parse_nodes
from wattsched.scheduler.model import Snapshot

T = TypeVar("T")

app = typer.Typer(
    help="Talk to the resource manager through the connector of the config's [connector] table.",
    no_args_is_help=True,
    rich_markup_mode=None,  # help texts name TOML tables ([connector]): no markup
)

TableOpt = Annotated[bool, typer.Option("--table", help="Print tables instead of JSON.")]


class OnOff(enum.StrEnum):
    """Target power state."""

    ON = "on"
    OFF = "off"


@app.callback()
def _main() -> None:
    """Resource manager commands."""


def _connector(config: Path | None) -> Connector:
    from wattsched.connectors.config import build_connector, load_connector_config

    path = config_or_exit(config)
    try:
        return build_connector(load_connector_config(path))
    except ConnectorError as exc:
        typer.secho(f"error: {exc}", err=True, fg=typer.colors.RED)
        raise typer.Exit(2) from None


def _with_connector(
    config: Path | None,
    action: Callable[[Connector], T],
    catch: tuple[type[Exception], ...] = (ConnectorError, ValueError),
) -> T:
    """Build the connector, run ``action`` on it, close it; a caught error exits 1."""
    conn = _connector(config)
    try:
        return action(conn)
    except catch as exc:
        raise _fail(exc) from None
    finally:
        conn.close()


def _fail(exc: Exception) -> typer.Exit:
    typer.secho(f"error: {type(exc).__name__}: {exc}", err=True, fg=typer.colors.RED)
    return typer.Exit(1)


def snapshot_dict(snap: Snapshot) -> dict[str, Any]:
    """A snapshot as plain JSON-ready data."""

    def unit(r: Any) -> dict[str, int]:
        return {"cores": r.cores, "mem_mb": r.mem_mb, "gpus": r.gpus, "mics": r.mics}

    return {
        "time": snap.time,
        "nodes": [
            {
                "name": n.name,
                "capacity": unit(n.capacity),
                "state": n.state.value,
                "available": n.available,
                "partition": n.partition,
            }
            for n in snap.nodes
        ],
        "running": [
            {
                "id": r.job.id,
                "nodes": list(r.nodes),
                "start": r.start,
                "end_estimate": r.end_estimate,
                "units": r.job.units,
                "unit": unit(r.job.unit),
                "user": r.job.user,
            }
            for r in snap.running
        ],
        "queued": [
            {
                "id": j.id,
                "units": j.units,
                "unit": unit(j.unit),
                "walltime": j.walltime,
                "submit": j.submit,
                "queue": j.queue,
                "held": j.held,
                "unit_power_w": j.unit_power_w,
                "user": j.user,
            }
            for j in snap.queued
        ],
    }


def _print_tables(data: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    t = Table(title=f"nodes at {data['time']}")
    for col in ("name", "cores", "mem_mb", "gpus", "power", "available", "partition"):
        t.add_column(col)
    for n in data["nodes"]:
        c = n["capacity"]
        t.add_row(
            n["name"], str(c["cores"]), str(c["mem_mb"]), str(c["gpus"]), n["state"],
            "yes" if n["available"] else "no", n["partition"] or "",
        )  # fmt: skip
    console.print(t)
    t = Table(title="running")
    for col in ("id", "nodes", "start", "end_estimate", "user"):
        t.add_column(col)
    for r in data["running"]:
        t.add_row(
            r["id"], ",".join(r["nodes"]), str(r["start"]), str(r["end_estimate"]), r["user"] or ""
        )
    console.print(t)
    t = Table(title="queued")
    for col in ("id", "units", "cores/unit", "walltime", "queue", "held", "W/unit", "user"):
        t.add_column(col)
    for j in data["queued"]:
        w = "" if j["unit_power_w"] is None else f"{j['unit_power_w']:g}"
        t.add_row(
            j["id"], str(j["units"]), str(j["unit"]["cores"]), str(j["walltime"]), j["queue"],
            "yes" if j["held"] else "no", w, j["user"] or "",
        )  # fmt: skip
    console.print(t)


def _done(result: dict[str, Any], table: bool) -> None:
    if table:
        typer.echo(" ".join(f"{k}={v}" for k, v in result.items()))
    else:
        typer.echo(json.dumps(result))


@app.command()
def snapshot(config: ConfigOpt = None, table: TableOpt = False) -> None:
    """Show the cluster: nodes, running jobs, queued jobs."""
    data = _with_connector(config, lambda c: snapshot_dict(c.snapshot()), (ConnectorError,))
    if table:
        _print_tables(data)
    else:
        typer.echo(json.dumps(data, indent=2))


@app.command()
def start(
    job: Annotated[str, typer.Argument(help="Job id.")],
    nodes: Annotated[
        str,
        typer.Option(
            "--nodes", help="One node per unit, as node sets: n[1-4],n7 (n1,n1: two units on n1)."
        ),
    ],
    config: ConfigOpt = None,
    table: TableOpt = False,
) -> None:
    """Start a pending job now on exactly these nodes."""
    names = _nodes(nodes)
    res = _with_connector(config, lambda c: c.start(job, names))
    _done({"action": "start", "job": res.job_id, "nodes": list(res.nodes)}, table)


@app.command()
def hold(
    job: Annotated[str, typer.Argument(help="Job id.")],
    config: ConfigOpt = None,
    table: TableOpt = False,
) -> None:
    """Hold a job: the RMS will not start it by itself."""
    _with_connector(config, lambda c: c.hold(job))
    _done({"action": "hold", "job": job}, table)


@app.command()
def release(
    job: Annotated[str, typer.Argument(help="Job id.")],
    config: ConfigOpt = None,
    table: TableOpt = False,
) -> None:
    """Release a job: the RMS may start it by itself."""
    _with_connector(config, lambda c: c.release(job))
    _done({"action": "release", "job": job}, table)


@app.command()
def power(
    nodes: Annotated[str, typer.Argument(help="Nodes, as a node set: n[1-4],n7.")],
    state: Annotated[OnOff, typer.Argument(help="on or off.")],
    config: ConfigOpt = None,
    table: TableOpt = False,
) -> None:
    """Switch nodes on or off through the RMS's power saving, one after the other."""
    names = list(dict.fromkeys(_nodes(nodes)))
    conn = _connector(config)
    try:
        for name in names:
            try:
                conn.power(name, on=state is OnOff.ON)
            except (ConnectorError, ValueError) as exc:
                raise _fail(exc) from None
            _done({"action": "power", "node": name, "state": state.value}, table)
    finally:
        conn.close()


def _nodes(text: str) -> list[str]:
    try:
        return parse_nodes(text)
    except CliError as exc:
        typer.secho(f"error: --nodes: {exc}", err=True, fg=typer.colors.RED)
        raise typer.Exit(2) from None
