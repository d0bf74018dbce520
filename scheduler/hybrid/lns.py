"""Large-neighbourhood search on the CP from conflict sets (issue 16, "search for real").

Starting from the incumbent (the best real schedule so far: an ordering, the local search or
a CP solution, decoded by the real mapper), each move:

1. takes the incumbent's pooled starts (:func:`pooled_starts`, the pooled list schedule in
   the order of its real starts);
2. frees a neighbourhood (:func:`conflict_neighbourhood`): the jobs that overlap at a
   crowded instant on the pooled resource that binds there (power or a node resource: a
   conflict set, those jobs cannot all move earlier together), plus a random window of
   consecutive jobs of the schedule from that instant; or, every third move, a plain
   window (the rolling windows of the earlier search);
3. pins every other job at its pooled start and lets CP-SAT re-time the freed ones for a
   short slice (``lns_time_s``, ``workers`` threads), hinted with the incumbent;
4. decodes the CP solution with the real mapper (its starts as release times and events,
   the pinned jobs released at their real starts), as a priority list, and with ``serial``
   by the serial scheme in the order of its starts (:func:`.serial.serial_schedule`: each
   job at the earliest time it fits beside those before it, the closest of the three to the
   CP's own timing); a decoded schedule is kept when its real objective beats the incumbent.

Every candidate goes through the same real mapper, so the incumbent stays feasible on the
real nodes and the cap; the search stops at the deadline.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

import numpy as np

from wattsched.scheduler.hybrid.cpmodel import solve_pooled
from wattsched.scheduler.hybrid.decode import ListDecoder
from wattsched.scheduler.hybrid.mapping import MappedSchedule, map_schedule
from wattsched.scheduler.hybrid.problem import N_RES, POWER, PooledProblem, pooled_list_schedule
from wattsched.scheduler.hybrid.serial import SerialDecoder, serial_schedule
from wattsched.scheduler.mapper import StateCache
from wattsched.scheduler.model import Job, Snapshot

Timer = Callable[[], float]
log = logging.getLogger(__name__)


def pooled_starts(problem: PooledProblem, sched: MappedSchedule) -> list[int]:
    """A pooled-feasible start per job from a real schedule: pooled list scheduling in the
    order of its starts (the rounded real starts themselves may overlap on the grain)."""
    raw = problem.starts_of(sched.assignments)
    order = sorted(range(len(raw)), key=lambda i: (raw[i] if raw[i] is not None else 1 << 60, i))
    starts = pooled_list_schedule(problem, order)
    if starts is not None:
        return starts
    out = []
    for i, s in enumerate(raw):
        hi = problem.horizon - problem.duration[i]
        out.append(min(max(problem.release[i], s if s is not None else hi), hi))
    return out


def conflict_neighbourhood(
    problem: PooledProblem, starts: Sequence[int], rng: np.random.Generator, size: int
) -> set[int]:
    """Job indices to free: a conflict set at a crowded instant plus a window after it.

    The instants are the jobs' pooled starts; at each, the load of every pooled resource
    (waiting jobs running then, running jobs, cap dips left out) over its capacity; an
    instant is drawn among the most loaded quarter of those at which two jobs or more run, its
    binding resource is the most loaded one, the conflict set the jobs running then with a
    demand on it (all the jobs running then, if fewer than two have one). The window adds the
    jobs that start next (in start order) up to ``size`` jobs in all.
    """
    n = len(problem.jobs)
    if n <= size:
        return set(range(n))
    s = np.asarray(starts, dtype=np.int64)
    d = np.asarray(problem.duration, dtype=np.int64)
    dem = np.asarray(problem.demand, dtype=float).reshape(n, N_RES)
    cap = np.asarray(problem.capacity, dtype=float)
    times = np.unique(s)
    on = (s[None, :] <= times[:, None]) & (times[:, None] < (s + d)[None, :])
    load = on.astype(float) @ dem
    for end, use in problem.fixed:
        load[times < end] += np.asarray(use, dtype=float)
    usable = cap > 0
    if not problem.power_limited:
        usable[POWER] = False
    ratio = np.where(usable[None, :], load / np.where(cap > 0, cap, 1.0)[None, :], 0.0)
    crowd = ratio.max(axis=1)
    shared = on.sum(axis=1) >= 2  # instants at which jobs run together (a conflict is possible)
    pool = np.flatnonzero(shared) if shared.any() else np.arange(len(times))
    top = pool[np.argsort(-crowd[pool], kind="stable")][: max(1, len(pool) // 4)]
    k = int(rng.choice(top))
    res = int(ratio[k].argmax())
    members = [i for i in np.flatnonzero(on[k]) if dem[i, res] > 0]
    if len(members) < 2:  # one job alone on the binding resource: all that run then
        members = list(np.flatnonzero(on[k]))
    rng.shuffle(members)
    chosen = set(int(i) for i in members[: max(2, (2 * size) // 3)])
    by_start = sorted(range(n), key=lambda i: (starts[i], i))
    first = int(np.searchsorted(s[by_start], times[k]))
    for i in by_start[first:]:
        if len(chosen) >= size:
            break
        chosen.add(i)
    return chosen


def window_neighbourhood(starts: Sequence[int], offset: int, size: int) -> set[int]:
    """``size`` consecutive jobs in start order from position ``offset`` (wrapping)."""
    n = len(starts)
    by_start = sorted(range(n), key=lambda i: (starts[i], i))
    return {by_start[(offset + k) % n] for k in range(min(size, n))}


def lns(
    snap: Snapshot,
    cache: StateCache,
    problem: PooledProblem,
    jobs: Sequence[Job],
    rank: dict[str, int],
    *,
    deadline: float,
    timer: Timer,
    incumbent: Callable[[], MappedSchedule],
    consider: Callable[[MappedSchedule], None],
    window: int = 32,
    slice_s: float = 0.15,
    workers: int = 8,
    seed: int = 0,
    conflicts: bool = True,
    serial: bool = False,
    decoder: ListDecoder | None = None,
    serial_decoder: SerialDecoder | None = None,
    patience: int = 0,
) -> dict[str, float | int]:
    """Moves until ``deadline`` (see the module doc); ``jobs`` are the problem's jobs.

    ``decoder``: the compiled list decode of ``snap`` for the ``-list`` decodes (the same
    schedules as :func:`.mapping.map_schedule`, faster); ``serial_decoder`` the compiled
    serial one for the ``-serial`` decodes. Returns figures: ``lns_moves``,
    ``lns_improvements``, ``lns_conflict_moves`` (moves from a conflict set),
    ``lns_conflict_wins``, ``lns_solver_s``.
    """
    n = len(problem.jobs)
    rng = np.random.default_rng(seed)
    size = max(2, min(window, n))
    moves = wins = cmoves = cwins = 0
    solver_s = 0.0
    offset = 0
    reserve = 0.0  # the cost of decoding one solution, learnt on the way
    failed = 0  # moves in a row that did not beat the incumbent
    while timer() + reserve + 0.02 < deadline:
        best = incumbent()
        real = {a.job_id: a.start for a in best.assignments}
        if any(j.id not in real for j in problem.jobs):
            break
        pooled = pooled_starts(problem, best)
        from_conflict = conflicts and moves % 3 != 2
        if from_conflict:
            free = conflict_neighbourhood(problem, pooled, rng, size)
        else:
            free = window_neighbourhood(pooled, offset, size)
            offset = (offset + max(1, size // 2)) % n
        fixed = {i: pooled[i] for i in range(n) if i not in free}
        try:
            out = solve_pooled(
                problem,
                time_limit_s=max(min(slice_s, deadline - timer() - reserve), 1e-3),
                workers=workers,
                hint=pooled,
                fixed_starts=fixed,
                seed=seed + moves,
                strategy=False,
            )
        except (RuntimeError, ValueError, IndexError, MemoryError) as exc:
            log.warning("hybrid: CP-SAT failed in an LNS move (%s)", exc)
            break
        moves += 1
        cmoves += from_conflict
        solver_s += out.seconds
        if out.starts is None:
            continue
        t0 = timer()
        release = {
            j.id: (problem.now + out.starts[i] * problem.grain) if i in free else real[j.id]
            for i, j in enumerate(problem.jobs)
        }
        order = sorted(jobs, key=lambda j: (release[j.id], rank[j.id]))
        before = best.objective
        tag = "lnsc" if from_conflict else "lnsw"
        consider(map_schedule(snap, cache, order, release=release, source=f"{tag}{moves}",
                              wake_on_release=True))  # fmt: skip
        if timer() < deadline:
            name = f"{tag}{moves}-list"
            consider(decoder.schedule(order, name) if decoder is not None
                     else map_schedule(snap, cache, order, release=None, source=name))  # fmt: skip
        if serial and timer() < deadline:
            cand = serial_schedule(snap, cache, order, source=f"{tag}{moves}-serial",
                                   deadline=deadline, timer=timer,
                                   decoder=serial_decoder)  # fmt: skip
            if cand is not None:
                consider(cand)
        reserve = max(reserve, timer() - t0)
        if incumbent().objective < before - 1e-9:
            wins += 1
            cwins += from_conflict
            failed = 0
        else:
            failed += 1
            if patience and failed >= patience:
                break
    return {
        "lns_moves": moves,
        "lns_improvements": wins,
        "lns_conflict_moves": cmoves,
        "lns_conflict_wins": cwins,
        "lns_solver_s": round(solver_s, 3),
        "lns_free": size,
    }
