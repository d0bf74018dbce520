"""Parameters and outcome of the hybrid's search (:func:`.search.hybrid_search`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from wattsched.scheduler.hybrid.cpmodel import Cut
from wattsched.scheduler.hybrid.mapping import MappedSchedule
from wattsched.scheduler.model import SolverStats


class SearchParamError(ValueError):
    """A search parameter is out of range; the message names it and its value."""


def check_ranges(
    owner: str, positive: Mapping[str, float], non_negative: Mapping[str, float]
) -> None:
    """Raise :class:`SearchParamError` for the first value of ``positive`` not > 0 or of
    ``non_negative`` not >= 0 (NaN fails both), named as ``owner: key=value``."""
    for values, bound, ok in ((positive, "> 0", lambda v: v > 0),
                              (non_negative, ">= 0", lambda v: v >= 0)):  # fmt: skip
        for key, v in values.items():
            if not ok(v):
                raise SearchParamError(f"{owner}: {key}={v!r} must be {bound}")


@dataclass(frozen=True, slots=True)
class TimeoutPolicy:
    """Per-solve time limit: ``initial_s``, multiplied by ``factor`` after a solve that found
    nothing, up to ``max_s`` (the paper: 5 s doubling to 60 s)."""

    initial_s: float = 5.0
    factor: float = 2.0
    max_s: float = 60.0

    def __post_init__(self) -> None:
        if not self.initial_s > 0:
            raise SearchParamError(f"TimeoutPolicy: initial_s={self.initial_s!r} must be > 0")
        if not self.factor >= 1:
            raise SearchParamError(f"TimeoutPolicy: factor={self.factor!r} must be >= 1")
        if not self.max_s >= self.initial_s:
            raise SearchParamError(f"TimeoutPolicy: max_s={self.max_s!r} must be >= initial_s")


SERIAL = {"offline": 0.05}
"""The dispatcher's default ``SearchParams.serial`` per mode (online: 0, none: 0.2 lowered
the real-runtime online rows, session 50). Offline: PRB's order, the orderings and the
incumbent's list decoded serially and swaps (hundreds since the decoder is compiled); the
CP's solutions are decoded serially too (``cp_serial``, on with it)."""
POLISH = {"offline": 0.3}
"""The dispatcher's default ``SearchParams.serial_polish`` per mode, with the serial decoder:
offline 0.3 of the time left when the LNS starts goes to serial swaps in the final
incumbent's list (``bench/results/hybrid_eurora.md``, "Session 49")."""
LOCAL_SEARCH = {"offline": 0.15, "online": 0.5}
"""The dispatcher's default ``SearchParams.local_search`` per mode. Offline most of the
budget goes to the CP's moves, each decoded serially (``bench/results/hybrid_eurora.md``,
"Session 48")."""


def mode_shares(mode: str, local_search: float | None, serial: float | None) -> dict[str, Any]:
    """``SearchParams`` keywords for the dispatcher's ``mode``: ``local_search`` and ``serial``
    as given, else the mode's defaults; ``cp_serial`` on with the serial decoder, and the
    mode's ``serial_polish``."""
    share = SERIAL.get(mode, 0.0) if serial is None else serial
    ls = LOCAL_SEARCH.get(mode, 0.5) if local_search is None else local_search
    polish = POLISH.get(mode, 0.0) if share > 0 else 0.0
    return {"local_search": ls, "serial": share, "cp_serial": share > 0, "serial_polish": polish}


@dataclass(frozen=True, slots=True)
class SearchParams:
    """Knobs of :func:`hybrid_search` (see the module docstring)."""

    feedback: bool = True
    iterations: int = 5
    """CP solves with feedback (1 without)."""
    time_limit_s: float | None = None
    """Limit of one CP solve; None: the timeout policy's initial limit."""
    budget_s: float | None = None
    """Wall-clock budget of the whole search (PRB included); None: unbounded."""
    workers: int = 2
    grain_s: int | None = None
    """Time grain of the CP model; None: the horizon cut into about ``target_slots`` grains."""
    target_slots: int = 400
    horizon_slack: float = 0.1
    """The CP horizon is the incumbent's makespan plus this fraction."""
    retry_on_timeout: bool = True
    """Double the limit of a solve that found nothing (offline policy)."""
    timeout_policy: TimeoutPolicy = field(default_factory=TimeoutPolicy)
    orderings: bool = True
    """Also list-schedule under other priority orderings (cheap, real candidates), and with
    ``serial`` decode them serially too."""
    lns: bool = True
    """Spend what is left of the budget on large-neighbourhood moves (see :func:`_lns`)."""
    lns_window: int = 32
    """Jobs freed by one move (:mod:`.lns`)."""
    lns_time_s: float = 0.15
    """Limit of one move's solve."""
    lns_conflicts: bool = True
    """Neighbourhoods from conflict sets (two moves in three); False: rolling windows only."""
    lns_patience: int = 0
    """Moves in a row without a better schedule after which the LNS hands what is left of the
    budget back to the local search's swaps (0, the default: the moves run to the deadline;
    8 was measured in session 48 and not kept)."""
    cp_share: float = 0.2
    """With LNS: share of the budget left after the local search for the whole-model CP
    solves (feedback included); the moves get the rest."""
    seed: int = 0
    local_search: float = 0.5
    """Share of the budget left after the orderings spent on priority-list local search
    (:mod:`.localsearch`) before the CP; 0: none."""
    own_list: bool = True
    """The local search's swaps exchange jobs in the list the incumbent was decoded from
    (:mod:`.localsearch`); False: in its start order (before session 43)."""
    fixed_order: bool = False
    """Make CP-SAT branch on the starts in PRB order, earliest value first (the old search;
    it hands back its hint: issue 16, finding 3). Off: CP-SAT's own portfolio."""
    cp_serial: bool = False
    """Decode each CP solution (the whole-model solves' and the LNS moves') by the serial
    scheme too (:func:`.serial.serial_schedule`, in the order of its starts): the
    ``cpN-serial`` and ``lnscN-serial`` / ``lnswN-serial`` sources. On offline (the
    dispatcher's default); off online, as ``serial``."""
    serial: float = 0.0
    """Share of the budget left after the local search spent on the serial decoder
    (:mod:`.serial`: each job at the earliest time it fits beside those before it): PRB's
    order, the incumbent's list and (with ``orderings``) the orderings decoded serially, then
    swaps in the best of those lists; 0: none. Compiled where the list decode is (1-9 ms a
    decode on 200 jobs), in Python otherwise; not charged to a
    :class:`.workclock.WorkClock`: offline only."""
    serial_polish: float = 0.0
    """With LNS and ``serial``: share of the time left when the LNS starts kept for serial
    swaps in the final incumbent's list (:func:`.serial_swaps.serial_search`); 0: none."""
    cp: bool = True
    """Run the CP stage (whole-model solves and LNS) after the local search; False: the
    orderings and the local search only (the cheap re-search at early ends, :mod:`.research`)."""
    lower_bound: str = "fluid"
    """Valid lower bound in the stats (:mod:`.bound`): ``none``, ``fluid`` (milliseconds) or
    ``lp`` (also the time-indexed LP with HiGHS, up to ``bound_time_s``; offline)."""
    bound_time_s: float = 3.0

    def __post_init__(self) -> None:
        if self.iterations < 1:
            raise SearchParamError(f"SearchParams: iterations={self.iterations!r} must be >= 1")
        if self.workers < 1:
            raise SearchParamError(f"SearchParams: workers={self.workers!r} must be >= 1")
        if self.grain_s is not None and self.grain_s < 1:
            raise SearchParamError(f"SearchParams: grain_s={self.grain_s!r} must be >= 1")
        if self.time_limit_s is not None and not self.time_limit_s > 0:
            raise SearchParamError(f"SearchParams: time_limit_s={self.time_limit_s!r} must be > 0")
        if self.budget_s is not None and not self.budget_s > 0:
            raise SearchParamError(f"SearchParams: budget_s={self.budget_s!r} must be > 0")
        if self.lower_bound not in ("none", "fluid", "lp"):
            raise SearchParamError(
                f"SearchParams: lower_bound={self.lower_bound!r} must be none, fluid or lp"
            )
        if not 0 <= self.local_search < 1:
            raise SearchParamError(
                f"SearchParams: local_search={self.local_search!r} must be in [0, 1)"
            )
        for name in ("serial", "serial_polish"):
            if not 0 <= getattr(self, name) < 1:
                value = getattr(self, name)
                raise SearchParamError(f"SearchParams: {name}={value!r} must be in [0, 1)")
        if not 0 < self.cp_share <= 1:
            raise SearchParamError(f"SearchParams: cp_share={self.cp_share!r} must be in (0, 1]")
        if self.target_slots < 10:
            raise SearchParamError(f"SearchParams: target_slots={self.target_slots!r} >= 10")


@dataclass(slots=True)
class SearchOutcome:
    """The best real schedule, the PRB one, and the solver statistics."""

    best: MappedSchedule
    prb: MappedSchedule
    stats: SolverStats
    history: list[tuple[str, float]] = field(default_factory=list)
    """``(source, real objective)`` of every mapped schedule, in order."""
    cuts: list[Cut] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class ReplanReport:
    """What one re-plan did, for a progress line."""

    time: int
    queued: int
    stats: SolverStats
    spent_s: float
    left_s: float
