"""The report of ``bench/thermal_paper.py``: the markdown tables against the paper's figures
and the plots (makespans; the Cloud energy objective)."""

from __future__ import annotations

import math
import statistics
from pathlib import Path
from typing import Any

import numpy as np

from wattsched.scheduler.thermal.model import cop

PAPER = {"milp": 15, "spatio_temporal": 19, "coolest": 21, "cloud_vs_hpc": -0.11}

X_ENERGY = (1.0, 1.1, 1.2)
"""The makespan allowances of the Cloud energy benchmark: ``C_j <= floor(x M*)``."""


def _mean(xs: list[float]) -> float:
    return statistics.fmean(xs) if xs else float("nan")


def report(
    meta: dict[str, Any], rows: list[dict[str, Any]], energy: dict[str, Any] | None = None
) -> str:
    """The markdown report (``energy``: the Cloud energy benchmark's document, if run)."""
    hpc = [r["hpc"]["makespan"] for r in rows]
    cloud = [r["cloud"]["makespan"] for r in rows]
    co, st = [r["coolest"] for r in rows], [r["spatio_temporal"] for r in rows]
    lb, lbt = [r["lb_paper"] for r in rows], [r["lb_thermal"] for r in rows]
    m_h, m_c, m_co, m_st = _mean(hpc), _mean(cloud), _mean(co), _mean(st)
    n_opt = sum(r["hpc"]["status"] == "optimal" for r in rows)
    n_copt = sum(r["cloud"]["status"] == "optimal" for r in rows)
    secs = [r["hpc"]["seconds"] for r in rows]
    csecs = [r["cloud"]["seconds"] for r in rows]
    bnd = [r["hpc"]["bound"] for r in rows if r["hpc"]["bound"] is not None]
    cbnd = [r["cloud"]["bound"] for r in rows if r["cloud"]["bound"] is not None]
    t_sup = meta.get("t_sup", 20.0)
    t_sup_cap = 100.0 - t_sup  # the generator's T_thresh; a job pauses over cap / R - P_idle
    p_pause = t_sup_cap / 0.7 - 42.0
    lines = [
        "# Thermal MILP paper: MILP vs Spatio-Temporal vs Coolest, HPC vs Cloud",
        "",
        f"- date {meta['date']}, commit {meta['commit']}, {meta['machine']}",
        f"- command: `.venv/bin/python {meta['command']}` (wall {meta['wall_s']} s)",
        f"- setup: {len(rows)} seeded instances of 12 jobs on 6 nodes (see the script's "
        f"docstring), T_sup = {t_sup:g} C (calibrated: Notes); MILP: HPC the strong CP-SAT "
        "model's search (`milp_cp.search`), Cloud the LNS `cloud_search.search`, "
        f"{meta.get('workers', 1)} workers, {meta['time_limit_s']} s per instance and setting "
        "(all its solves together); every schedule checked by "
        "`check_schedule` (work, one node per job, HPC no interleaving, threshold): "
        f"{sum(r['hpc']['valid'] and r['cloud']['valid'] for r in rows)}/{len(rows)} valid.",
        "",
        "| mean makespan (steps) | ours | paper |",
        "|---|---|---|",
        f"| MILP (HPC) | {m_h:.2f} | {PAPER['milp']} |",
        f"| Spatio-Temporal | {m_st:.2f} | {PAPER['spatio_temporal']} |",
        f"| Coolest | {m_co:.2f} | {PAPER['coolest']} |",
        f"| MILP (Cloud) | {m_c:.2f} | about {PAPER['milp'] * 0.89:.1f} (11 % below HPC) |",
        f"| lower bound, paper (balance) | {_mean(lb):.2f} | about 11 (MILP 35.9 % above) |",
        f"| lower bound, thermal (ours) | {_mean(lbt):.2f} | - |",
        "",
        f"- MILP better than Spatio-Temporal by {100 * (1 - m_h / m_st):.1f} % (paper 21 %), "
        f"than Coolest by {100 * (1 - m_h / m_co):.1f} % (paper 28.6 %); Spatio-Temporal better "
        f"than Coolest by {100 * (1 - m_st / m_co):.1f} % (paper 9.5 %).",
        f"- Cloud vs HPC makespan: {100 * (m_c / m_h - 1):+.1f} % (paper -11 %).",
        f"- above the balance lower bound (ratio of the means): MILP HPC by "
        f"{100 * (m_h / _mean(lb) - 1):.1f} % (paper 35.9 %: the calibration target), MILP "
        f"Cloud by {100 * (m_c / _mean(lb) - 1):.1f} % (paper 28.9 %).",
        f"- no solution within the time limit (the hint's makespan counted): HPC "
        f"{sum(bool(r['hpc'].get('fallback')) for r in rows)}, Cloud "
        f"{sum(bool(r['cloud'].get('fallback')) for r in rows)} instances.",
        f"- HPC MILP proven optimal on {n_opt}/{len(rows)} instances (others: best found in the "
        f"time limit; mean solver bound {_mean(bnd):.2f}); Cloud on {n_copt}/{len(rows)} (mean "
        f"bound {_mean(cbnd):.2f}).",
        f"- solve time per instance: HPC mean {_mean(secs):.1f} s, max {max(secs):.1f} s; "
        f"Cloud mean {_mean(csecs):.1f} s, max {max(csecs):.1f} s "
        "(every solve stops at the time limit at the latest).",
    ]
    comp = [r for r in rows if "hpc_paper_highs" in r]
    if comp:
        lines += [
            "",
            "## Models and solvers (HPC, min makespan, same time limit, hinted)",
            "",
            f"Strong model (`milp_cp.search`, CP-SAT, {meta.get('workers', 1)} workers) against "
            "the paper's model (`milp.solve`) on CP-SAT (same workers) and on HiGHS through "
            "MathOpt (one thread): makespan (status, proven bound, seconds).",
            "",
            "| instance | strong, CP-SAT | paper, CP-SAT | paper, HiGHS |",
            "|---|---|---|---|",
        ]
        for r in comp:
            cells = [
                f"{r[k]['makespan']} ({r[k]['status']}, bound {_fmt(r[k]['bound'])}, "
                f"{r[k]['seconds']} s)"
                for k in ("hpc", "hpc_paper_cp-sat", "hpc_paper_highs")
            ]
            lines.append(f"| {r['seed']} | " + " | ".join(cells) + " |")
    en = [r for r in rows if "cloud_energy" in r]
    if en:
        e_m = _mean([r["cloud"]["energy"] for r in en])
        e_e = _mean([r["cloud_energy"]["energy"] for r in en if r["cloud_energy"]["energy"]])
        ub = _mean([r["energy_upper_bound"] for r in en])
        lines += [
            "",
            f"- Cloud energy (J, with cooling at CoP({t_sup:g} C)): min makespan {e_m:.0f}, min "
            f"energy s.t. M <= M* {e_e:.0f} ({100 * (1 - e_e / e_m):.1f} % less; paper 6.7 %), "
            f"upper bound (all nodes on) {ub:.0f}.",
        ]
    lines += [
        "",
        "## Notes (read before comparing with the paper)",
        "",
        "- Previous record (2026-11-23, commit 322eadb, T_sup = 20 C, 30 s, Cloud by the full "
        "model's search): HPC 17.40, Spatio-Temporal 18.75, Coolest 22.77, Cloud 16.65 "
        "(-4.3 %), balance bound 11.45 (HPC 52 % above); HPC proven on 32/40, Cloud on 1/40.",
        f"- **T_sup = {t_sup:g} C is a calibration.** The paper gives neither T_sup nor its "
        "recirculation matrix D, and both move every figure. `bench/thermal_sensitivity.py` "
        "(`thermal_sensitivity.md`, `thermal_calibration.md`: instances 0-9, short limits) "
        "measured MILP / balance bound at T_sup = 10, 12, 13, 14, 15, 20, 25 C: 1.29, 1.33, "
        "1.35, 1.38, 1.38, 1.48, 1.59 (about 2 % per degree); scaling the default D by 0 or 2 "
        "(at 13 C) moved it to 1.34 and 1.38 (our D is small next to R). The paper's MILP is "
        "35.9 % above that bound (a published figure that does not depend on the "
        "heuristics): 13 C is the closest, so the benchmark uses it, calibrated on that one "
        "quantity and nothing else "
        "(one value for all instances, chosen on instances 0-9). Everything else in this "
        "table (Spatio-Temporal / MILP, Coolest / MILP, Cloud / HPC, Cloud / bound) is a "
        "prediction to compare with the paper. Not given by the paper either, chosen here: D "
        "(`default_recirculation`, two rows), the CoP curve (Moore et al.), the seeds. The "
        "heuristics are our reading of the paper's one-paragraph descriptions "
        "(`scheduler/thermal/heuristics.py`).",
        "- The paper solved with Gurobi to a 0.01 % gap (hours on some Cloud instances); here "
        f"CP-SAT, {meta.get('workers', 1)} workers (a portfolio with LNS; more workers than "
        f"cores), {meta['time_limit_s']} s per instance and setting, on 2 cores shared with "
        "two other sessions' runs. Where a solve is not proven optimal the column is an upper "
        "bound on the optimum (the proven bound is in the per-instance table).",
        "- R and F (checked against the paper's text): R = 0.7 C/W multiplies the power in "
        "eq. 3's target and F = exp(-dt/RC) = 0.5 is the per-step decay, as here "
        "(`ThermalInstance.temperatures`). The paper's '42 W idle contributes 15 C' is the "
        "one-step rise (1 - F) R P_idle = 0.5 x 0.7 x 42 = 14.7 C (steady state: 29.4 C), "
        "whatever T_sup; so R, F and P_idle are used the way the paper does. With T_sup = "
        f"{t_sup:g} C a job over about {p_pause:.0f} W must pause (steady state at "
        f"{t_sup_cap:g} C above T_sup).",
        "- **What moved the Cloud column** (`scheduler/thermal/cloud_search.py`, "
        "`scheduler/thermal/reach.py`): (1) an LNS over the job-to-node assignment: with the "
        "assignment fixed the Cloud model keeps J L shares instead of N J L and CP-SAT finds, "
        "mostly proves, the best share profile in a second or two; it starts from the HPC "
        "optimum's assignment, then releases the jobs of two nodes (a node busy in the last "
        "step first) or one job of a busy node to any node, 2 s per neighbourhood, and gives "
        "the last 30 % of the budget to the full model (hinted) for the bound; (2) exact "
        "Cloud bounds by dynamic programming over shares (`reach.max_work`): each job's "
        "shortest span alone on a cold node in 10 % shares, and per node and power level p "
        "the work of the jobs at least as hot as p given to it must fit in what a cold node "
        "does in M steps at p (`work_caps`, an element constraint on M). Measured on "
        "instances 0-9, 20 s, 8 workers, from the same HPC schedules: at T_sup = 13 C the "
        "full model's search (with the caps) 13.7 (proven 2/10), the LNS on node pairs 13.3 "
        "(6/10), pairs and single-job moves 13.1 (7/10, kept; HPC 15.0); at T_sup = 20 C the "
        "full model without caps 15.6 (1/10, mean bound 13.0), the LNS on pairs with the caps "
        "15.1 (1/10, mean bound 13.4; HPC 16.4).",
        "- What moved the HPC column earlier (kept): the jobs' minimum spans "
        "(`milp_cp.min_spans`, now `reach.min_span` with q = 1) as the lengths of one optional "
        "interval per node and job with a no-overlap per node, several CP-SAT workers, the "
        "heat-balance rows and the node symmetry breaking; compare the paper's model in the "
        "table above (same workers and time).",
        "- What did not help: decision solves at decreasing horizons before the makespan solve "
        "(HPC, instance 0: 15 unproven against 14 proven by the makespan solve alone); a "
        "Cloud pre-solve in whole steps (nothing better than the HPC schedule). The work caps "
        "in the fixed-assignment solves looked slower on one instance (T_sup = 20 C, instance "
        "4: 15 in 10 s against 14 in 6 s without them; instance 1 the other way round, 14 in "
        "6 s against 9 s): CP-SAT's run-to-run spread, so they stay (they lift the proven "
        "bounds).",
        "- Same ordering as the paper for the heuristics (Spatio-Temporal < Coolest); our "
        "Spatio-Temporal is relatively stronger than the paper's (our LPT on thermal-aware load "
        "and admission by remaining load), our Coolest relatively weaker.",
    ]
    if energy is not None:
        lines += energy_section(energy)
    lines += ["", "![makespans](thermal_paper.png)", "", "## Per instance", ""]
    lines += ["| seed | LB | LB thermal | Coolest | ST | MILP HPC | MILP Cloud |", "|" + "---|" * 7]
    for r in rows:
        lines.append(
            f"| {r['seed']} | {r['lb_paper']} | {r['lb_thermal']} | {r['coolest']} | "
            f"{r['spatio_temporal']} | {_cell(r['hpc'])} | {_cell(r['cloud'])} |"
        )
    return "\n".join(lines) + "\n"


_M_STAR_MODELS = {
    "milp.solve": "the paper's model (`milp.solve`)",
    "milp_cp.search": "the strong model's search (`milp_cp.search`, from the HPC one's schedule)",
    "cloud_search.search": "the Cloud LNS (`cloud_search.search`, from the HPC one's schedule)",
}


def energy_section(doc: dict[str, Any]) -> list[str]:
    """The Cloud energy benchmark's part of the report."""
    rows, meta = doc["rows"], doc["meta"]
    out = [
        "",
        "## Cloud setting: minimum energy subject to makespan <= x M*",
        "",
        f"- {meta['date']}, command `.venv/bin/python {meta['command']}` (wall "
        f"{meta['wall_s']} s), {len(rows)} instances, CP-SAT with {meta.get('workers', 1)} "
        f"worker(s), {meta['time_limit_s']} s per solve. M* is the best Cloud makespan found by "
        f"{_M_STAR_MODELS[meta.get('m_star_model', 'milp.solve')]} (proven optimal on "
        f"{sum(r['m_star_status'] == 'optimal' for r in rows)}/{len(rows)}); each energy solve "
        "is the paper's model (it has the energy objective) hinted with that schedule. "
        f"Energy in J (W x step) with cooling at CoP({meta.get('t_sup', 20.0):g} C).",
        "",
        "| x | mean energy | vs the min-makespan schedule | proven optimal | mean gap to "
        "the solver bound | mean makespan |",
        "|---|---|---|---|---|---|",
    ]
    e0 = _mean([r["energy_at_m_star"] for r in rows])
    elb = _mean([r["energy_lower_bound"] for r in rows])
    at_lb = sum(r["energy_at_m_star"] <= r["energy_lower_bound"] * (1 + 1e-9) for r in rows)
    out.append(
        f"| (min makespan) | {e0:.0f} | - | - | - | {_mean([r['m_star'] for r in rows]):.2f} |"
    )
    for x in X_ENERGY:
        res = [r["x"][str(x)] for r in rows]
        e = _mean([v["energy"] for v in res])
        # the solver's bound is on the compute energy: times the cooling factor
        gaps = [
            100 * (v["energy"] - v["bound"] * (1 + 1 / cop(meta.get("t_sup", 20.0)))) / v["energy"]
            for v in res
            if v.get("bound") is not None and v["energy"]
        ]
        out.append(
            f"| {x} | {e:.0f} | {100 * (e / e0 - 1):+.1f} % | "
            f"{sum(v['status'] == 'optimal' for v in res)}/{len(res)} | "
            f"{_mean(gaps):.1f} % | {_mean([v['makespan'] for v in res]):.2f} |"
        )
    out += [
        "",
        f"- Energy lower bound (every node-step on carries a full step of work) "
        f"{_mean([r['energy_lower_bound'] for r in rows]):.0f}, upper bound (every node on "
        f"for M*) {_mean([r['energy_upper_bound'] for r in rows]):.0f}. The paper reports, at "
        "x = 1, 6.7 % less energy on average than the min-makespan schedule (Gurobi, up to "
        "10 h, mean gap 1.87 %).",
        f"- The min-makespan schedule is already at the energy lower bound on {at_lb} of "
        f"{len(rows)} instances: with eq. 24-26 (a node draws P_idle only in steps it runs "
        "anything) the energy is at its lower bound sum_j w_j (p_j + P_idle) whenever every "
        "node-step that is on is fully used, and then no schedule, however long, uses less. "
        "The paper's 6.7 % comes from makespan-optimal schedules that use partial steps (its "
        f"Fig. 3) and so stand above that bound; here {len(rows) - at_lb} of {len(rows)} stand "
        f"above it, by {100 * (e0 / elb - 1):.1f} % on average, and the energy solves recover "
        "little of that within their time limit (the table).",
        "- Previous record (2026-11-23, T_sup = 20 C, M* by the full Cloud model's search, "
        "proven on 1/10): M* 15.60, energy at M* 10850 (at the lower bound on 5 of 10), x = 1: "
        "-0.2 %.",
        "",
        "![energy](thermal_paper_energy.png)",
    ]
    return out


def _plot_energy(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    x = np.arange(len(rows))
    fig, ax = plt.subplots(figsize=(10, 3.5), constrained_layout=True)
    base = np.array([r["energy_at_m_star"] for r in rows])
    for k, xv in enumerate(X_ENERGY):
        e = np.array([r["x"][str(xv)]["energy"] for r in rows])
        ax.bar(x + (k - 1) * 0.25, 100 * (e / base - 1), 0.25, label=f"x = {xv}")
    ax.axhline(-6.7, color="grey", ls="--", lw=1, label="paper, x = 1 (mean)")
    ax.set_xlabel("instance")
    ax.set_ylabel("energy vs min-makespan schedule (%)")
    ax.set_title("Cloud: min energy s.t. makespan <= x M*")
    ax.legend(fontsize=8)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _cell(res: dict[str, Any]) -> str:
    """``makespan (status)``, with the proven bound when it is below the makespan."""
    out = f"{res['makespan']} ({res['status'][:3]}"
    b = res.get("bound")
    if b is not None and res["status"] != "optimal":
        out += f", >= {math.ceil(b - 1e-9)}"
    return out + ")"


def _fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.1f}"


def _plot(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    x = np.arange(len(rows))
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(13, 4), gridspec_kw={"width_ratios": [4, 1]})
    series = [
        ("Coolest", [r["coolest"] for r in rows]),
        ("Spatio-Temporal", [r["spatio_temporal"] for r in rows]),
        ("MILP HPC", [r["hpc"]["makespan"] for r in rows]),
        ("MILP Cloud", [r["cloud"]["makespan"] for r in rows]),
        ("lower bound", [r["lb_paper"] for r in rows]),
    ]
    for k, (name, ys) in enumerate(series):
        a1.bar(x + (k - 2) * 0.16, ys, 0.16, label=name)
        a2.bar(k, _mean([float(y) for y in ys]))
    a1.set_xlabel("instance")
    a1.set_ylabel("makespan (steps)")
    a1.legend(ncol=5, fontsize=8)
    a2.set_xticks(range(len(series)), [s[0] for s in series], rotation=45, ha="right")
    a2.set_title("mean")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
