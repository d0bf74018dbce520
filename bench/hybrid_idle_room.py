"""Where the online hybrid leaves room idle on one real-runtime row, and why.

One Eurora 200-job instance, one cap of ``bench/hybrid_eurora.py``'s sweep, the real-runtime
protocol (every job queued at time 0, each running its real runtime): PRB and the hybrid in
``mode="online"`` (its defaults, plus the JSON parameters given) are replayed. After each
cycle's plan the jobs that would still fit now (PRB's greedy pass over the queue, in PRB's
order, beside the plan's starts, ignoring any reservation) are the room the cycle left idle;
until the next cycle it is charged to the plan's status (``feasible``, ``reused``,
``prb_fallback``...) and to whether a reservation was held. The running power of both
replays over time goes to a plot.

Usage: ``.venv/bin/python bench/hybrid_idle_room.py hist_200_20140402_220500 0
'{"rollout_by_class": true, "twin_power": false, "reserve_accel": true}' --png idle.png``
(a few minutes a row).
"""

from __future__ import annotations

import argparse
import itertools
import json
from collections import Counter
from pathlib import Path

from hybrid_eurora import cap_sweep, instances, load, run_one, with_protocol
from hybrid_eurora_perclass import weighted_waits

from wattsched.scheduler.dispatcher import Dispatcher, create, prb_order
from wattsched.scheduler.listsched import list_schedule
from wattsched.scheduler.mapper import placement_of
from wattsched.scheduler.model import Job, Node, Plan, PowerCap, Snapshot
from wattsched.scheduler.prb import prb_node_order

Cycle = tuple[int, str, bool, float, float]
"""(time, plan status, a reservation held, power after the starts, power the idle room takes)."""


def watched(disp: Dispatcher, cycles: list[Cycle]) -> Dispatcher:
    """``disp`` with each of its plans' idle room appended to ``cycles``."""
    plan_of = disp.plan

    def plan(snap: Snapshot) -> Plan:
        out = plan_of(snap)
        state = disp.cache.state(snap)
        queued = {j.id: j for j in snap.queued}
        now = [a for a in out.assignments if a.start <= snap.time and a.job_id in queued]
        for a in now:
            state.commit(disp.cache.vec(queued[a.job_id]), *placement_of(state.arrays, a.nodes))
        after = state.power_w
        starting = {a.job_id for a in now}
        rest = [j for j in prb_order(snap.queued) if j.id not in starting and not j.held]
        ends = {rj.job.id: rj.end_estimate for rj in snap.running}
        list_schedule(state, disp.cache, rest, snap.time, ends, node_order=prb_node_order,
                      full=False)  # fmt: skip
        held = getattr(disp, "_res", None) is not None
        cycles.append((snap.time, out.stats.status, held, after, state.power_w - after))
        return out

    disp.plan = plan  # type: ignore[method-assign,unused-ignore]
    return disp


def replayed(
    nodes: list[Node], jobs: list[Job], cap: PowerCap, disp: Dispatcher
) -> tuple[float, list[Cycle]]:
    """The mean weighted queue time and the cycles of one replay by ``disp``."""
    cycles: list[Cycle] = []
    waits = weighted_waits(nodes, jobs, cap, watched(disp, cycles))
    return sum(waits.values()) / len(jobs), cycles


Cause = tuple[str, bool]
"""(plan status, a reservation held)."""


def idle_by_cause(cycles: list[Cycle]) -> tuple[dict[Cause, int], dict[Cause, float]]:
    """Seconds with idle room and watt-seconds of it, by cause, most seconds first."""
    secs: Counter[Cause] = Counter()
    watt_s: dict[Cause, float] = {}
    for (t, status, held, _, idle), nxt in itertools.pairwise(cycles):
        if idle > 0:
            secs[(status, held)] += nxt[0] - t
            watt_s[(status, held)] = watt_s.get((status, held), 0.0) + idle * (nxt[0] - t)
    return dict(secs.most_common()), watt_s


def plot(runs: dict[str, list[Cycle]], static_w: float, png: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(10, 4))
    t0 = min(cycles[0][0] for cycles in runs.values())  # the first cycle: the replay's start
    for name, cycles in runs.items():
        ax.step([(c[0] - t0) / 3600 for c in cycles], [c[3] - static_w for c in cycles],
                where="post", label=f"{name}: running", lw=0.8)  # fmt: skip
    cycles = runs["hybrid"]
    ax.step([(c[0] - t0) / 3600 for c in cycles], [c[3] + c[4] - static_w for c in cycles],
            where="post", label="hybrid: + idle room that fits", lw=0.6, ls=":")  # fmt: skip
    ax.set_xlabel("hours from the first start")
    ax.set_ylabel("W above the idle draw")
    ax.legend()
    fig.tight_layout()
    fig.savefig(png, dpi=110)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("instance", help="a substring of the instance's file name")
    ap.add_argument("cap", type=int, help="the cap's index in the sweep (0: the tightest)")
    ap.add_argument("params", nargs="?", default="{}", help="the hybrid's extra parameters, JSON")
    ap.add_argument("--png", type=Path, help="plot the running power of both replays here")
    args = ap.parse_args()
    nodes, jobs, _ = load(instances([args.instance])[0])
    base = run_one(nodes, with_protocol(jobs, "walltime"), PowerCap.unlimited(), "prb", {})
    cap = PowerCap.constant(cap_sweep(nodes, jobs, base["peak_w"])[args.cap])
    real = with_protocol(jobs, "real")
    prb, pc = replayed(nodes, real, cap, create("prb"))
    hyb, hc = replayed(nodes, real, cap, create("hybrid", mode="online",
                                                **json.loads(args.params)))  # fmt: skip
    print(f"{args.instance} cap {args.cap} ({cap.at(0):.0f} W): PRB / hybrid {prb / hyb:.3f}")
    for name, cycles in (("prb", pc), ("hybrid", hc)):
        secs, watt_s = idle_by_cause(cycles)
        print(f"- {name}: {len(cycles)} cycles over {cycles[-1][0] - cycles[0][0]} s; idle room:")
        for key, s in secs.items():
            print(
                f"  - status {key[0]}, reservation {'held' if key[1] else 'none'}: {s} s, "
                f"{watt_s[key]:.3g} W s"
            )
    if args.png:
        static_w = sum(n.power.idle_w for n in nodes)
        plot({"prb": pc, "hybrid": hc}, static_w, args.png)


if __name__ == "__main__":
    main()
