"""The Cloud setting's search: a large-neighbourhood search over the job-to-node assignment.

The strong Cloud model (:mod:`.milp_cp`, ``q = 10``) over all (node, job) pairs is large
(``N J L`` integer shares) and CP-SAT's own search, hinted with the HPC optimum, improves on
it slowly. With the assignment of jobs to nodes fixed, the same model keeps only ``J L``
shares and CP-SAT finds, and mostly proves, the best share profile for that assignment in a
second or two. :func:`search` therefore

1. solves the model with every job on its node in the HPC schedule (shares free: partial
   steps, several jobs per node, interleaving);
2. then releases the jobs of two nodes at a time (a node busy in the last step first: it sets
   the makespan) and lets CP-SAT reassign them between those two nodes and re-plan every
   share, the others' assignment fixed, or one job of a busy node to any node, each solve
   hinted with the best schedule, until a round improves nothing;
3. gives the rest of the budget to the full model hinted with the best schedule (which may
   still improve it) for the proven lower bound.

All sub-solves are the same model with the assignment variables fixed, so every schedule is a
Cloud schedule of the instance (same conservative thermal rows).
"""

from __future__ import annotations

import itertools
import math
import time
from typing import Any

import numpy as np

from wattsched.scheduler.thermal.instance import IntArray, ThermalInstance, makespan
from wattsched.scheduler.thermal.milp import MilpResult
from wattsched.scheduler.thermal.milp_cp import _build, _hint, _Model, canonical, min_spans

Q = 10
"""Units of a node in the Cloud setting (10 % steps)."""


def node_of(alloc: IntArray) -> np.ndarray:
    """The node each job runs on (jobs do not migrate)."""
    return np.asarray(alloc.sum(axis=2).argmax(axis=0))


def _neighbourhoods(inst: ThermalInstance, best: IntArray) -> list[list[tuple[int, ...]]]:
    """Per neighbourhood, the nodes each job may use: the jobs of two nodes between those two
    (pairs with a node busy in the last step first: it sets the makespan), then each job of a
    busy node anywhere, then the other pairs."""
    node = node_of(best)
    last = makespan(best) - 1
    busy = {int(i) for i in np.nonzero(best[:, :, last].sum(axis=1))[0]}
    every = tuple(range(inst.n_nodes))

    def pair(p: tuple[int, ...]) -> list[tuple[int, ...]]:
        return [p if i in p else (int(i),) for i in node]

    pairs = list(itertools.combinations(every, 2))
    out = [pair(p) for p in pairs if busy & set(p)]
    for j in range(inst.n_jobs):
        if int(node[j]) in busy:
            out.append([every if k == j else (int(i),) for k, i in enumerate(node)])
    return out + [pair(p) for p in pairs if not busy & set(p)]


def _sub_solve(
    base: _Model,
    inst: ThermalInstance,
    best: IntArray,
    allowed: list[tuple[int, ...]] | None,
    time_limit_s: float,
    workers: int,
) -> tuple[IntArray | None, float | None]:
    """Min makespan with job ``j`` on one of the nodes ``allowed[j]`` (``None``: anywhere),
    hinted with ``best``. Returns the schedule found (or ``None``) and the solver's bound."""
    from ortools.sat.python import cp_model

    cp = base.cp.clone()

    def var(x: Any) -> Any:
        return cp.get_int_var_from_proto_index(x.index)

    e = base.hint_vars["e"]
    for j, nodes in enumerate(allowed or []):
        cp.add(sum(var(e[i, j]) for i in nodes) == 1)
    hinted = _Model(cp, np.vectorize(var, otypes=[object])(base.a), var(base.mk), Q)
    hinted.hint_vars = {
        "e": np.vectorize(var, otypes=[object])(e),
        "used": [var(u) for u in base.hint_vars["used"]],
    }
    cp.add(hinted.mk <= makespan(best))
    _hint(hinted, inst, best)
    sv = cp_model.CpSolver()
    sv.parameters.max_time_in_seconds = max(0.1, time_limit_s)
    sv.parameters.num_workers = workers
    st = sv.solve(cp)
    if st not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None, None
    alloc = np.array([[[sv.value(x) for x in row] for row in node] for node in hinted.a], np.int64)
    return alloc, float(sv.best_objective_bound)


def search(
    inst: ThermalInstance,
    hpc: IntArray,
    time_limit_s: float = 60.0,
    workers: int = 8,
    final_share: float = 0.3,
    sub_limit_s: float = 2.0,
) -> MilpResult:
    """The best Cloud schedule found within ``time_limit_s`` from a valid HPC schedule ``hpc``
    (``q = 1``): the fixed-assignment solve, the two-node neighbourhoods, then the full model
    for ``final_share`` of the budget (module docstring). ``bound`` is the full model's proven
    lower bound (or the paper's and the thermal one); ``status`` is ``optimal`` when the
    schedule meets it."""
    t0 = time.perf_counter()
    lb = float(max(inst.makespan_lower_bound(), inst.thermal_makespan_lower_bound()))
    lb = max(lb, float(max(min_spans(inst, Q))))
    best = canonical(inst, hpc) * Q
    base = _build(inst, makespan(best), True, False)

    def left() -> float:
        return time_limit_s - (time.perf_counter() - t0)

    lns_end = (1.0 - final_share) * time_limit_s
    fixed: list[tuple[int, ...]] = [(int(i),) for i in node_of(best)]
    alloc, _ = _sub_solve(base, inst, best, fixed, min(lns_end, left()), workers)
    if alloc is not None and makespan(alloc) <= makespan(best):
        best = alloc
    improved = True
    while improved and makespan(best) > lb:
        improved = False
        for allowed in _neighbourhoods(inst, best):
            room = min(sub_limit_s, lns_end - (time.perf_counter() - t0))
            if room < 0.2:
                break
            alloc, _ = _sub_solve(base, inst, best, allowed, room, workers)
            if alloc is not None and makespan(alloc) < makespan(best):
                best, improved = alloc, True
                break
    if makespan(best) > lb and left() > 0.2:
        alloc, bound = _sub_solve(base, inst, best, None, left(), workers)
        if alloc is not None and makespan(alloc) <= makespan(best):
            best = alloc
        if bound is not None:
            lb = max(lb, math.ceil(bound - 1e-9))
    span = makespan(best)
    return MilpResult(
        "optimal" if span <= lb else "feasible",
        best,
        span,
        inst.energy(best, Q),
        lb,
        time.perf_counter() - t0,
        "cp-sat-strong-lns",
        "cloud",
    )
