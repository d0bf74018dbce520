"""What every ``wattsched`` command shares: where the config file is, log levels, node sets.

The config file is found, in order, from ``-c/--config``, the ``WATTSCHED_CONFIG``
environment variable, then :data:`DEFAULT_CONFIG` (``/etc/wattsched/wattsched.toml``).
"""

from __future__ import annotations

import enum
import os
from pathlib import Path
from typing import Annotated

import typer
from ClusterShell.NodeSet import NodeSet, NodeSetParseError

DEFAULT_CONFIG = Path("/etc/wattsched/wattsched.toml")
"""Where the daemon's TOML file is looked for when neither ``-c`` nor the environment says."""

CONFIG_ENV = "WATTSCHED_CONFIG"

ConfigOpt = Annotated[
    Path | None,
    typer.Option(
        "--config",
        "-c",
        dir_okay=False,
        help=f"The TOML file (default: ${CONFIG_ENV}, then {DEFAULT_CONFIG}).",
        show_default=False,
    ),
]


class LogLevel(enum.StrEnum):
    """The log levels ``--log-level`` takes."""

    DEBUG = "debug"
    INFO = "info"
    WARNING = "warning"
    ERROR = "error"


LogLevelOpt = Annotated[LogLevel, typer.Option(case_sensitive=False, help="How much to log.")]


class CliError(Exception):
    """A bad argument or environment, said in one line (the command exits 2)."""


def find_config(path: Path | None, *, required: bool = True) -> Path | None:
    """The config file to use: ``path``, else ``$WATTSCHED_CONFIG``, else the default path.

    Raises :class:`CliError` naming where it looked when the file does not exist (or when
    none is found and ``required``); returns None when none is found and not ``required``.
    """
    if path is not None:
        origin = "--config"
    elif os.environ.get(CONFIG_ENV):
        path, origin = Path(os.environ[CONFIG_ENV]), f"${CONFIG_ENV}"
    elif DEFAULT_CONFIG.is_file() or required:
        path, origin = DEFAULT_CONFIG, "the default path"
    else:
        return None
    if not path.is_file():
        raise CliError(
            f"config file {path} (from {origin}) does not exist or is not a file; "
            f"give one with -c FILE or ${CONFIG_ENV}"
        )
    return path


def config_or_exit(path: Path | None) -> Path:
    """:func:`find_config` for commands that need a file: exits 2 with the message if none."""
    try:
        found = find_config(path)
    except CliError as exc:
        raise fail(str(exc)) from None
    assert found is not None
    return found


def fail(msg: str, code: int = 2) -> typer.Exit:
    """Print ``msg`` in red on stderr; the exit to raise."""
    typer.secho(msg, err=True, fg=typer.colors.RED)
    return typer.Exit(code)


def parse_nodes(text: str) -> list[str]:
    """Node names from ClusterShell node sets, in order, duplicates kept.

    ``"n[1-3],n7"`` is ``n1 n2 n3 n7``; ``"n1,n1"`` is ``n1 n1`` (two units on one node,
    for jobs whose placement lets units share a node). Raises :class:`CliError` on a bad set.
    """
    names: list[str] = []
    depth = 0
    piece = ""
    for ch in text + ",":
        if ch == "," and depth == 0:
            if piece.strip():
                try:
                    names.extend(NodeSet(piece.strip()))
                except NodeSetParseError as exc:
                    raise CliError(f"bad node set {piece.strip()!r}: {exc}") from None
            piece = ""
            continue
        depth += {"[": 1, "]": -1}.get(ch, 0)
        piece += ch
    if depth != 0:
        raise CliError(f"bad node set {text.strip()!r}: unbalanced brackets")
    if not names:
        raise CliError(f"no node in {text!r}")
    return names
