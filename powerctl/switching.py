"""Carrying out power commands: journaled, in parallel, retried by a declared policy.

:class:`Switcher` sends a batch of ``(node, on)`` commands through a :class:`PowerDriver`:

* the caller journals every command ``pending`` before :meth:`Switcher.run` and ``done`` or
  ``failed`` after (:func:`wattsched.daemon.acting.apply_power_policy`), as starts are;
* up to ``max_parallel`` commands run at once (a thread pool: each is a wait on a BMC);
* a temporary failure (a BMC that does not answer, a command past its limit) is retried with
  exponential back-off (tenacity: ``attempts`` tries); a permanent one (refused password,
  changed host key, unknown BMC) is not;
* each command's outcome and duration are returned for the book, the metrics and the log.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from tenacity import (
    Retrying,
    retry_if_exception,
    stop_after_attempt,
    wait_exponential,
)

from wattsched.connectors.base import ConnectorError
from wattsched.powerctl.drivers.base import (
    PowerCommandError,
    PowerCommandTimeout,
    PowerDriver,
    PowerDriverConfigError,
)
from wattsched.scheduler.slots import new as _new
from wattsched.scheduler.slots import slot_setters

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class SwitchResult:
    """One command's outcome."""

    node: str
    on: bool
    seconds: float
    attempts: int
    error: ConnectorError | None = None

    @property
    def ok(self) -> bool:
        """True when the driver accepted the command."""
        return self.error is None

    @property
    def outcome_unknown(self) -> bool:
        """The command may have reached the node (it timed out): the node's state is unknown."""
        return isinstance(self.error, PowerCommandTimeout)


_sr_node, _sr_on, _sr_seconds, _sr_attempts, _sr_error = slot_setters(SwitchResult)


def switched(node: str, on: bool, seconds: float, attempts: int) -> SwitchResult:
    """``SwitchResult(node, on, seconds, attempts)`` (no error), made by setting its slots
    directly rather than through the frozen dataclass's ``__init__`` (one
    ``object.__setattr__`` per field; a replay switches a node thousands of times)."""
    r = _new(SwitchResult)
    _sr_node(r, node)
    _sr_on(r, on)
    _sr_seconds(r, seconds)
    _sr_attempts(r, attempts)
    _sr_error(r, None)
    return r


def _temporary(exc: BaseException) -> bool:
    return isinstance(exc, PowerCommandError) and exc.temporary


class Switcher:
    """Sends power commands through ``driver``; see the module docstring."""

    def __init__(
        self,
        driver: PowerDriver,
        *,
        max_parallel: int = 16,
        attempts: int = 3,
        backoff_s: float = 1.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if max_parallel < 1 or attempts < 1 or backoff_s < 0:
            raise ValueError(
                f"max_parallel={max_parallel!r} and attempts={attempts!r} must be >= 1, "
                f"backoff_s={backoff_s!r} >= 0"
            )
        self.driver = driver
        self.max_parallel = max_parallel
        self.attempts = attempts
        self.backoff_s = backoff_s
        self._sleep = sleep

    def _one(
        self, node: str, on: bool, *, tried: int = 0, since: float | None = None
    ) -> SwitchResult:
        t0 = time.perf_counter() if since is None else since
        if not tried:
            # The first try needs no retry machinery (most commands end there): the policy
            # takes over after a temporary failure, with the attempts and waits it would have.
            try:
                self.driver.switch(node, on)
                return switched(node, on, time.perf_counter() - t0, 1)
            except PowerCommandError as exc:
                if not exc.temporary or self.attempts == 1:
                    return self._failed(node, on, 1, exc, t0)
            except PowerDriverConfigError as exc:
                return self._failed(node, on, 1, PowerCommandError(node, str(exc)), t0)
            except ConnectorError as exc:
                return self._failed(node, on, 1, exc, t0)
            tried = 1
        tries = tried
        self._sleep(self.backoff_s)  # after the failed first try
        retrying = Retrying(
            stop=stop_after_attempt(self.attempts - tried),
            # The waits go on from the ones before (backoff, 2 x backoff, ...).
            wait=wait_exponential(
                multiplier=self.backoff_s * 2**tried, max=30 * max(self.backoff_s, 0.01)
            ),
            retry=retry_if_exception(_temporary),
            sleep=self._sleep,
            reraise=True,
        )
        try:
            for attempt in retrying:
                with attempt:
                    tries += 1
                    self.driver.switch(node, on)
        except (ConnectorError, PowerDriverConfigError) as exc:
            err = exc if isinstance(exc, ConnectorError) else PowerCommandError(node, str(exc))
            return self._failed(node, on, tries, err, t0)
        return SwitchResult(node, on, time.perf_counter() - t0, tries)

    @staticmethod
    def _failed(node: str, on: bool, tries: int, err: ConnectorError, t0: float) -> SwitchResult:
        log.warning(
            "power %s of node %s failed after %d attempt(s): %s",
            "on" if on else "off", node, tries, err,
        )  # fmt: skip
        return SwitchResult(node, on, time.perf_counter() - t0, tries, err)

    def run(self, commands: Sequence[tuple[str, bool]]) -> list[SwitchResult]:
        """Send ``commands`` (in parallel); their results, in the same order.

        A driver that can send a batch at once (``switch_batch``: ipmi-ssh) gets the first
        try of every command in one go; the commands that failed for a temporary reason are
        then retried one by one, with the attempts left.
        """
        if not commands:
            return []
        batch = getattr(self.driver, "switch_batch", None)
        if batch is not None and len(commands) > 1:
            t0 = time.perf_counter()
            first = batch(commands)
            if first is not None:
                return self._after_batch(commands, first, t0)
        if len(commands) == 1 or self.max_parallel == 1:
            return [self._one(n, on) for n, on in commands]
        with ThreadPoolExecutor(max_workers=min(self.max_parallel, len(commands))) as pool:
            return list(pool.map(lambda c: self._one(*c), commands))

    def _after_batch(
        self,
        commands: Sequence[tuple[str, bool]],
        first: Mapping[str, PowerCommandError | None],
        t0: float,
    ) -> list[SwitchResult]:
        out: dict[int, SwitchResult] = {}
        again: list[int] = []
        for i, (node, on) in enumerate(commands):
            err = first.get(node)
            if err is None:
                out[i] = SwitchResult(node, on, time.perf_counter() - t0, 1)
            elif err.temporary and self.attempts > 1:
                again.append(i)
            else:
                log.warning("power %s of node %s failed: %s", "on" if on else "off", node, err)
                out[i] = SwitchResult(node, on, time.perf_counter() - t0, 1, err)
        if again:
            workers = min(self.max_parallel, len(again))
            with ThreadPoolExecutor(max_workers=workers) as pool:
                done = pool.map(
                    lambda i: self._one(commands[i][0], commands[i][1], tried=1, since=t0), again
                )
                out.update(zip(again, done, strict=True))
        return [out[i] for i in range(len(commands))]
