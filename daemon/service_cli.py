"""``wattsched serve | migrate | status``: the daemon's commands (daemon issue)."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add the daemon's commands to the main app."""
