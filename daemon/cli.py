"""The ``wattsched`` command line: one typer app, its commands defined in their own modules."""

from __future__ import annotations

import typer

from wattsched.daemon import rms_cli, service_cli, simulate_cli

app = typer.Typer(
    name="wattsched",
    help="Power-capped job dispatcher for HPC clusters.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
simulate_cli.register(app)
app.add_typer(rms_cli.app, name="rms")
service_cli.register(app)

if __name__ == "__main__":  # pragma: no cover
    app()
