"""What every trace reader returns or raises: :class:`Workload`, :class:`TraceReport`,
:class:`TraceError`.

A reader never crashes on a record that is well formed but unusable (a job with an unknown
runtime, more processors than the machine has...): it skips it and counts the reason in the
:class:`TraceReport`. A record that is *malformed* (wrong number of fields, a number that is not
one) raises :class:`TraceError`, which names the file, the line, the field and the value.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from os import PathLike
from pathlib import Path

from wattsched.scheduler.model import Job


class TraceError(ValueError):
    """A malformed record in a trace, system or power-cap file.

    Attributes carry the offending input: ``path`` (as given), ``line`` (1-based; None when the
    format has no useful line, e.g. a TOML table), ``field`` (its name in the format) and
    ``value`` (the text read). The message reads
    ``"file.swf:12: field 'run_time' = 'abc': not an integer"``.
    """

    def __init__(
        self,
        path: str | PathLike[str],
        line: int | None,
        field: str,
        value: object,
        reason: str,
    ) -> None:
        self.path = str(path)
        self.line = line
        self.field = field
        self.value = value
        self.reason = reason
        where = self.path if line is None else f"{self.path}:{line}"
        super().__init__(f"{where}: field {field!r} = {value!r}: {reason}")


def read_utf8(path: str | PathLike[str]) -> str:
    """The text of a file; a byte that is not UTF-8 raises :class:`TraceError` naming the
    file, the line and the byte offset (not a bare ``UnicodeDecodeError``)."""
    raw = Path(path).read_bytes()
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise TraceError(
            path,
            line,
            "<text>",
            f"byte {exc.start}: {raw[exc.start : exc.start + 1]!r}",
            "not UTF-8 text",
        ) from None


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


@dataclass
class TraceReport:
    """What a reader did with the records it read.

    ``read`` records were looked at; ``kept`` became jobs; ``skipped`` counts the others by
    reason, so ``read == kept + sum(skipped.values())`` always holds. ``clamped`` counts kept
    jobs whose values were changed (reason -> count). ``notes`` counts kept jobs that needed a
    documented rule but were not changed in a way that matters for replay (an unknown queue
    name mapped to a known one, a job without a power prediction...).
    """

    read: int = 0
    kept: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    clamped: dict[str, int] = field(default_factory=dict)
    notes: dict[str, int] = field(default_factory=dict)

    def skip(self, reason: str) -> None:
        """Count one record skipped for ``reason``."""
        self.skipped[reason] = self.skipped.get(reason, 0) + 1

    def clamp(self, reason: str) -> None:
        """Count one kept job changed for ``reason``."""
        self.clamped[reason] = self.clamped.get(reason, 0) + 1

    def note(self, reason: str, n: int = 1) -> None:
        """Count ``n`` kept jobs that followed the documented rule ``reason``."""
        self.notes[reason] = self.notes.get(reason, 0) + n

    def summary(self) -> str:
        """One line: ``read 28489, kept 28480; skipped: runtime_unknown 9; clamped: ...``."""
        parts = [f"read {self.read}, kept {self.kept}"]
        for name, counts in (
            ("skipped", self.skipped),
            ("clamped", self.clamped),
            ("notes", self.notes),
        ):
            if counts:
                parts.append(f"{name}: {_counts(counts)}")
        return "; ".join(parts)


@dataclass
class Workload:
    """A trace read into jobs: the jobs in file order, the report, and the header fields."""

    jobs: list[Job]
    report: TraceReport
    meta: dict[str, str] = field(default_factory=dict)
