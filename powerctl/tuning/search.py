"""NSGA-II (pymoo) over the HGFS parameter vector, each candidate scored by replay.

:func:`tune` evolves a population on the training workload, keeps the final non-dominated
set, and replays each of its points on the validation workload (and the idle-timeout
baselines on both), so that the administrator picks on data the search did not see
(:mod:`.front`). Candidates of a generation are replayed in parallel: in worker processes on
this machine (each loads the workload once), or on a Dask cluster when given its address.
A seed makes a run repeatable (the same front for the same seed, workers or not).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from pymoo.algorithms.moo.nsga2 import NSGA2
from pymoo.core.callback import Callback
from pymoo.core.problem import Problem
from pymoo.optimize import minimize
from pymoo.util.nds.non_dominated_sorting import NonDominatedSorting

from wattsched.powerctl import fuzzy_kernels
from wattsched.powerctl.hgfs import HGFSParams
from wattsched.powerctl.tuning.encoding import (
    bounds,
    decode,
    encode,
    idle_timeout_like,
    n_genes,
)
from wattsched.powerctl.tuning.evaluate import Objectives, Workload, evaluate, saving_ceilings
from wattsched.powerctl.tuning.measures import PHYSICAL, TUNED
from wattsched.scheduler import fit_kernels

Progress = Callable[[int, int], None]
"""Called as ``progress(generation, generations)`` after each generation."""

BASELINE_IDLE_S = (300, 900, 1800, 3600)
"""The idle-timeout settings compared with every front (5, 15, 30, 60 minutes)."""

_WORKLOAD: Workload | None = None
_DISPATCHER = "easy"


def _warm() -> None:
    """Load the compiled kernels a HGFS replay calls (the mapper's and the fuzzy rules'):
    once at a worker's start, not inside its first replay (docs/performance.md)."""
    fit_kernels.warm()
    fuzzy_kernels.warm()


def _init_worker(workload: Workload, dispatcher: str) -> None:
    global _WORKLOAD, _DISPATCHER
    _WORKLOAD, _DISPATCHER = workload, dispatcher
    _warm()


def _score(args: tuple[list[float], int]) -> Objectives:
    x, n_sets = args
    assert _WORKLOAD is not None
    return evaluate(_WORKLOAD, decode(x, n_sets), dispatcher=_DISPATCHER)


def score_remote(workload: Workload, x: list[float], n_sets: int, dispatcher: str) -> Objectives:
    """One candidate on ``workload`` (what a Dask worker runs; loading the kernels again
    costs about 25 us once they are loaded)."""
    _warm()
    return evaluate(workload, decode(x, n_sets), dispatcher=dispatcher)


class Evaluator:
    """Scores candidate vectors on one workload: serially, in processes, or on Dask.

    A replay is deterministic, so vectors that decode to parameters already scored (the
    integer genes round, and the front is scored again at the end) are not replayed again:
    ``evaluations`` counts the replays run."""

    def __init__(
        self,
        workload: Workload,
        *,
        n_sets: int,
        dispatcher: str = "easy",
        workers: int = 1,
        dask_scheduler: str | None = None,
    ) -> None:
        self.workload, self.n_sets, self.dispatcher = workload, n_sets, dispatcher
        self.evaluations = 0
        self._memo: dict[HGFSParams, Objectives] = {}
        self._pool: ProcessPoolExecutor | None = None
        self._client: Any = None
        self._remote_workload: Any = None
        if dask_scheduler is not None:
            try:
                from distributed import Client
            except ImportError as exc:  # pragma: no cover - dependency present
                raise RuntimeError("--dask-scheduler needs dask.distributed installed") from exc
            self._client = Client(dask_scheduler)
            self._remote_workload = self._client.scatter(workload, broadcast=True)
        elif workers > 1:
            self._pool = ProcessPoolExecutor(
                workers, initializer=_init_worker, initargs=(workload, dispatcher)
            )
        else:
            _warm()

    def __call__(self, xs: Sequence[Sequence[float]]) -> list[Objectives]:
        rows = [list(map(float, x)) for x in xs]
        keys = [decode(r, self.n_sets) for r in rows]
        todo: dict[HGFSParams, list[float]] = {}
        for k, r in zip(keys, rows, strict=True):
            if k not in self._memo:
                todo.setdefault(k, r)
        for k, o in zip(todo, self._replay(list(todo.values())), strict=True):
            self._memo[k] = o
        return [self._memo[k] for k in keys]

    def _replay(self, rows: list[list[float]]) -> list[Objectives]:
        self.evaluations += len(rows)
        if not rows:
            return []
        if self._client is not None:
            futures = self._client.map(
                score_remote, [self._remote_workload] * len(rows), rows,
                [self.n_sets] * len(rows), [self.dispatcher] * len(rows), pure=False,
            )  # fmt: skip
            return list(self._client.gather(futures))
        if self._pool is not None:
            return list(self._pool.map(_score, [(r, self.n_sets) for r in rows]))
        return [
            evaluate(self.workload, decode(r, self.n_sets), dispatcher=self.dispatcher)
            for r in rows
        ]

    def close(self) -> None:
        """Stop the workers (or the Dask client)."""
        if self._pool is not None:
            self._pool.shutdown()
        if self._client is not None:
            self._client.close()


class _HGFSProblem(Problem):
    def __init__(self, evaluator: Evaluator, n_sets: int) -> None:
        lo, hi = bounds(n_sets)
        super().__init__(n_var=n_genes(n_sets), n_obj=3, xl=lo, xu=hi)
        self.evaluator = evaluator

    def _evaluate(self, x: np.ndarray, out: dict[str, Any], *args: Any, **kwargs: Any) -> None:
        out["F"] = np.array([o.minimised() for o in self.evaluator(x.tolist())])


class _Report(Callback):
    def __init__(self, progress: Progress | None, generations: int) -> None:
        super().__init__()
        self.progress, self.generations = progress, generations

    def notify(self, algorithm: Any) -> None:
        if self.progress is not None:
            self.progress(int(algorithm.n_gen), self.generations)


@dataclass
class FrontPoint:
    """One non-dominated configuration and its objectives."""

    x: list[float]
    train: Objectives
    validation: Objectives | None = None


@dataclass
class TuneResult:
    """The front, the baselines, and how the run went."""

    points: list[FrontPoint]
    baselines: dict[int, tuple[Objectives, Objectives]] = field(default_factory=dict)
    """``idle_s -> (train, validation)``."""
    evaluations: int = 0
    n_sets: int = 3
    ceiling: dict[str, float] = field(default_factory=dict)
    """``part -> ``:func:`~wattsched.powerctl.tuning.evaluate.saving_ceiling` on train and
    validation, in the tuned measure (:data:`~.measures.TUNED`): what there is to save on
    that part without delaying jobs."""
    ceiling_physical: dict[str, float] = field(default_factory=dict)
    """The same in the physical measure (:data:`~.measures.PHYSICAL`)."""


def seeds(n_sets: int) -> list[HGFSParams]:
    """The configurations every search starts from (the rest of the first population is
    random): the paper's default policy, and HGFS acting as each idle-timeout baseline
    (:func:`~wattsched.powerctl.tuning.encoding.idle_timeout_like`), so that the front is
    never worse than the default or the baselines on the training data."""
    out = [HGFSParams()] if n_sets == len(HGFSParams().centers) else []
    for idle in BASELINE_IDLE_S:
        like = idle_timeout_like(idle, n_sets)
        if like is not None:
            out.append(like)
    return out


def tune(
    train: Workload,
    validation: Workload,
    *,
    population: int = 24,
    generations: int = 10,
    seed: int = 1,
    n_sets: int = 3,
    workers: int = 1,
    dispatcher: str = "easy",
    dask_scheduler: str | None = None,
    progress: Progress | None = None,
) -> TuneResult:
    """NSGA-II on ``train``; the front replayed on ``validation``; baselines on both."""
    if population < 4 or generations < 1:
        raise ValueError(
            f"population={population!r} must be >= 4, generations={generations!r} >= 1"
        )
    workers = max(1, min(workers, os.cpu_count() or 1)) if dask_scheduler is None else workers
    ev = Evaluator(train, n_sets=n_sets, dispatcher=dispatcher, workers=workers,
                   dask_scheduler=dask_scheduler)  # fmt: skip
    try:
        rng = np.random.default_rng(seed)
        lo, hi = bounds(n_sets)
        start = rng.uniform(lo, hi, size=(population, n_genes(n_sets)))
        for i, p in enumerate(seeds(n_sets)[:population]):
            start[i] = np.clip(encode(p), lo, hi)
        algo = NSGA2(pop_size=population, sampling=start, eliminate_duplicates=True)
        res = minimize(
            _HGFSProblem(ev, n_sets), algo, ("n_gen", generations), seed=seed,
            callback=_Report(progress, generations), verbose=False,
        )  # fmt: skip
        pop_x = np.atleast_2d(res.pop.get("X"))
        pop_f = np.atleast_2d(res.pop.get("F"))
        front = NonDominatedSorting().do(pop_f, only_non_dominated_front=True)
        xs = [list(map(float, pop_x[i])) for i in sorted(front, key=lambda i: tuple(pop_f[i]))]
        train_objs = ev(xs)
        result = TuneResult([FrontPoint(x, o) for x, o in zip(xs, train_objs, strict=True)],
                            n_sets=n_sets)  # fmt: skip
    finally:
        ev.close()
    val = Evaluator(validation, n_sets=n_sets, dispatcher=dispatcher, workers=workers,
                    dask_scheduler=dask_scheduler)  # fmt: skip
    try:
        for p, o in zip(result.points, val([p.x for p in result.points]), strict=True):
            p.validation = o
    finally:
        val.close()
    for idle in BASELINE_IDLE_S:
        result.baselines[idle] = (
            evaluate(train, idle_s=idle, dispatcher=dispatcher),
            evaluate(validation, idle_s=idle, dispatcher=dispatcher),
        )
    for part, workload in (("train", train), ("validation", validation)):
        both = saving_ceilings(workload, dispatcher)
        result.ceiling[part], result.ceiling_physical[part] = both[TUNED], both[PHYSICAL]
    result.evaluations = ev.evaluations + val.evaluations
    return result
