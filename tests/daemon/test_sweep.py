"""Sweeps of replays (issue 11): a process pool and a dask.distributed cluster (a LocalCluster
of 2 workers) give every replay's own result, the same as run alone."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from replay_cases import DATA, REPO
from typer.testing import CliRunner

from wattsched.daemon.cli import app
from wattsched.daemon.sweep import ReplaySpec, run_replay, sweep

KEYS = ("name", "jobs", "starts_sha256", "mean_wait_s", "reconfigurations")


def specs() -> list[ReplaySpec]:
    kth = str(DATA / "swf" / "KTH-SP2-1996.swf")
    system = str(REPO / "deploy" / "systems" / "kth-sp2.toml")
    return [
        ReplaySpec("easy", kth, system, "easy", limit_jobs=300),
        ReplaySpec("fifo", kth, system, "fifo", limit_jobs=300),
        ReplaySpec("prb", kth, system, "prb", limit_jobs=300, core_watts="7.8:11.11"),
        ReplaySpec(
            "hgfs",
            kth,
            system,
            "easy",
            limit_jobs=200,
            power_policy="hgfs",
            hgfs={"wait_on_s": 1800.0, "centers": [0.0, 600.0, 1800.0]},
        ),
    ]


def picked(results: list[dict[str, object]]) -> list[tuple[object, ...]]:
    return [tuple(r[k] for k in KEYS) for r in results]


@pytest.fixture(scope="module")
def alone() -> list[tuple[object, ...]]:
    if not DATA.is_dir():
        pytest.skip(f"shared data not found at {DATA}")
    return picked([run_replay(s) for s in specs()])


def test_process_pool_sweep(alone: list[tuple[object, ...]]) -> None:
    results = sweep(specs(), workers=2)
    assert picked(results) == alone
    assert [r["name"] for r in results] == ["easy", "fifo", "prb", "hgfs"]
    assert results[3]["reconfigurations"] > 0  # the tuned policy switched nodes


@pytest.mark.slow
def test_dask_sweep_on_a_local_cluster(alone: list[tuple[object, ...]]) -> None:
    from distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None) as cluster:
        results = sweep(specs(), dask_scheduler=cluster.scheduler_address)
    assert picked(results) == alone


def test_sweep_command(alone: list[tuple[object, ...]], tmp_path: Path) -> None:
    import dataclasses

    file = tmp_path / "specs.json"
    file.write_text(json.dumps([dataclasses.asdict(s) for s in specs()[:2]]))
    out = tmp_path / "out.json"
    r = CliRunner().invoke(app, ["sweep", str(file), "--out", str(out), "--workers", "1"])
    assert r.exit_code == 0, r.output
    assert picked(json.loads(out.read_text())) == alone[:2]
    file.write_text(json.dumps([{"name": "x", "trace": "t", "system": "s", "bogus": 1}]))
    r = CliRunner().invoke(app, ["sweep", str(file), "--out", str(out)])
    assert r.exit_code == 2 and "bogus" in r.output
