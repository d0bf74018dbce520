"""The serial decoder's part of the search (:func:`serial_search`): lists decoded serially,
then swaps of two jobs near each other in the best of them, each swap decoded serially and
kept when its schedule is better (:mod:`.serial`; on the compiled decoder's entity rows, a
schedule built only for a swap kept)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from wattsched.scheduler.hybrid.mapping import MappedSchedule
from wattsched.scheduler.hybrid.serial import SerialDecoder, serial_schedule
from wattsched.scheduler.mapper import StateCache
from wattsched.scheduler.model import Job, Snapshot

SWAP_REACH = 20
"""How far apart in the list two jobs a swap exchanges may be."""


def serial_search(
    snap: Snapshot,
    cache: StateCache,
    order: Sequence[Job],
    best: MappedSchedule,
    consider: Callable[[MappedSchedule], None],
    *,
    deadline: float,
    timer: Callable[[], float],
    seed: int = 0,
    decoder: SerialDecoder | None = None,
    polish: bool = False,
    lists: Sequence[tuple[str, Sequence[Job]]] = (),
) -> tuple[int, int]:
    """The serial decoder's part of the search, until ``deadline``: PRB's ``order``, the
    incumbent's list (its start order when it has none) and the named ``lists`` (sources
    ``serial-NAME``) decoded serially, then swaps of two jobs at most ``SWAP_REACH`` apart in
    the best of those lists, a swap kept when its serial schedule is better. The starting
    lists' schedules and each kept swap's go to ``consider``; ``decoder``: the compiled
    decode of this snapshot (its swaps then on entity rows, a schedule made only when kept).
    ``polish``: the incumbent's list only, the sources named after the incumbent's
    (``lnsc7-serial+serial-swap``: swaps that refined an LNS move's schedule). Returns
    ``(decodes, swaps kept)``."""
    by_id = {j.id: j for j in order}
    ids = best.order or [a.job_id for a in sorted(best.assignments, key=lambda a: a.start)]
    own = [by_id[i] for i in ids if i in by_id]
    listed = {j.id for j in own}
    own += [j for j in order if j.id not in listed]  # every queued job, once
    current: list[Job] = []
    current_obj = math.inf
    tries = wins = 0
    prefix = f"{best.source}+serial" if polish else "serial"
    starts = [(f"{prefix}-best", own)] if polish else [("serial-prb", list(order)),
                                                       ("serial-best", own)]  # fmt: skip
    starts += [(f"serial-{name}", list(jobs)) for name, jobs in lists]
    for name, jobs in starts:
        cand = serial_schedule(snap, cache, jobs, source=name, deadline=deadline, timer=timer,
                               decoder=decoder)  # fmt: skip
        if cand is None:
            return tries, wins
        tries += 1
        consider(cand)
        if cand.objective < current_obj:
            current, current_obj = jobs, cand.objective
    rng = np.random.default_rng(seed)
    n = len(current)
    if decoder is not None and decoder.compiled:  # on the entity rows: a schedule if it wins
        perm = decoder.decoder.perm(current)
        known = decoder.run(perm)[1]  # the current list's places: a swap at i keeps i's prefix
        while n > 1 and timer() < deadline:
            i = int(rng.integers(0, n - 1))
            j = min(n - 1, i + int(rng.integers(1, SWAP_REACH + 1)))
            cand_perm = perm.copy()
            cand_perm[i], cand_perm[j] = cand_perm[j], cand_perm[i]
            objective, out = decoder.run(cand_perm, i, known)
            tries += 1
            if objective < current_obj:
                perm, current_obj, known = cand_perm, objective, out
                wins += 1
                consider(decoder.decoder.mapped(cand_perm, out, f"{prefix}-swap"))
        return tries, wins
    while n > 1 and timer() < deadline:
        i = int(rng.integers(0, n - 1))
        j = min(n - 1, i + int(rng.integers(1, SWAP_REACH + 1)))
        cand_list = current.copy()
        cand_list[i], cand_list[j] = cand_list[j], cand_list[i]
        cand = serial_schedule(snap, cache, cand_list, source=f"{prefix}-swap",
                               deadline=deadline, timer=timer, decoder=decoder)  # fmt: skip
        if cand is None:
            break
        tries += 1
        if cand.objective < current_obj:
            current, current_obj = cand_list, cand.objective
            wins += 1
            consider(cand)
    return tries, wins
