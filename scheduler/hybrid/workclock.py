"""A deterministic clock for one online search: work counted instead of wall seconds.

The online search (:func:`.search.hybrid_search`) stops at a wall-clock deadline, so how
many priority lists it decodes, and what CP-SAT finds, depend on the machine and its load:
two replays of one trace with one seed differ (issue 16: 1.018 and 1.112 against PRB on
hist_400_20140403_092423, the same seed). With a :class:`WorkClock` as its timer the budget
counts work: each read of the clock costs ``per_read_s`` "seconds" (the search reads it once
per decoded list), a CP solve runs on one worker to a deterministic-time limit
(:data:`DET_PER_S` deterministic units per budget second) and costs what it used. So the
same snapshot and seed give the same plan on any machine and under any load; replays become
reproducible, and two dispatchers can be compared on one run per trace.

A wall cap still holds: once ``wall_cap_s`` real seconds have passed the clock jumps past
any deadline of its budget (the search then stops as on a time-out), and a CP solve never
runs past the cap. That path is not deterministic; it is there so that a slow machine cannot
stretch a control cycle without limit.
"""

from __future__ import annotations

import time

DET_PER_S = 1.0
"""CP-SAT deterministic time units granted per second of budget (one worker)."""
READ_BASE_S = 1e-5
"""Cost of one read of the clock, whatever the queue (the loop around a decode)."""
READ_PER_JOB_S = 1e-6
"""Cost of one read per queued job. The three constants are calibrated on the benchmarks'
2-core machine so that an online search takes about its wall budget there: on
hist_400_20140401_000242 a 0.9-s budget took a median 0.79 s of wall time, 0.32 s of it in
CP-SAT (the swap loop's bookkeeping and the winners' full schedules included)."""


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
        self._wall0 = time.perf_counter()

    @classmethod
    def for_queue(cls, queued: int, budget_s: float, wall_factor: float = 3.0) -> WorkClock:
        """The clock of one search over ``queued`` jobs; the wall cap is ``wall_factor`` x
        the budget."""
        per_read = READ_BASE_S + READ_PER_JOB_S * max(queued, 1)
        return cls(per_read, budget_s, wall_factor * budget_s)

    def __call__(self) -> float:
        self.reads += 1
        self.now += self.per_read_s
        if not self.capped and self.wall_left() <= 0:
            self.capped = True
            self.now += 2 * self.budget_s  # past any deadline taken from this clock
        return self.now

    def spend(self, seconds: float) -> None:
        """Charge ``seconds`` of budget (a CP solve's deterministic time / DET_PER_S)."""
        self.now += max(seconds, 0.0)

    def wall(self) -> float:
        """Real seconds since the clock was made."""
        return time.perf_counter() - self._wall0

    def wall_left(self) -> float:
        """Real seconds left before the wall cap."""
        return self.wall_cap_s - self.wall()
