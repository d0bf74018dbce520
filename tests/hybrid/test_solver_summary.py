"""``solver_summary``: the ``solver`` block of the metrics JSON."""

from __future__ import annotations

import pytest

from wattsched.scheduler.hybrid import solver_summary
from wattsched.scheduler.model import SolverStats


def test_summary_counts_searches_and_leaves_out_reused_cycles() -> None:
    stats = [
        SolverStats(
            status="feasible",
            objective=10.0,
            bound=2.0,
            seconds=0.5,
            iterations=2,
            cuts=3,
            extra={"best_source": "cp1-mapper", "ls_tries": 900, "lns_moves": 7, "gap": 1.2},
        ),
        SolverStats(status="reused"),
        SolverStats(status="idle"),
        SolverStats(
            status="unknown",
            objective=8.0,
            seconds=1.0,
            iterations=0,
            extra={"best_source": "prb", "work_capped": 1},
        ),
    ]
    s = solver_summary(stats)
    assert s["cycles"] == 4
    assert s["searches"] == 2
    assert s["reused"] == 1
    assert s["status"] == {"feasible": 1, "unknown": 1}
    assert s["seconds_total"] == pytest.approx(1.5)
    assert s["seconds_max"] == pytest.approx(1.0)
    assert s["iterations"] == 2
    assert s["cuts"] == 3
    assert s["improved_over_prb"] == 1
    assert s["objective"] == 8.0
    assert s["first_counts"] == {"ls_tries": 900, "lns_moves": 7}
    assert s["work_capped"] == 1  # the second search, stopped by the wall cap


def test_summary_of_nothing() -> None:
    s = solver_summary([])
    assert s["cycles"] == 0 and s["searches"] == 0 and s["objective"] is None


def test_summary_counts_the_re_searches_decodes() -> None:
    stats = [
        SolverStats(status="feasible", seconds=3.0, extra={"ls_tries": 4000}),
        SolverStats(status="researched", seconds=0.15, extra={"ls_tries": 300}),
        SolverStats(status="retimed"),
        SolverStats(status="researched", seconds=0.16, extra={"ls_tries": 500}),
        SolverStats(status="researched", seconds=0.14, extra={"ls_tries": 100}),
    ]
    s = solver_summary(stats)
    assert s["researched"] == 3
    assert s["research_counts"] == {"ls_tries_p50": 300.0, "ls_tries_min": 100.0,
                                    "ls_tries_max": 500.0, "seconds_p50": 0.15}  # fmt: skip
    assert solver_summary(stats[:1])["research_counts"] == {}
