"""The two heuristics the paper compares with its MILP (Sect. 6.4.4), HPC setting.

Both simulate the discrete instance step by step (:class:`ThermalInstance`) and never let an
outlet temperature pass the threshold: a node whose next temperature would pass it is
suspended for the step (no DVFS, as in the paper's experiments).

- **Coolest** (Moore et al. 2005; Tang et al. 2008): jobs in the given order; whenever a node is
  free the next job goes to the coolest free node. Each node regulates itself alone: it runs
  unless its own next temperature would pass the threshold (checked with every other node that
  has work assumed running, then again after the suspended ones are removed: recirculation
  only adds heat, so the check stays safe).
- **Spatio-Temporal** (Sun, Stolf, Pierson, FGCS 2017): thermal-aware load balancing. A job's
  thermal-aware load on a node is its work divided by the duty cycle the node can sustain at
  the job's power under the threshold (steady state with the machine's mean recirculation);
  jobs, longest thermal-aware load first, go to the node whose total thermal-aware load stays
  the smallest (LPT). The temperatures are regulated in concert: each step the nodes are
  admitted in order of their remaining thermal-aware load (the most loaded first, as it decides
  the makespan) while every admitted node stays under the threshold.
"""

from __future__ import annotations

import numpy as np

from wattsched.scheduler.thermal.instance import TEMP_TOL, IntArray, ThermalInstance
from wattsched.scheduler.thermal.model import FloatArray


class HeuristicStuck(RuntimeError):
    """A heuristic ran past its step limit (a node can never run a job under the threshold)."""


def _next_temps(inst: ThermalInstance, t_out: FloatArray, power: FloatArray) -> FloatArray:
    target = inst.t_sup + (inst.r * np.eye(inst.n_nodes) + inst.d) @ power
    return target + (t_out - target) * inst.f


def unrunnable_jobs(inst: ThermalInstance) -> list[int]:
    """Jobs that pass the threshold in one step even alone on a cold node (no schedule)."""
    rise = (1.0 - inst.f) * (inst.r + float(np.diag(inst.d).max())) * (inst.power + inst.p_idle)
    return [int(j) for j in np.nonzero(inst.t_sup + rise > inst.t_thresh + TEMP_TOL)[0]]


def _check_runnable(inst: ThermalInstance) -> None:
    bad = unrunnable_jobs(inst)
    if bad:
        raise HeuristicStuck(f"jobs {bad} pass the threshold even alone on a cold node")


def _limit(inst: ThermalInstance) -> int:
    return 20 * int(inst.work.sum()) + 100


def coolest(inst: ThermalInstance) -> IntArray:
    """The Coolest heuristic's schedule, ``alloc[i, j, t]`` in {0, 1}."""
    _check_runnable(inst)
    n = inst.n_nodes
    waiting = list(range(inst.n_jobs))
    left = inst.work.copy()
    current = [-1] * n
    t_out = np.full(n, inst.t_sup)
    cols: list[IntArray] = []
    while waiting or any(c >= 0 for c in current):
        if len(cols) > _limit(inst):
            raise HeuristicStuck(f"coolest: no end after {len(cols)} steps")
        for i in sorted((i for i in range(n) if current[i] < 0), key=lambda i: t_out[i]):
            if not waiting:
                break
            current[i] = waiting.pop(0)
        has_job = np.array([c >= 0 for c in current])
        runs = has_job.copy()
        while True:
            power = np.array(
                [inst.power[current[i]] + inst.p_idle if runs[i] else 0.0 for i in range(n)]
            )
            hot = runs & (_next_temps(inst, t_out, power) > inst.t_thresh + TEMP_TOL)
            # an idle node only warms by recirculation, far below the threshold
            if not hot.any():
                break
            runs &= ~hot
        # re-admit suspended nodes, coolest first, where all stay under (else two nodes that
        # each fit alone could suspend each other forever through recirculation)
        for i in sorted(np.nonzero(has_job & ~runs)[0].tolist(), key=lambda i: t_out[i]):
            trial = power.copy()
            trial[i] = inst.power[current[i]] + inst.p_idle
            if np.all(_next_temps(inst, t_out, trial) <= inst.t_thresh + TEMP_TOL):
                runs[i] = True
                power = trial
        cols.append(_step(inst, current, runs, left))
        t_out = _next_temps(inst, t_out, power)
    return np.stack(cols, axis=2) if cols else np.zeros((n, inst.n_jobs, 0), np.int64)


def _step(inst: ThermalInstance, current: list[int], runs: np.ndarray, left: IntArray) -> IntArray:
    col = np.zeros((inst.n_nodes, inst.n_jobs), np.int64)
    for i, j in enumerate(current):
        if runs[i]:
            col[i, j] = 1
            left[j] -= 1
            if left[j] == 0:
                current[i] = -1
    return col


def sustainable_duty(inst: ThermalInstance) -> FloatArray:
    """Duty cycle ``delta[i, j]`` (0..1] node ``i`` sustains running job ``j`` under the
    threshold, in steady state, with every node at the jobs' mean power (recirculation)."""
    mean_p = float(inst.power.mean()) + inst.p_idle
    t_in = inst.t_sup + inst.d @ np.full(inst.n_nodes, mean_p)
    p = inst.power + inst.p_idle
    # the steady mean of a node on a fraction delta of the time: t_in + delta (R + D_ii) P
    room = (inst.t_thresh - t_in)[:, None]
    rise = (inst.r + np.diag(inst.d))[:, None] * p[None, :]
    return np.clip(room / rise, 0.05, 1.0)


def spatio_temporal(inst: ThermalInstance) -> IntArray:
    """The Spatio-Temporal heuristic's schedule, ``alloc[i, j, t]`` in {0, 1}."""
    _check_runnable(inst)
    n = inst.n_nodes
    delta = sustainable_duty(inst)
    tl = inst.work[None, :] / delta  # thermal-aware load of job j on node i
    order = sorted(range(inst.n_jobs), key=lambda j: (-float(tl[:, j].mean()), j))
    load = np.zeros(n)
    queues: list[list[int]] = [[] for _ in range(n)]
    for j in order:
        i = int(np.argmin(load + tl[:, j]))
        queues[i].append(j)
        load[i] += tl[i, j]
    left = inst.work.copy()
    current = [q.pop(0) if q else -1 for q in queues]
    t_out = np.full(n, inst.t_sup)
    cols: list[IntArray] = []
    while any(c >= 0 for c in current):
        if len(cols) > _limit(inst):
            raise HeuristicStuck(f"spatio-temporal: no end after {len(cols)} steps")
        remaining = [
            sum(
                left[j] / delta[i, j] for j in ([current[i]] if current[i] >= 0 else []) + queues[i]
            )
            for i in range(n)
        ]
        runs = np.zeros(n, bool)
        power = np.zeros(n)
        for i in sorted(range(n), key=lambda i: (-remaining[i], i)):
            if current[i] < 0:
                continue
            trial = power.copy()
            trial[i] = inst.power[current[i]] + inst.p_idle
            nxt = _next_temps(inst, t_out, trial)
            if np.all(nxt <= inst.t_thresh + TEMP_TOL):
                runs[i] = True
                power = trial
        col = _step(inst, current, runs, left)
        for i in range(n):
            if current[i] < 0 and queues[i]:
                current[i] = queues[i].pop(0)
        cols.append(col)
        t_out = _next_temps(inst, t_out, power)
    return np.stack(cols, axis=2) if cols else np.zeros((n, inst.n_jobs, 0), np.int64)
