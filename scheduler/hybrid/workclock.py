"""A deterministic clock for one online search: work counted instead of wall seconds.

The online search (:func:`.search.hybrid_search`) stops at a wall-clock deadline, so how
many priority lists it decodes, and what CP-SAT finds, depend on the machine and its load:
two replays of one trace with one seed differ (issue 16: 1.018 and 1.112 against PRB on
hist_400_20140403_092423, the same seed). With a :class:`WorkClock` as its timer the budget
counts work: each read of the clock costs ``per_read_s`` "seconds" (the search reads it once
per decoded list; the list's making grows with the queue), each step of a compiled decode
(:attr:`.ListDecoder.ops`, through :meth:`WorkClock.meter`) :data:`DECODE_STEP_S`, and a CP
solve runs on one worker to a deterministic-time limit and costs what it used, at
:func:`cp_seconds_per_det` budget seconds per deterministic unit. So the same snapshot and
seed give the same plan on any machine and under any load; replays become reproducible, and
two dispatchers can be compared on one run per trace.

A wall cap still holds: once ``wall_cap_s`` real seconds have passed the clock jumps past
any deadline of its budget (the search then stops as on a time-out), and a CP solve never
runs past the cap. That path is not deterministic; it is there so that a slow machine cannot
stretch a control cycle without limit.

The constants are fitted on the benchmarks' 2-core machine (``bench/hybrid_workclock.py``,
152 searches of four ``hist_400`` traces, 2 to 300 queued jobs, run alone) so that a search
takes about its budget in wall time there: outside CP-SAT, wall = 12 us per read + 0.78 us
per read and queued job + 3.5 ns per decode step (median error 6 %); CP-SAT on one worker
takes 1.1 s per deterministic unit on models of up to 50 intervals and 2.2-2.5 s from 100 on
(charging 1 s per unit, as before, let searches of big evening queues run 2-3 x their
budget and hit the wall cap).
"""

from __future__ import annotations

import time
from collections.abc import Callable

DECODE_STEP_S = 3.5e-9
"""Cost of one step of a compiled decode (:attr:`.ListDecoder.ops`, and
:attr:`.SerialDecoder.ops`: 2.8-4.5 ns a step from 2 to 400 queued jobs, median 3.3, on the
same machine, session 50)."""
READ_BASE_S = 12e-6
"""Cost of one read of the clock, whatever the queue (the loop around a decode)."""
READ_PER_JOB_S = 0.78e-6
"""Cost of one read per queued job (the list made and handed to the decode)."""
CP_S_PER_DET_MIN = 0.8
CP_S_PER_DET_PER_INTERVAL = 0.013
CP_S_PER_DET_MAX = 2.3


def cp_seconds_per_det(intervals: int) -> float:
    """Budget seconds charged per CP-SAT deterministic unit on a model of ``intervals``
    intervals (queued and running jobs): ``min(2.3, 0.8 + 0.013 x intervals)``."""
    rate = CP_S_PER_DET_MIN + CP_S_PER_DET_PER_INTERVAL * max(intervals, 0)
    return min(CP_S_PER_DET_MAX, rate)


class WorkClock:
    """A timer for :func:`.search.hybrid_search` that counts work (see the module doc).

    ``clock()`` returns the work done so far in budget seconds and charges one read;
    :meth:`spend` charges a CP solve; :meth:`wall_left` is the real time left before the cap.
    """

    def __init__(self, per_read_s: float, budget_s: float, wall_cap_s: float) -> None:
        if not per_read_s > 0:
            raise ValueError(f"WorkClock: per_read_s={per_read_s!r} must be > 0")
        if not budget_s > 0 or not wall_cap_s > 0:
            raise ValueError(f"WorkClock: budget_s={budget_s!r}, wall_cap_s={wall_cap_s!r} > 0")
        self.per_read_s = per_read_s
        self.budget_s = budget_s
        self.wall_cap_s = wall_cap_s
        self.now = 0.0
        self.reads = 0
        self.capped = False
        self._meters: list[tuple[Callable[[], int], float]] = []
        self._wall0 = time.perf_counter()

    @classmethod
    def for_queue(cls, queued: int, budget_s: float, wall_factor: float = 3.0) -> WorkClock:
        """The clock of one search over ``queued`` jobs; the wall cap is ``wall_factor`` x
        the budget."""
        per_read = READ_BASE_S + READ_PER_JOB_S * max(queued, 1)
        return cls(per_read, budget_s, wall_factor * budget_s)

    def meter(self, count: Callable[[], int], per_step_s: float) -> None:
        """Charge ``per_step_s`` for each step of ``count()`` (a running total read at each
        read of the clock, e.g. :attr:`.ListDecoder.ops`)."""
        self._meters.append((count, per_step_s))

    def __call__(self) -> float:
        self.reads += 1
        self.now += self.per_read_s
        if not self.capped and self.wall_left() <= 0:
            self.capped = True
            self.now += 2 * self.budget_s  # past any deadline taken from this clock
        return self.now + self.metered()

    def metered(self) -> float:
        """What the meters have charged so far."""
        return sum(count() * per for count, per in self._meters)

    def spend(self, seconds: float) -> None:
        """Charge ``seconds`` of budget (a CP solve: its deterministic time x
        :func:`cp_seconds_per_det`)."""
        self.now += max(seconds, 0.0)

    def wall(self) -> float:
        """Real seconds since the clock was made."""
        return time.perf_counter() - self._wall0

    def wall_left(self) -> float:
        """Real seconds left before the wall cap."""
        return self.wall_cap_s - self.wall()
