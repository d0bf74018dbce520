"""Eurora readers on every shared Eurora file, and on malformed lines."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from wattsched.connectors.traces import (
    TraceError,
    read_eurora_jobs,
    read_eurora_nodes,
    read_power_predictions,
    read_queues,
)
from wattsched.scheduler.model import NodePowerModel, Resources
from wattsched.scheduler.power import EURORA_NODE_POWER


@pytest.fixture(scope="module")
def queues(eurora_dir: Path) -> dict[str, int]:
    return read_queues(eurora_dir / "system_configs" / "system_queues")


@pytest.fixture(scope="module")
def predictions(eurora_dir: Path) -> dict[str, float]:
    return read_power_predictions(eurora_dir / "eurora_power_predictions" / "power_predictions")


def test_queues(queues: dict[str, int]) -> None:
    assert queues == {
        "debug": 3600,
        "parallel": 21600,
        "np_longpar": 86400,
        "longpar": 86400,
        "reservation": 1800,
    }


def test_power_predictions(predictions: dict[str, float]) -> None:
    assert len(predictions) == 113998  # one line per job, all ids distinct
    assert predictions["498459"] == 93.0  # first line: 498459.node129;93.0
    values = sorted(predictions.values())
    assert values[0] == 0.0 and values[-1] == 2582.0
    assert values[len(values) // 2] == 25.0  # median, as the data README says


@pytest.mark.parametrize(
    ("name", "count", "gpu_nodes", "mic_nodes"),
    [
        ("nodes_#8", 8, 4, 4),
        ("nodes_#32", 32, 16, 16),
        ("nodes_#64", 64, 32, 32),
        ("nodes_#8_big", 8, 4, 4),
    ],
)
def test_nodes(eurora_dir: Path, name: str, count: int, gpu_nodes: int, mic_nodes: int) -> None:
    nodes = read_eurora_nodes(eurora_dir / "system_configs" / name)
    assert len(nodes) == count
    assert [n.name for n in nodes] == [f"node{i}" for i in range(count)]
    assert sum(1 for n in nodes if n.capacity.gpus) == gpu_nodes
    assert sum(1 for n in nodes if n.capacity.mics) == mic_nodes
    assert all(n.capacity.mem_mb == 32768 for n in nodes)  # 33554432 KB = 32 GB
    assert all(n.power == EURORA_NODE_POWER and n.partition is None for n in nodes)


def test_nodes_reserved_and_power(write_file: Callable[[str, str], Path]) -> None:
    path = write_file("nodes_#2", "0 16 0 2 33554432 0\n1 16 2 0 16777216 1 \n")
    model = NodePowerModel(idle_w=50.0)
    a, b = read_eurora_nodes(path, model, prefix="eu")
    assert (a.name, a.partition, a.available) == ("eu0", None, True)
    assert (b.name, b.partition, b.available) == ("eu1", "reservation", True)
    assert b.capacity == Resources(cores=16, mem_mb=16384, gpus=2, mics=0)
    assert a.power is model


def _instances(eurora_dir: Path) -> list[Path]:
    files = sorted(eurora_dir.glob("historical_traces/*/*.log_crypt"))
    files += sorted(eurora_dir.glob("synthetic_workloads/*/*/*.log_crypt"))
    return files


def test_every_instance_parses(
    eurora_dir: Path, queues: dict[str, int], predictions: dict[str, float]
) -> None:
    files = _instances(eurora_dir)
    assert len(files) >= 280
    lines = 0
    t0 = time.perf_counter()
    for path in files:
        w = read_eurora_jobs(path, queues=queues, power=predictions)
        r = w.report
        n_lines = sum(1 for s in path.read_text().splitlines() if s.strip())
        lines += n_lines
        assert r.read == n_lines
        assert r.read == r.kept + sum(r.skipped.values()), path
        assert set(r.skipped) <= {"duplicate_id"}, (path, r.skipped)
        # instance size N is in the name: hist_<N>_... or rndm_<N>_...
        size = int(path.name.split("_")[1])
        assert size <= r.kept <= size + 20, (path, r.summary())
        ids = [j.id for j in w.jobs]
        assert len(set(ids)) == len(ids)
        for j in w.jobs:
            assert j.runtime is not None and 0 <= j.runtime <= j.walltime
            assert j.queue in queues
            assert j.ewt == queues[j.queue]
            # three synthetic jobs ask 18 cores a node (see test_units_larger_than_node)
            assert 1 <= j.units <= 64 and 1 <= j.unit.cores <= 18
            assert j.unit.gpus <= 2 and j.unit.mics <= 2
            if j.id in predictions:
                assert j.unit_power_w == pytest.approx(predictions[j.id] / j.units)
            else:
                assert j.unit_power_w is None
        assert r.notes.get("no_power_prediction", 0) == sum(
            1 for j in w.jobs if j.unit_power_w is None
        )
    dt = time.perf_counter() - t0
    print(f"\n{len(files)} Eurora instances, {lines} lines in {dt:.2f} s")


def test_units_larger_than_node(eurora_dir: Path, queues: dict[str, int]) -> None:
    path = eurora_dir / "synthetic_workloads" / "jobs_100" / "ws_60" / "rndm_100_60_1.log_crypt"
    kept = read_eurora_jobs(path, queues=queues)
    big = [j for j in kept.jobs if j.unit.cores > 16]
    assert [(j.units, j.unit.cores) for j in big] == [(18, 18)]
    node = Resources(cores=16, mem_mb=32768, gpus=2, mics=2)
    w = read_eurora_jobs(path, queues=queues, max_unit=node)
    assert w.report.skipped == {"unit_larger_than_node": 1}
    assert len(w.jobs) == len(kept.jobs) - 1


def test_first_historical_job(eurora_dir: Path, queues: dict[str, int]) -> None:
    path = eurora_dir / "historical_traces" / "100" / "hist_100_20140331_110904.log_crypt"
    w = read_eurora_jobs(path, queues=queues, power={"498605": 213.0})
    job = w.jobs[0]
    # 498605;xxx;yyy;parallel;2014-03-31 11:09:04__59;16;1;0;4194304#__2014-03-31 16:06:56;
    # 2014-03-31 19:45:04;1;16;4;04:00;NA;NA;COMPLETED;1
    assert job.id == "498605"
    assert job.submit == 1396264144  # 2014-03-31 11:09:04 UTC
    assert job.runtime == 3 * 3600 + 38 * 60 + 8  # 16:06:56 -> 19:45:04
    assert job.walltime == 4 * 3600
    assert (job.units, job.unit) == (1, Resources(cores=16, mem_mb=4096, gpus=1, mics=0))
    assert (job.queue, job.ewt, job.unit_power_w) == ("parallel", 21600, 213.0)
    assert w.meta["first_submit"] == str(min(j.submit for j in w.jobs))


def test_multi_node_and_duplicates(
    write_file: Callable[[str, str], Path], queues: dict[str, int]
) -> None:
    lines = [
        # three nodes, 8 cores each: 3 units, power split per unit
        "1;x;y;debug;2014-04-01 00:00:00__3;8;0;0;1024#4;8;0;0;1024#5;8;0;0;1024#__"
        "2014-04-01 00:01:00;2014-04-01 00:11:00;3;24;1;00:30;NA;NA;COMPLETED;0",
        # the same line again: skipped
        "1;x;y;debug;2014-04-01 00:00:00__3;8;0;0;1024#4;8;0;0;1024#5;8;0;0;1024#__"
        "2014-04-01 00:01:00;2014-04-01 00:11:00;3;24;1;00:30;NA;NA;COMPLETED;0",
        # two entries that differ, 1 requested node, queue R, runtime above the estimate
        "2;x;y;R;2014-04-01 00:00:00__3;4;2;0;2048#4;8;0;0;1024#__"
        "2014-04-01 00:01:00;2014-04-01 02:01:00;1;8;1;01:00;NA;NA;COMPLETED;0",
        # an unknown queue: the largest EWT
        "3;x;y;weird;2014-04-01 00:00:00__3;1;0;0;1024#__"
        "2014-04-01 00:01:00;2014-04-01 00:02:00;1;1;1;00:10;NA;NA;COMPLETED;0",
    ]
    path = write_file("t.log_crypt", "\n".join(lines) + "\n")
    w = read_eurora_jobs(path, queues=queues, power={"1": 30.0})
    a, b, c = w.jobs
    assert (a.units, a.unit.cores, a.unit_power_w, a.runtime) == (3, 8, 10.0, 600)
    assert (b.units, b.unit) == (2, Resources(cores=8, mem_mb=2, gpus=2, mics=0))
    assert (b.queue, b.ewt, b.runtime, b.walltime) == ("reservation", 1800, 3600, 3600)
    assert (c.queue, c.ewt) == ("weird", 86400)
    r = w.report
    assert (r.read, r.kept, r.skipped) == (4, 3, {"duplicate_id": 1})
    assert r.clamped == {"runtime_over_walltime": 1}
    assert r.notes["unit_entries_differ"] == 1
    assert r.notes["units_differ_from_requested_nodes"] == 1
    assert r.notes["unknown_queue"] == 1
    assert r.notes["queue_alias_R_to_reservation"] == 1
    assert r.notes["no_power_prediction"] == 2
    w2 = read_eurora_jobs(path, queues=queues, unknown_queue_ewt=600, aliases={})
    assert [(j.queue, j.ewt) for j in w2.jobs[1:]] == [("R", 600), ("weird", 600)]


OK_TAIL = "2014-04-01 00:01:00;2014-04-01 00:02:00;1;1;1;00:10;NA;NA;COMPLETED;0"


@pytest.mark.parametrize(
    ("line", "field", "value"),
    [
        # no '__' markers at all
        ("9;x;y;debug;2014-04-01 00:00:00;3;1;0;0;1024#;" + OK_TAIL, "line", None),
        # arrival is not a date-time
        ("9;x;y;debug;yesterday__3;1;0;0;1024#__" + OK_TAIL, "arrival", "yesterday"),
        # an allocation entry with 4 fields (memory missing)
        ("9;x;y;debug;2014-04-01 00:00:00__3;1;0;0#__" + OK_TAIL, "allocation", "3;1;0;0"),
        # cores of an allocation entry are not an integer
        ("9;x;y;debug;2014-04-01 00:00:00__3;one;0;0;1024#__" + OK_TAIL, "cores", "one"),
        # no allocation entry between the markers
        ("9;x;y;debug;2014-04-01 00:00:00____" + OK_TAIL, "allocation", ""),
        # the user estimate is not HH:MM
        (
            "9;x;y;debug;2014-04-01 00:00:00__3;1;0;0;1024#__"
            "2014-04-01 00:01:00;2014-04-01 00:02:00;1;1;1;10min;NA;NA;COMPLETED;0",
            "estimated_duration",
            "10min",
        ),
        # the end time is garbled
        (
            "9;x;y;debug;2014-04-01 00:00:00__3;1;0;0;1024#__"
            "2014-04-01 00:01:00;2014-13-01 00:02:00;1;1;1;00:10;NA;NA;COMPLETED;0",
            "end",
            "2014-13-01 00:02:00",
        ),
        # a tail field missing (9 instead of 10)
        (
            "9;x;y;debug;2014-04-01 00:00:00__3;1;0;0;1024#__"
            "2014-04-01 00:01:00;2014-04-01 00:02:00;1;1;1;00:10;NA;COMPLETED;0",
            "line",
            None,
        ),
    ],
)
def test_malformed_jobs_raise(
    write_file: Callable[[str, str], Path],
    queues: dict[str, int],
    line: str,
    field: str,
    value: str | None,
) -> None:
    good = "8;x;y;debug;2014-04-01 00:00:00__3;1;0;0;1024#__" + OK_TAIL
    path = write_file("bad.log_crypt", good + "\n" + line + "\n")
    with pytest.raises(TraceError) as info:
        read_eurora_jobs(path, queues=queues)
    e = info.value
    assert (e.path, e.line, e.field) == (str(path), 2, field)
    assert f"{path}:2: field '{field}'" in str(e)
    if value is not None:
        assert e.value == value and repr(value) in str(e)


@pytest.mark.parametrize(
    ("name", "text", "field", "value"),
    [
        # node file: five columns (reserved flag missing)
        ("nodes", "0 16 0 2 33554432\n", "line", None),
        # node file: memory is not an integer
        ("nodes", "0 16 0 2 32GB 0\n", "memory", "32GB"),
        # node file: reserved flag must be 0 or 1
        ("nodes", "0 16 0 2 33554432 2\n", "reserved", "2"),
        # queues: EWT not an integer
        ("queues", "debug 1h\n", "ewt", "1h"),
        # predictions: no ';'
        ("pred", "498459.node129 93.0\n", "line", None),
        # predictions: watts not a number
        ("pred", "498459.node129;lots\n", "watts", "lots"),
    ],
)
def test_malformed_system_files_raise(
    write_file: Callable[[str, str], Path], name: str, text: str, field: str, value: str | None
) -> None:
    path = write_file(name, text)
    reader = {"nodes": read_eurora_nodes, "queues": read_queues, "pred": read_power_predictions}[
        name
    ]
    with pytest.raises(TraceError) as info:
        reader(path)
    e = info.value
    assert (e.line, e.field) == (1, field)
    assert f"{path}:1: field '{field}'" in str(e)
    if value is not None:
        assert e.value == value


def test_prediction_speed_figure(eurora_dir: Path) -> None:
    """Not a timing assertion: prints the parse speed for the report."""
    t0 = time.perf_counter()
    table = read_power_predictions(eurora_dir / "eurora_power_predictions" / "power_predictions")
    print(f"\npower_predictions: {len(table)} lines in {time.perf_counter() - t0:.3f} s")
