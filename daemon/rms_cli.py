"""``wattsched rms ...``: admin commands against a resource manager (connectors issue)."""

from __future__ import annotations

import typer

app = typer.Typer(help="Talk to the resource manager through a connector.", no_args_is_help=True)


@app.callback()
def _main() -> None:
    """Resource manager commands."""
