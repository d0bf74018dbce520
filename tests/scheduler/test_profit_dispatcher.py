"""The profit paper's search as a dispatcher of the control cycle: replays under a power cap
are feasible (independent validator), every job runs, and a daemon cycle runs it."""

from __future__ import annotations

import pytest

from wattsched.connectors.simulated import SimulatedCluster
from wattsched.daemon.replay import replay
from wattsched.scheduler import dispatcher as registry
from wattsched.scheduler.hybrid.synthetic import eurora_like_jobs, eurora_like_nodes
from wattsched.scheduler.model import PowerCap
from wattsched.scheduler.validate import Executed, validate_schedule


@pytest.mark.parametrize(("cap_w", "cooling"), [(1300.0, "air"), (None, "hybrid")])
def test_a_replay_with_the_profit_dispatcher_is_feasible(cap_w: float | None, cooling: str) -> None:
    nodes, jobs = eurora_like_nodes(8), eurora_like_jobs(40, seed=3)
    cap = PowerCap.constant(cap_w) if cap_w else PowerCap.unlimited()
    cluster = SimulatedCluster(nodes, jobs, cap)
    res = replay(
        cluster, registry.create("profit", cooling=cooling, time_budget_s=1.0), keep_stats=True
    )
    runs = [
        Executed(r.job, r.start, r.end, r.nodes)
        for r in cluster.records.values()
        if r.start is not None and r.end is not None
    ]
    assert len(runs) == len(jobs) and res.start_errors == 0
    assert validate_schedule(nodes, runs, cap) == []
    assert cluster.cap_violation_s == 0
    searched = [s for s in res.solver_stats if s.iterations]
    assert searched and all(s.objective is not None for s in searched)


def test_bad_parameters_are_refused() -> None:
    with pytest.raises(ValueError, match="time_budget_s"):
        registry.create("profit", time_budget_s=0)
    with pytest.raises(ValueError, match="cooling"):
        registry.create("profit", cooling="water")


def test_any_replay_can_be_scored_for_profit(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """``simulate --cooling``: the metrics of a PRB replay gain the profit figures, and
    summer air cooling costs more than winter's for the same schedule."""
    from wattsched.daemon.simulate_cli import out_profit_scorer, run_simulation

    nodes, jobs = eurora_like_nodes(4), eurora_like_jobs(20, seed=4)
    got = {}
    for season in ("summer", "winter"):
        got[season] = run_simulation(
            nodes, jobs, PowerCap.unlimited(), dispatcher_name="prb", params={},
            offline=False, metrics_out=tmp_path / f"{season}.json",
            schedule_out=tmp_path / f"{season}.csv", power_out=None, plot=None, skipped=0,
            report={}, title="t", progress=False,
            profit_scorer=out_profit_scorer("air", season),
        )  # fmt: skip
    for m in got.values():
        assert m["profit"] == pytest.approx(m["revenue"] - m["energy_cost"])
        assert m["mean_pue"] >= 1.0
    assert got["summer"]["cooling_kwh"] > got["winter"]["cooling_kwh"]
    assert got["summer"]["makespan_s"] == got["winter"]["makespan_s"]
