"""``wattsched simulate``: replay a trace through the control cycle."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add the simulate command to the main app."""
