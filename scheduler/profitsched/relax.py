"""RelaxationSearch (the profit paper's section 7.2): a CP-SAT model hinted with the best
schedule of MultiSearch, its multi-unit jobs' nodes fixed, asked for a better profit.

The model, over the slots of one day (``[origin, horizon)``, the horizon of
:meth:`~.search.Scoring.horizon`):

- **Jobs**: every job the hint places before the horizon (present), and up to
  ``extra_jobs`` single-unit jobs it leaves unplaced (optional: a presence literal), in the
  hint's order. A job's start ``s_j`` is an integer slot in ``[release_j, horizon)``.
- **Nodes**: a multi-unit job keeps the hint's nodes (the paper: "the jobs that require more
  than a job unit [are fixed] to the values fixed by the Multi-Search solution"); a
  single-unit job chooses exactly one of its candidate nodes (an optional interval per
  candidate, the literals summing to its presence): the hint's node and ``alt_nodes`` others
  drawn at random (seeded; all nodes when ``alt_nodes`` >= the nodes). Equivalent to the
  paper's ALTERNATIVE over all nodes when every node is a candidate.
- **Capacity**: per node and resource a CUMULATIVE of the intervals on it, plus the capacity
  held by running jobs until they end; the power budget (when the problem has one) a
  CUMULATIVE of every job's power.
- **Objective** (the profit evaluator's equation 3, exactly, on integers): per job and
  temperature segment s the seconds it runs in s, ``ov_js = max(0, min(end_j, s.et) -
  max(start_j, s.st))``; revenue ``sum_j rate_j * sum_s ov_js``; ``W_s = sum_j power_j *
  ov_js`` (decijoules); the segment's mean IT power rounded to 500 W is a bucket ``b_s``
  (``|W_s / len_s - 500 b_s| <= 250``), its PUE an ELEMENT of the table column of the
  segment's temperature (in 1e-4 steps, by bucket), and the energy cost ``K2_s * W_s * PUE_s``
  one product constraint per segment: **element constraints on the rounded IT power, no
  linearisation**. Money, power (0.1 W) and PUE (1e-4) are scaled to integers: the model's
  objective is the evaluator's profit to within 0.1 % (tested), and the result is chosen by
  the evaluator itself.
- **Improvement bound**: the objective at least the hint's plus one (``improve``).
- **Hint**: every variable at the hint's value; ``workers`` parallel CP-SAT workers;
  ``time_limit_s`` per call.

The solution is decoded to a :class:`DaySchedule` and scored by the evaluator: the result is
the better of it and the hint, never below the hint.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from ortools.sat.python import cp_model

from wattsched.scheduler.cooling import temperature_segments
from wattsched.scheduler.profitsched.problem import DayProblem, DaySchedule
from wattsched.scheduler.profitsched.search import Scoring, SearchResult, score

Clock = Callable[[], float]
_DW = 10  # power in deciwatts (W * 10): W_s in decijoules
_PUE_SCALE = 10_000  # PUE in 1e-4 steps


@dataclass(frozen=True, slots=True)
class RelaxOptions:
    """How RelaxationSearch runs (see the module docstring)."""

    time_limit_s: float = 10.0
    workers: int = 2
    alt_nodes: int = 4
    extra_jobs: int = 50
    improve: bool = True
    seed: int = 0
    deterministic_s: float | None = None
    """A limit in CP-SAT's deterministic time as well (load-independent: tests)."""


@dataclass(slots=True)
class _Job:
    j: int
    start: cp_model.IntVar
    present: cp_model.IntVar | None
    nodes: list[tuple[int, cp_model.IntVar | None]]
    """(node, literal) per candidate; literal None: the unit is fixed on that node."""
    counts: dict[int, int]


def relaxation_search(
    problem: DayProblem,
    scoring: Scoring,
    initial: SearchResult,
    opts: RelaxOptions | None = None,
    *,
    clock: Clock = time.perf_counter,
) -> SearchResult:
    """RelaxationSearch from ``initial`` (see the module docstring); never below it."""
    opts = opts or RelaxOptions()
    t0 = clock()
    horizon = scoring.horizon(problem)
    hint = initial.schedule
    built = _Model(problem, scoring, hint, horizon, opts)
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = max(0.01, opts.time_limit_s)
    solver.parameters.num_workers = max(1, opts.workers)
    solver.parameters.random_seed = opts.seed
    if opts.deterministic_s is not None:
        solver.parameters.max_deterministic_time = opts.deterministic_s
    code = solver.solve(built.m)
    status = solver.status_name(code)
    best = SearchResult(
        hint, initial.name, initial.profit, initial.order, list(initial.runs), initial.seconds
    )
    if code in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        sched = built.decode(solver)
        profit = score(problem, sched, scoring).profit
        best.runs.append((f"relax {status}", profit))
        if profit > best.profit + 1e-9:
            best.schedule, best.profit, best.name = sched, profit, f"{initial.name}+relax"
    else:
        best.runs.append((f"relax {status}", best.profit))
    best.seconds = initial.seconds + (clock() - t0)
    return best


class _Model:
    """The CP-SAT model of one day, and the hint's value of each of its variables."""

    def __init__(
        self,
        p: DayProblem,
        scoring: Scoring,
        hint: DaySchedule,
        horizon: int,
        opts: RelaxOptions,
    ) -> None:
        self.p, self.hint, self.horizon = p, hint, horizon
        m = self.m = cp_model.CpModel()
        rng = np.random.default_rng(opts.seed)
        n_nodes = len(p.node_names)
        placed = [j for j in range(p.n_jobs) if 0 <= hint.start[j] < horizon]
        extra = [
            int(j) for j in np.argsort(np.where(hint.start < 0, p.release, np.iinfo(np.int64).max),
                                       kind="stable")
            if hint.start[j] < 0 and p.release[j] < horizon and p.units[j] == 1
        ][: opts.extra_jobs]  # fmt: skip
        hv: dict[cp_model.IntVar, int] = {}  # the hint's value of each variable
        self.jobs: list[_Job] = []
        # (interval, units, job) per node, and every job's interval for the power budget.
        per_node: list[list[tuple[cp_model.IntervalVar, int, int]]] = [[] for _ in range(n_nodes)]
        all_iv: list[tuple[cp_model.IntervalVar, int]] = []
        for j in placed + extra:
            d = int(p.duration[j])
            on = j in placed
            s = m.new_int_var(int(p.release[j]), horizon - 1, f"s{j}")
            hv[s] = int(hint.start[j]) if on else int(p.release[j])
            pres = None if on else m.new_bool_var(f"p{j}")
            if pres is not None:
                hv[pres] = 0
            job = _Job(j, s, pres, [], {})
            if p.units[j] > 1:
                nodes = [int(n) for n in hint.nodes[j]]
                job.counts = {n: nodes.count(n) for n in set(nodes)}
                iv = m.new_fixed_size_interval_var(s, d, f"iv{j}")
                for n, c in job.counts.items():
                    per_node[n].append((iv, c, j))
                    job.nodes.append((n, None))
                all_iv.append((iv, j))
            else:
                home = int(hint.nodes[j][0]) if on else -1
                if opts.alt_nodes + 1 >= n_nodes:
                    cands = list(range(n_nodes))
                else:
                    others = [int(x) for x in rng.choice(n_nodes, opts.alt_nodes + 1, False)]
                    cands = ([home] if on else []) + [x for x in others if x != home]
                    cands = cands[: opts.alt_nodes + 1]
                lits = []
                for n in cands:
                    x = m.new_bool_var(f"x{j}_{n}")
                    hv[x] = int(n == home)
                    lits.append(x)
                    unit = m.new_optional_fixed_size_interval_var(s, d, x, f"u{j}_{n}")
                    per_node[n].append((unit, 1, j))
                    job.nodes.append((n, x))
                if pres is None:
                    m.add_exactly_one(lits)
                    all_iv.append((m.new_fixed_size_interval_var(s, d, f"iv{j}"), j))
                else:
                    m.add(sum(lits) == pres)
                    all_iv.append((m.new_optional_fixed_size_interval_var(s, d, pres, f"iv{j}"), j))
            self.jobs.append(job)
        self._capacity(per_node, all_iv)
        self._objective(scoring, hv, opts)
        for var, val in hv.items():
            m.add_hint(var, val)

    def _capacity(
        self,
        per_node: list[list[tuple[cp_model.IntervalVar, int, int]]],
        all_iv: list[tuple[cp_model.IntervalVar, int]],
    ) -> None:
        p, m = self.p, self.m
        index = {name: i for i, name in enumerate(p.node_names)}
        held: list[list[tuple[int, tuple[int, ...], float]]] = [[] for _ in p.node_names]
        for b in p.busy:
            end = max(0, -(-(b.end - p.origin) // p.slot_s))
            if end > 0:
                held[index[b.node]].append((end, b.need, b.power_w))
        for n, items in enumerate(per_node):
            if not items:
                continue
            fixed = [(m.new_fixed_size_interval_var(0, e, f"b{n}_{i}"), need)
                     for i, (e, need, _) in enumerate(held[n])]  # fmt: skip
            for k in p.resources:
                ivs = [iv for iv, _, _ in items] + [iv for iv, _ in fixed]
                dem = [c * int(p.need[j, k]) for _, c, j in items] + [need[k] for _, need in fixed]
                m.add_cumulative(ivs, dem, int(p.capacity[k, n]))
        if p.power_budget_w is not None:
            ivs = [iv for iv, _ in all_iv]
            dem = [math.ceil(float(p.power_w[j]) * _DW) for _, j in all_iv]
            for n, hold in enumerate(held):
                for i, (e, _, w) in enumerate(hold):
                    ivs.append(m.new_fixed_size_interval_var(0, e, f"bp{n}_{i}"))
                    dem.append(math.ceil(w * _DW))
            m.add_cumulative(ivs, dem, max(0, math.floor(p.power_budget_w * _DW)))

    def _objective(
        self, scoring: Scoring, hv: dict[cp_model.IntVar, int], opts: RelaxOptions
    ) -> None:
        p, m = self.p, self.m
        t0, t1 = p.origin, scoring.end
        prices = scoring.prices
        cuts = prices.tariff.changes(t0, t1) if prices.tariff is not None else []
        segs = temperature_segments(scoring.cooling.temperature, t0, t1, cuts=cuts)
        k2 = [prices.energy_price(s.start) for s in segs]
        low = min((x for x in k2 if x > 0), default=0.0)
        q = 1 if len({x for x in k2}) <= 1 else 100
        # Objective units: money * unit; the cost of one decijoule times a PUE step at the
        # lowest price is q units (1 with a flat price).
        unit = q * 3.6e6 * _DW * _PUE_SCALE / low if low > 0 else 1e12
        self.unit = unit
        """Objective units per unit of money."""
        cost_coef = [round(x / low * q) if low > 0 else 0 for x in k2]
        terms: list[tuple[cp_model.IntVar, int]] = []
        w_terms: list[list[tuple[cp_model.IntVar, int]]] = [[] for _ in segs]
        ub: dict[cp_model.IntVar, int] = {}  # upper bounds of the overlaps
        for jb in self.jobs:
            j = jb.j
            sec = int(p.seconds[j])
            start_s = p.origin + p.slot_s * jb.start
            hs = p.origin + p.slot_s * hv[jb.start]
            on = jb.present is None or hv[jb.present] == 1
            tot = (p.need[j] * p.units[j]).astype(float)  # as the evaluator prices them
            rate = round(float(prices.rate_per_s(tot[0], tot[1], tot[2], tot[3])) * unit)
            pw = round(float(p.power_w[j]) * _DW)
            lo_s = p.origin + p.slot_s * int(p.release[j])
            hi_e = p.origin + p.slot_s * (self.horizon - 1) + sec
            for si, s in enumerate(segs):
                if s.end <= lo_s or s.start >= hi_e:
                    continue
                lo = m.new_int_var(s.start, max(s.start, hi_e), f"lo{j}_{si}")
                m.add_max_equality(lo, [start_s, s.start])
                hi = m.new_int_var(min(s.end, lo_s + sec), s.end, f"hi{j}_{si}")
                m.add_min_equality(hi, [start_s + sec, s.end])
                top = min(sec, s.end - s.start)
                ov = m.new_int_var(0, top, f"ov{j}_{si}")
                ub[ov] = top
                hv[lo] = max(hs, s.start)
                hv[hi] = min(hs + sec, s.end)
                if jb.present is None:
                    m.add_max_equality(ov, [0, hi - lo])
                else:  # an absent job runs nowhere
                    raw = m.new_int_var(0, top, f"raw{j}_{si}")
                    m.add_max_equality(raw, [0, hi - lo])
                    m.add(ov == raw).only_enforce_if(jb.present)
                    m.add(ov == 0).only_enforce_if(jb.present.Not())
                    hv[raw] = max(0, hv[hi] - hv[lo])
                hv[ov] = max(0, hv[hi] - hv[lo]) if on else 0
                if rate:
                    terms.append((ov, rate))
                if pw:
                    w_terms[si].append((ov, pw))
        obj = sum(c * v for v, c in terms)
        hint_obj = sum(c * hv[v] for v, c in terms)
        pue_col = scoring.cooling.pue
        for si, s in enumerate(segs):
            if not w_terms[si] or not cost_coef[si]:
                continue
            length = s.end - s.start
            w_max = sum(c * ub[v] for v, c in w_terms[si])
            w = m.new_int_var(0, w_max, f"W{si}")
            m.add(w == sum(c * v for v, c in w_terms[si]))
            hw = sum(c * hv[v] for v, c in w_terms[si])
            b_max = int(w_max / (length * _DW) / 500) + 2
            b = m.new_int_var(0, b_max, f"b{si}")
            half = 250 * length * _DW
            m.add(w >= 2 * half * b - half)
            m.add(w <= 2 * half * b + half)
            table = [
                round(_PUE_SCALE * float(pue_col.lookup(500.0 * i, s.celsius)))
                for i in range(b_max + 1)
            ]
            pue = m.new_int_var(min(table), max(table), f"pue{si}")
            m.add_element(b, table, pue)
            tot = m.new_int_var(0, w_max * max(table), f"tot{si}")
            m.add_multiplication_equality(tot, [w, pue])
            hb = max(0, min(b_max, math.floor(hw / (2 * half) + 0.5)))
            hv[w], hv[b], hv[pue], hv[tot] = hw, hb, table[hb], hw * table[hb]
            obj -= cost_coef[si] * tot
            hint_obj -= cost_coef[si] * hv[tot]
        self.hint_objective = int(hint_obj)
        if opts.improve:
            m.add(obj >= self.hint_objective + 1)
        m.maximize(obj)

    def decode(self, solver: cp_model.CpSolver) -> DaySchedule:
        """The solution as a day schedule (the jobs outside the model: unplaced)."""
        p = self.p
        out = DaySchedule.empty(p.n_jobs)
        for jb in self.jobs:
            if jb.present is not None and not solver.boolean_value(jb.present):
                continue
            out.start[jb.j] = int(solver.value(jb.start))
            if jb.counts:
                out.nodes[jb.j] = np.asarray(self.hint.nodes[jb.j], dtype=np.int64)
            else:
                node = next(n for n, x in jb.nodes if x is not None and solver.boolean_value(x))
                out.nodes[jb.j] = np.array([node], dtype=np.int64)
        return out
