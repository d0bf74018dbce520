"""The daemon's period: run the cycle every ``cycle_seconds`` on the monotonic clock.

APScheduler 3's interval trigger computes its next run from the wall clock: after the wall
clock steps back an hour (an NTP correction, an operator's ``date -s``), no cycle ran for an
hour while ``/health`` said 200. This small loop counts the period on ``time.monotonic``
(through ``threading.Event.wait``, itself monotonic), so a wall-clock step changes nothing;
runs that would overlap are coalesced (a late cycle is followed by the next one a full period
later, never by a burst). On-demand cycles go through :meth:`Service.run_now`.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

log = logging.getLogger(__name__)


class CycleTimer:
    """Calls ``fn`` at once, then every ``period`` seconds, in a daemon thread.

    When ``fn`` returns a number of seconds, the next call comes after at most that long (a
    dispatcher's next planned start), never later than the period.
    """

    def __init__(
        self,
        fn: Callable[[], object],
        period: float,
        *,
        monotonic: Callable[[], float] = time.monotonic,
        name: str = "wattsched-cycle",
    ) -> None:
        if not period > 0:
            raise ValueError(f"period={period!r} must be > 0 seconds")
        self.fn = fn
        self.period = period
        self.monotonic = monotonic
        self.name = name
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.runs = 0

    def start(self) -> None:
        """Start the loop (the first call happens now)."""
        if self._thread is not None:
            raise RuntimeError("CycleTimer already started")
        self._thread = threading.Thread(target=self._loop, name=self.name, daemon=True)
        self._thread.start()

    def stop(self, timeout: float | None = None) -> None:
        """Stop the loop and wait for a running call to finish."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def _loop(self) -> None:
        due = self.monotonic()
        while not self._stop.is_set():
            sooner: object = None
            try:
                sooner = self.fn()
            except Exception:  # the function logs its own failures; the period goes on
                log.exception("periodic call failed")
            self.runs += 1
            due += self.period
            now = self.monotonic()
            if due < now:  # late (a long cycle): skip the missed periods
                due = now
            if isinstance(sooner, int | float) and not isinstance(sooner, bool) and sooner >= 0:
                due = min(due, now + float(sooner))
            self._stop.wait(due - now)
