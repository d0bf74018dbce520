"""Local search over priority lists, decoded by the real mapper (the hybrid's incumbent).

Issue 16 (finding 6): random restarts of the priority list, decoded by the real list
scheduler, beat the CP on most instances at equal budget. Two moves, within a deadline:

- restarts: a base priority score (weighted shortest walltime, weighted smallest energy, or
  PRB's rank) times log-normal noise, sorted, list scheduled on the real nodes;
- swaps: two jobs of the incumbent's list that start at different times exchanged (near
  ones more often), each pair once per incumbent, kept when the mapped schedule is better.
  The incumbent's list is the priority list it was decoded from (``MappedSchedule.order``:
  a restart, an ordering, PRB, a CP solution decoded as a list) when ``own_list`` is on and
  it has one, else its start order. The start order of a list schedule decodes to another
  schedule, 4 % worse on 220500's first search, so swaps in it rarely beat the incumbent;
  swaps in its own list do (``bench/results/hybrid_eurora.md``, "Session 43").

Every candidate is a real, mapped schedule (:func:`.mapping.map_schedule`, compiled:
:class:`.decode.ListDecoder`), so the best of them is feasible as it stands and is handed to
the CP as its hint. A candidate is decoded to its objective only; its assignments are built
when it beats the incumbent.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Protocol

import numpy as np

from wattsched.scheduler.hybrid.mapping import MappedSchedule
from wattsched.scheduler.model import Job

Timer = Callable[[], float]


class Decoder(Protocol):
    """What the local search decodes with (:class:`.decode.ListDecoder`, or
    :class:`.scenario_search.ScenarioDecoder`: the mean over runtime scenarios)."""

    max_ewt: int

    def objective(self, jobs: Sequence[Job]) -> float:
        """The objective of ``jobs`` list scheduled."""
        ...

    def schedule(self, jobs: Sequence[Job], source: str) -> MappedSchedule:
        """``jobs`` list scheduled, with the objective of :meth:`objective`."""
        ...


_MAX_SKIPS = 200
"""Swap draws in a row without a pair worth decoding, after which a restart is tried."""


def _scores(jobs: Sequence[Job], max_ewt: int) -> list[np.ndarray]:
    """Base priority scores (higher first): wspt, wsef, PRB's rank."""
    w = np.array([max_ewt / j.ewt for j in jobs], dtype=float)
    wall = np.array([max(j.walltime, 1) for j in jobs], dtype=float)
    unit_w = np.array(
        [j.unit_power_w if j.unit_power_w is not None else float(j.unit.cores) for j in jobs]
    )
    energy = wall * np.maximum(unit_w * np.array([j.units for j in jobs]), 1.0)
    rank = np.arange(len(jobs), 0, -1, dtype=float)
    return [w / wall, w / energy, rank]


def priority_search(
    decoder: Decoder,
    order: Sequence[Job],
    incumbent: Callable[[], MappedSchedule],
    consider: Callable[[MappedSchedule], None],
    note: Callable[[str, float], None],
    *,
    deadline: float,
    timer: Timer,
    seed: int,
    sigma: float = 0.35,
    own_list: bool = True,
    restarts: float = 0.5,
) -> tuple[int, int]:
    """Restarts (``restarts`` of the time) then swaps until ``deadline``; ``order`` is PRB's.
    A candidate that beats the incumbent goes to ``consider``, any other to ``note(source,
    objective)``. Returns (tries, wins).

    A swap exchanges two jobs of the incumbent's start order that start at different times
    (two that start together mostly decode to the same schedule), each pair at most once per
    incumbent (a decode is deterministic); when no such pair is drawn in a while, a restart
    is tried instead."""
    rng = np.random.default_rng(seed)
    jobs = list(order)
    n = len(jobs)
    if n < 2:
        return 0, 0
    scores = _scores(jobs, decoder.max_ewt)
    tries = wins = 0
    restart_until = timer() + restarts * max(deadline - timer(), 0.0)

    def attempt(cand: list[Job], source: str) -> bool:
        nonlocal tries, wins
        before = incumbent().objective
        tries += 1
        objective = decoder.objective(cand)
        if not objective < before - 1e-9:
            note(source, objective)
            return False
        consider(decoder.schedule(cand, source))
        wins += 1
        return True

    def restart() -> None:
        base = scores[tries % len(scores)]
        noisy = base * np.exp(rng.normal(0.0, sigma, n))
        attempt([jobs[i] for i in np.argsort(-noisy, kind="stable")], "restart")

    while timer() < restart_until:
        restart()
    index = {j.id: k for k, j in enumerate(jobs)}
    seen: MappedSchedule | None = None
    listed: list[Job] = []
    starts: list[float] = []
    tried: set[tuple[int, int]] = set()
    skipped = 0
    while timer() < deadline:
        best = incumbent()
        if best is not seen:  # the incumbent's list, once per incumbent
            seen = best
            start = {a.job_id: a.start for a in best.assignments}
            if own_list and len(best.order) == n and set(best.order) == index.keys():
                listed = [jobs[index[jid]] for jid in best.order]
            else:
                listed = sorted(jobs, key=lambda j: (start.get(j.id, math.inf), index[j.id]))
            starts = [start.get(j.id, math.inf) for j in listed]
            tried.clear()
        a = int(rng.integers(n))
        b = min(n - 1, max(0, a + int(rng.choice([-1, 1]) * (1 + rng.geometric(0.15)))))
        pair = (min(a, b), max(a, b))
        if a == b or starts[a] == starts[b] or pair in tried:
            skipped += 1
            if skipped >= _MAX_SKIPS:
                skipped = 0
                restart()
            continue
        skipped = 0
        tried.add(pair)
        cur = list(listed)
        cur[a], cur[b] = cur[b], cur[a]
        attempt(cur, "swap")
    return tries, wins
