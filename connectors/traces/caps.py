"""Power-cap profiles: ``offset_seconds;watts`` files and the CLI's ``--cap`` value."""

from __future__ import annotations

import math
from os import PathLike
from pathlib import Path

from wattsched.connectors.traces.errors import TraceError, read_utf8
from wattsched.scheduler.model import PowerCap

UNLIMITED_WORDS = frozenset({"inf", "infinity", "none", "unlimited", "off"})
"""CLI words meaning "no power cap"."""


def read_power_cap(path: str | PathLike[str], *, origin: int = 0) -> PowerCap:
    """Read a profile of ``offset_seconds;watts`` lines into a :class:`PowerCap`.

    Offsets count from ``origin`` (the power-capping paper's origin is the first arrival of
    the instance); lines may come in any order and are sorted. Before the first offset the
    first value applies (so ``100;2200`` caps at 2,200 W from the origin on). A file with no
    line (``power_caps_noVariations``) means no cap. A line that is not two numbers, a negative
    offset, a repeated offset or a non-positive cap raises :class:`TraceError`.
    """
    p = Path(path)
    steps: dict[int, float] = {}
    for lineno, line in enumerate(read_utf8(p).splitlines(), 1):
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        off_s, sep, watts_s = text.partition(";")
        if not sep:
            raise TraceError(p, lineno, "line", text, "expected 'offset_seconds;watts'")
        try:
            offset = int(off_s)
        except ValueError:
            raise TraceError(p, lineno, "offset_seconds", off_s, "not an integer") from None
        try:
            watts = float(watts_s)
        except ValueError:
            raise TraceError(p, lineno, "watts", watts_s, "not a number") from None
        if offset < 0:
            raise TraceError(p, lineno, "offset_seconds", off_s, "must be >= 0")
        if not watts > 0:  # also rejects NaN
            raise TraceError(p, lineno, "watts", watts_s, "must be > 0")
        if offset in steps:
            raise TraceError(p, lineno, "offset_seconds", off_s, "repeated offset")
        steps[offset] = watts
    if not steps:
        return PowerCap.unlimited()
    return PowerCap(tuple((origin + t, steps[t]) for t in sorted(steps)))


def parse_power_cap(text: str, *, origin: int = 0) -> PowerCap:
    """The CLI's ``--cap``: watts (``"5000"``), ``"inf"``/``"none"`` (no cap), or a profile file.

    A value that names an existing file is read with :func:`read_power_cap` at ``origin``.
    Raises ValueError naming the text otherwise (TraceError, a ValueError, for a bad file).
    """
    word = text.strip()
    if word.lower() in UNLIMITED_WORDS:
        return PowerCap.unlimited()
    try:
        watts = float(word)
    except ValueError:
        if word and Path(word).is_file():
            return read_power_cap(word, origin=origin)
        raise ValueError(
            f"power cap {text!r}: expected watts (e.g. 5000), 'none', or a profile file"
        ) from None
    if math.isnan(watts) or watts <= 0:
        raise ValueError(f"power cap {text!r}: must be > 0 watts")
    return PowerCap.constant(watts)
