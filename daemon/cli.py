"""The ``wattsched`` command line: one typer app, its commands defined in their own modules."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

import typer

from wattsched.daemon import (
    client_cli,
    daily_cli,
    rms_cli,
    service_cli,
    simulate_cli,
    sweep,
    tune_cli,
)

app = typer.Typer(
    name="wattsched",
    help="Power-capped job dispatcher for HPC clusters.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # help texts name TOML tables ([connector]): no markup
    add_completion=False,
)


def package_version() -> str:
    """The installed wattsched version ("unknown" when run from an uninstalled tree)."""
    try:
        return version("wattsched")
    except PackageNotFoundError:
        return "unknown"


def _show_version(value: bool) -> None:
    if value:
        typer.echo(f"wattsched {package_version()}")
        raise typer.Exit()


@app.callback()
def main(
    show_version: bool = typer.Option(
        False,
        "--version",
        help="Print the version and exit.",
        callback=_show_version,
        is_eager=True,
    ),
) -> None:
    """Power-capped job dispatcher for HPC clusters."""


simulate_cli.register(app)
daily_cli.register(app)
sweep.register(app)
app.add_typer(rms_cli.app, name="rms")
service_cli.register(app)
client_cli.register(app)
tune_cli.register(app)

if __name__ == "__main__":  # pragma: no cover
    app()
