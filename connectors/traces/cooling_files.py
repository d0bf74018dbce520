"""Files of the cooling and profit model: temperatures, PUE tables, tariffs, prices.

- Temperature ``time,celsius`` (CSV, ``#`` comments, an optional header line): ``time`` is
  ``HH:MM`` (a daily profile, repeated every day), seconds on the replay's clock, or an ISO 8601
  date-time (a forecast; converted to epoch seconds, UTC when no zone is given).
- PUE table (CSV): a header ``it_kw,<celsius>,<celsius>,...`` then one row per IT power in kW
  with a PUE for each temperature; the built-in ``air`` and ``hybrid`` tables are in
  ``connectors/traces/data/`` (their header says how they were made: replace them freely).
- Tariff ``HH:MM,price_per_kwh`` (CSV): the energy price from that time of day on.
- Prices (TOML): keys of :class:`~wattsched.scheduler.profit.Prices` (``core_hour``,
  ``gpu_hour``, ``mic_hour``, ``mem_gb_hour``, ``k1``, ``energy_kwh``) and an optional
  ``tariff`` file (relative to the TOML file).

Every bad line raises :class:`TraceError` naming the file, line, field and value.
"""

from __future__ import annotations

import csv
import math
import tomllib
from datetime import UTC, datetime
from importlib.resources import files
from os import PathLike
from pathlib import Path

from wattsched.connectors.traces.errors import TraceError, read_utf8
from wattsched.scheduler.cooling import SEASONS, CoolingModelError, PueTable, TemperatureProfile
from wattsched.scheduler.profit import Prices, ProfitModelError, Tariff

COOLING_KINDS = ("air", "hybrid")


def _rows(path: Path) -> list[tuple[int, list[str]]]:
    """Non-empty, non-comment CSV rows with their 1-based line numbers."""
    try:
        text = read_utf8(path)
    except UnicodeDecodeError as exc:
        raise TraceError(path, None, "<file>", f"byte {exc.start}", "not UTF-8 text") from None
    out = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        out.append((lineno, [c.strip() for c in next(csv.reader([line]))]))
    if not out:
        raise TraceError(path, None, "<file>", "", "no data line")
    return out


def _number(path: Path, lineno: int, field: str, text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise TraceError(path, lineno, field, text, "not a number") from None
    if not math.isfinite(value):
        raise TraceError(path, lineno, field, text, "must be a finite number")
    return value


def _clock(path: Path, lineno: int, text: str) -> int:
    hh, sep, mm = text.partition(":")
    if not (sep and hh.isdigit() and mm.isdigit() and int(hh) < 24 and int(mm) < 60):
        raise TraceError(path, lineno, "time", text, "expected HH:MM (00:00..23:59)")
    return int(hh) * 3600 + int(mm) * 60


def read_temperature(path: str | PathLike[str]) -> TemperatureProfile:
    """A ``time,celsius`` file as a :class:`TemperatureProfile` (daily for ``HH:MM`` times)."""
    p = Path(path)
    rows = _rows(p)
    if rows and rows[0][1] and rows[0][1][0].lower() == "time":
        rows = rows[1:]
    times: list[float] = []
    temps: list[float] = []
    kinds: set[str] = set()
    for lineno, cells in rows:
        if len(cells) != 2:
            raise TraceError(p, lineno, "line", ",".join(cells), "expected 'time,celsius'")
        t_text, c_text = cells
        if ":" in t_text and "-" not in t_text and "T" not in t_text:
            kinds.add("daily")
            t = float(_clock(p, lineno, t_text))
        else:
            try:
                t = float(t_text)
                kinds.add("seconds")
            except ValueError:
                try:
                    stamp = datetime.fromisoformat(t_text)
                except ValueError:
                    raise TraceError(
                        p, lineno, "time", t_text, "expected HH:MM, seconds or ISO 8601"
                    ) from None
                kinds.add("iso")
                t = (stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC)).timestamp()
        c = _number(p, lineno, "celsius", c_text)
        if not -80 <= c <= 70:
            raise TraceError(p, lineno, "celsius", c_text, "must be within -80..70")
        if times and t <= times[-1]:
            raise TraceError(p, lineno, "time", t_text, "times must increase")
        times.append(t)
        temps.append(c)
    if "daily" in kinds and len(kinds) > 1:
        raise TraceError(p, None, "time", "", "mixes HH:MM with other time forms")
    return TemperatureProfile(tuple(times), tuple(temps), daily="daily" in kinds, name=p.name)


def temperature_source(season: str | None, path: str | PathLike[str] | None) -> TemperatureProfile:
    """The built-in ``season`` day (``winter``/``summer``) or the profile of ``path``."""
    if path is not None:
        return read_temperature(path)
    if season not in SEASONS:
        raise ValueError(f"season {season!r}: expected one of {', '.join(SEASONS)}")
    return SEASONS[season]


def read_pue_table(path: str | PathLike[str]) -> PueTable:
    """A PUE table CSV (see the module docstring) as a :class:`PueTable`."""
    p = Path(path)
    rows = _rows(p)
    head_line, head = rows[0]
    if not head or head[0].lower() != "it_kw" or len(head) < 2:
        raise TraceError(p, head_line, "header", ",".join(head), "expected it_kw,<celsius>,...")
    celsius = [_number(p, head_line, f"column {i + 1}", c) for i, c in enumerate(head[1:], 1)]
    it_w: list[float] = []
    grid: list[tuple[float, ...]] = []
    for lineno, cells in rows[1:]:
        if len(cells) != len(head) or any(c == "" for c in cells):
            raise TraceError(
                p, lineno, "row", ",".join(cells), f"expected {len(head)} values (a gap?)"
            )
        kw = _number(p, lineno, "it_kw", cells[0])
        if kw < 0 or (it_w and kw * 1000 <= it_w[-1]):
            raise TraceError(p, lineno, "it_kw", cells[0], "must be >= 0 and increase")
        values = []
        for t, cell in zip(celsius, cells[1:], strict=True):
            v = _number(p, lineno, f"pue at {t:g} C", cell)
            if not 1.0 <= v <= 5.0:
                raise TraceError(p, lineno, f"pue at {t:g} C", cell, "must be within 1..5")
            values.append(v)
        it_w.append(kw * 1000)
        grid.append(tuple(values))
    if not grid:
        raise TraceError(p, None, "<file>", "", "no row of PUE values")
    try:
        return PueTable(tuple(it_w), tuple(celsius), tuple(grid), name=p.name)
    except CoolingModelError as exc:
        raise TraceError(p, head_line, "header", ",".join(head), str(exc)) from None


def builtin_pue_table(kind: str) -> PueTable:
    """The shipped table for ``air`` or ``hybrid`` cooling."""
    if kind not in COOLING_KINDS:
        raise ValueError(f"cooling {kind!r}: expected one of {', '.join(COOLING_KINDS)}")
    resource = files("wattsched.connectors.traces") / "data" / f"pue_{kind}.csv"
    return read_pue_table(str(resource))


def read_tariff(path: str | PathLike[str]) -> Tariff:
    """A ``HH:MM,price_per_kwh`` file as a daily :class:`Tariff`."""
    p = Path(path)
    rows = _rows(p)
    if rows[0][1] and rows[0][1][0].lower() == "time":
        rows = rows[1:]
    times: list[int] = []
    prices: list[float] = []
    for lineno, cells in rows:
        if len(cells) != 2:
            raise TraceError(p, lineno, "line", ",".join(cells), "expected 'HH:MM,price'")
        t = _clock(p, lineno, cells[0])
        price = _number(p, lineno, "price", cells[1])
        if price < 0:
            raise TraceError(p, lineno, "price", cells[1], "must be >= 0")
        if times and t <= times[-1]:
            raise TraceError(p, lineno, "time", cells[0], "times must increase")
        times.append(t)
        prices.append(price)
    return Tariff(tuple(times), tuple(prices))


def read_prices(path: str | PathLike[str]) -> Prices:
    """A prices TOML file (see the module docstring) as :class:`Prices`."""
    p = Path(path)
    try:
        data = tomllib.loads(read_utf8(p))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise TraceError(p, None, "<file>", "", f"not valid TOML: {exc}") from None
    known = {"core_hour", "gpu_hour", "mic_hour", "mem_gb_hour", "k1", "energy_kwh", "tariff"}
    for key, value in data.items():
        if key not in known:
            raise TraceError(
                p, None, key, value, f"unknown key (known: {', '.join(sorted(known))})"
            )
        if key != "tariff" and (isinstance(value, bool) or not isinstance(value, int | float)):
            raise TraceError(p, None, key, value, "must be a number")
        if key != "tariff" and not (math.isfinite(value) and value >= 0):
            raise TraceError(p, None, key, value, "must be a finite number >= 0")
    tariff = None
    if "tariff" in data:
        tp = Path(str(data.pop("tariff")))
        tariff = read_tariff(tp if tp.is_absolute() else p.parent / tp)
    try:
        return Prices(**{k: float(v) for k, v in data.items()}, tariff=tariff)
    except ProfitModelError as exc:
        raise TraceError(p, None, "<file>", "", str(exc)) from None
