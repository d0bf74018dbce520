"""The thermal parameters file (TOML), parsed by ``params_from_toml``
(:mod:`wattsched.scheduler.thermal.model`).

Errors are :class:`~wattsched.scheduler.thermal.model.ThermalModelError` naming the file, the
field and the value.
"""

from __future__ import annotations

from collections.abc import Sequence
from os import PathLike
from pathlib import Path

from wattsched.scheduler.thermal.model import ThermalModelError, ThermalParams, params_from_toml


def read_thermal_file(
    path: str | PathLike[str], names: Sequence[str] | None = None
) -> ThermalParams:
    """The thermal parameters in ``path``; ``names``: the node order when the file has none."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ThermalModelError(str(p), "<file>", "", f"cannot read: {exc}") from None
    return params_from_toml(text, str(p), names)
