"""``profit``: the profit paper's search as a dispatcher of the control cycle, under the cap.

At each cycle the waiting jobs become a :class:`~.problem.DayProblem` from now on: the nodes
that are on and available (lexicographic order, as the paper), the running jobs as capacity
held until their walltime end, each job's power (its estimate, else the node power model) and
revenue rate, and the power cap as the budget of the jobs' power (the cap less the draw of
every node with no job). The job-based heuristic is run under the MultiSearch orderings,
best first by the cooling-aware profit evaluator, until ``time_budget_s``; the most profitable
schedule is the plan (its starts of now are carried out; the rest is the published plan).

A job whose placement rule (scatter, pack, exclusive) the heuristic's nodes would break is
left out of the plan (it waits): the paper's model has no such rules.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from wattsched.scheduler.cooling import CoolingModel
from wattsched.scheduler.dispatcher import Dispatcher, register
from wattsched.scheduler.model import (
    RESOURCES,
    Assignment,
    Job,
    Node,
    Plan,
    PowerState,
    Snapshot,
    SolverStats,
    placement_error,
)
from wattsched.scheduler.profit import Prices
from wattsched.scheduler.profitsched.heuristic import job_based
from wattsched.scheduler.profitsched.orderings import all_orders
from wattsched.scheduler.profitsched.problem import Busy, DayProblem, ProblemError
from wattsched.scheduler.profitsched.search import Scoring, score

Clock = Callable[[], float]


def job_power(job: Job, node: Node) -> float:
    """The power of all of a job's units (its estimate, else the node's model), each unit
    counted with the node's first-busy-core draw: an upper bound whatever nodes the units
    share, so that a plan within the budget is within the cap."""
    per_unit = job.unit_power_w if job.unit_power_w is not None else node.power.unit_watts(job.unit)
    return (per_unit + node.power.first_core_w) * job.units


class ProfitDispatcher(Dispatcher):
    """The most profitable of the job-based heuristic's orderings, under the cap."""

    name = "profit"

    def __init__(
        self,
        cooling: str = "air",
        season: str | None = "summer",
        temperature_file: str | None = None,
        prices_file: str | None = None,
        horizon_s: int = 86_400,
        slot_s: int = 60,
        time_budget_s: float = 5.0,
        clock: Clock = time.perf_counter,
    ) -> None:
        from wattsched.connectors.traces.cooling_files import (
            builtin_pue_table,
            read_prices,
            temperature_source,
        )

        super().__init__()
        if horizon_s < slot_s or slot_s < 1 or not time_budget_s > 0:
            raise ValueError(
                f"profit dispatcher: horizon_s={horizon_s!r} >= slot_s={slot_s!r} >= 1 and "
                f"time_budget_s={time_budget_s!r} > 0 needed"
            )
        self.model = CoolingModel(
            temperature_source(None if temperature_file else season, temperature_file),
            builtin_pue_table(cooling),
        )
        self.prices = read_prices(prices_file) if prices_file else Prices()
        self.horizon_s, self.slot_s, self.time_budget_s = horizon_s, slot_s, time_budget_s
        self.clock = clock

    def plan(self, snap: Snapshot) -> Plan:
        t0 = self.clock()
        nodes = [n for n in snap.nodes if n.state is PowerState.ON and n.available]
        jobs = [j for j in snap.queued if not j.held]
        if not nodes or not jobs:
            return Plan(snap.time, (), SolverStats(status="heuristic"))
        usable = {n.name for n in nodes}
        by_name = {n.name: n for n in snap.nodes}
        static_w = sum(n.power.state_watts(n.state) for n in snap.nodes)
        running_w = 0.0
        busy: list[Busy] = []
        for rj in snap.running:
            model = by_name.get(rj.nodes[0], nodes[0]) if rj.nodes else nodes[0]
            per_node = job_power(rj.job, model) / max(1, len(rj.nodes))
            for name in rj.nodes:
                running_w += per_node
                if name in usable:
                    need = tuple(getattr(rj.job.unit, r) for r in RESOURCES)
                    busy.append(Busy(name, need, max(rj.end_estimate, snap.time + 1), per_node))
        # The lowest cap while any of these jobs could run: a start now must hold it through
        # every later step of a cap profile.
        longest = max((j.walltime for j in jobs), default=0)
        cap_w = snap.cap.min_over(snap.time, snap.time + max(self.horizon_s, longest))
        budget = (
            None
            if cap_w == float("inf")
            else cap_w - static_w - (running_w - sum(b.power_w for b in busy))
        )
        # The most any node could draw for the job: the budget then holds wherever it runs.
        models = list({n.power: n for n in nodes}.values())
        power = [max(job_power(j, m) for m in models) for j in jobs]
        fits = [i for i, j in enumerate(jobs) if budget is None or power[i] <= budget]
        jobs = [jobs[i] for i in fits]
        power = [power[i] for i in fits]
        units = np.array([j.units for j in jobs], dtype=float)
        asked = np.array([j.unit.as_tuple() for j in jobs], dtype=float).reshape(-1, 4)
        rate = self.prices.rate_per_s(
            asked[:, 0] * units, asked[:, 1] * units, asked[:, 2] * units, asked[:, 3] * units
        )
        try:
            problem = DayProblem.build(
                nodes, jobs, origin=snap.time, slot_s=self.slot_s, power_w=power,
                rate=list(rate), busy=busy, power_budget_w=budget,
            )  # fmt: skip
        except ProblemError:
            # Some job can never fit the usable nodes: plan the others.
            keep = [i for i, j in enumerate(jobs) if _fits_somewhere(j, nodes)]
            if len(keep) == len(jobs) or not keep:
                return Plan(snap.time, (), SolverStats(status="heuristic"))
            problem = DayProblem.build(
                nodes, [jobs[i] for i in keep], origin=snap.time, slot_s=self.slot_s,
                power_w=[power[i] for i in keep], rate=[float(rate[i]) for i in keep],
                busy=busy, power_budget_w=budget,
            )  # fmt: skip
        scoring = Scoring(self.model, self.prices, snap.time + self.horizon_s)
        best, best_profit, tried = None, -float("inf"), 0
        for _name, order in all_orders(problem):
            sched = job_based(problem, order)
            profit = score(problem, sched, scoring).profit
            tried += 1
            if profit > best_profit:
                best, best_profit = sched, profit
            if self.clock() - t0 > self.time_budget_s:
                break
        assert best is not None
        starts = best.start_s(problem)
        out: list[Assignment] = []
        # Exclusive jobs: a node's users now (running jobs, then the starts kept so far).
        users: dict[str, list[bool]] = {}
        for rj in snap.running:
            for name in set(rj.nodes):
                users.setdefault(name, []).append(rj.job.exclusive)
        for i in sorted(range(problem.n_jobs), key=lambda k: int(best.start[k])):
            job = problem.jobs[i]
            if best.start[i] < 0:
                continue
            names = tuple(problem.node_names[k] for k in best.nodes[i])
            if placement_error(job, names):
                continue
            start = int(starts[i])
            if start <= snap.time:
                shared = [users.get(n, []) for n in set(names)]
                if any(u and (job.exclusive or any(u)) for u in shared):
                    continue  # the node is not free of (or for) an exclusive job: it waits
                for n in set(names):
                    users.setdefault(n, []).append(job.exclusive)
            out.append(Assignment(job.id, start, names))
        stats = SolverStats(
            status="heuristic", objective=best_profit, seconds=self.clock() - t0,
            iterations=tried,
        )  # fmt: skip
        return Plan(snap.time, tuple(sorted(out, key=lambda a: (a.start, a.job_id))), stats)


def _fits_somewhere(job: Job, nodes: list[Node]) -> bool:
    per = [
        min(
            (c // q if q else job.units)
            for c, q in zip(n.capacity.as_tuple(), job.unit.as_tuple(), strict=True)
        )
        for n in nodes
    ]
    return sum(min(p, job.units) for p in per) >= job.units


register("profit", ProfitDispatcher)
