"""SWF reader on the shared PWA traces, and on malformed lines."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wattsched.connectors.traces import TraceError, read_swf
from wattsched.connectors.traces.swf import SWF_FIELDS, SWFRecord


def _fields(path: Path) -> list[list[int]]:
    """An independent, plain read of the job lines (for cross-checks)."""
    out = []
    for line in path.read_text().splitlines():
        if line.strip() and not line.lstrip().startswith(";"):
            out.append([int(float(t)) for t in line.split()])
    return out


def test_kth_complete(data_dir: Path) -> None:
    path = data_dir / "swf" / "KTH-SP2-1996.swf"
    w = read_swf(path, cores_per_node=1, nodes=100)
    r = w.report
    assert r.read == 28489
    assert r.read == r.kept + sum(r.skipped.values())
    assert r.kept == len(w.jobs) == 28489
    assert w.meta["MaxProcs"] == "100"
    assert w.meta["UnixStartTime"] == "843480031"
    rows = _fields(path)
    # runtime above the requested time: clamped, and counted once per such job
    over = sum(1 for f in rows if f[8] > 0 and f[3] > f[8])
    assert r.clamped["runtime_over_walltime"] == over > 0
    first = w.jobs[0]
    assert (first.id, first.submit, first.runtime, first.walltime) == ("1", 0, 97225, 210000)
    assert first.units == 56 and first.unit.cores == 1 and first.unit.mem_mb == 0
    assert all(j.runtime is not None and j.runtime <= j.walltime for j in w.jobs)
    assert len({j.id for j in w.jobs}) == len(w.jobs)


def test_curie_sample_on_300_nodes(data_dir: Path) -> None:
    path = data_dir / "swf" / "CEA-Curie-2011-sample.swf"
    w = read_swf(path, cores_per_node=32, nodes=300, mem_mb_per_node=131072)
    r = w.report
    assert r.read == 29998
    assert r.read == r.kept + sum(r.skipped.values())
    rows = _fields(path)
    too_big = sum(1 for f in rows if (f[4] if f[4] != -1 else f[7]) > 300 * 32)
    assert r.skipped["too_many_processors"] == too_big == 171
    assert w.meta["MaxProcs"] == "93312"
    # the first two records ask for 77,248 processors: skipped; 477355 is the first kept
    job = w.jobs[0]
    assert job.id == "477355"
    assert (job.submit, job.runtime, job.walltime) == (43604796, 2322, 3600)
    assert (job.units, job.unit.cores) == (18, 32)  # 576 processors on 32-core nodes
    for j in w.jobs:
        assert j.units * j.unit.cores >= 1 and j.unit.cores <= 32 and j.units <= 300


def test_units_rule_rounds_up(write_file: Callable[[str, str], Path]) -> None:
    # 40 processors on 16-core nodes: 3 units of ceil(40/3) = 14 cores; 1,000 KB per processor
    line = "7 10 0 50 40 -1 1000 40 100 -1 1 1 1 -1 -1 -1 -1 -1\n"
    w = read_swf(write_file("a.swf", line), cores_per_node=16, nodes=4, mem_mb_per_node=8)
    (job,) = w.jobs
    assert (job.units, job.unit.cores) == (3, 14)
    assert job.unit.mem_mb == 8  # ceil(14 x 1000 KB / 1024) = 14 MB, capped at the node's 8
    assert w.report.clamped == {"memory_over_node": 1}


def test_lublin_walltime_from_runtime_or_default(data_dir: Path) -> None:
    path = data_dir / "swf" / "lublin-256-synthetic.swf"
    w = read_swf(path, cores_per_node=1, nodes=256)
    assert w.report.read == w.report.kept == 10000
    assert all(j.walltime == max(j.runtime or 0, 1) for j in w.jobs)  # requested time is -1
    w2 = read_swf(path, cores_per_node=1, nodes=256, walltime_default=200_000, limit=50)
    assert len(w2.jobs) == 50 and w2.report.read == 50
    assert all(j.walltime == 200_000 for j in w2.jobs)
    assert w2.jobs[0].id == "1" and w2.jobs[0].runtime == 12072


def test_skip_rules(write_file: Callable[[str, str], Path]) -> None:
    lines = [
        "1 10 0 50 4 -1 -1 4 100 -1 1 1 1 -1 -1 -1 -1 -1",  # kept
        "2 -1 0 50 4 -1 -1 4 100 -1 1 1 1 -1 -1 -1 -1 -1",  # submit unknown
        "3 10 0 -1 4 -1 -1 4 100 -1 1 1 1 -1 -1 -1 -1 -1",  # runtime unknown
        "4 10 0 0 4 -1 -1 4 100 -1 5 1 1 -1 -1 -1 -1 -1",  # cancelled before start
        "5 10 0 50 0 -1 -1 4 100 -1 1 1 1 -1 -1 -1 -1 -1",  # zero processors allocated
        "6 10 0 50 -1 -1 -1 -1 100 -1 1 1 1 -1 -1 -1 -1 -1",  # processors unknown
        "7 10 0 50 99 -1 -1 4 100 -1 1 1 1 -1 -1 -1 -1 -1",  # more than 4 x 8 cores
        "8 10 0 50 -1 -1 -1 6 100 -1 1 1 1 -1 -1 -1 -1 -1",  # requested used: kept
        "9 10 0 500 4 -1 -1 4 100 -1 5 1 1 -1 -1 -1 -1 -1",  # cancelled after start: kept, clamped
    ]
    w = read_swf(write_file("s.swf", "\n".join(lines) + "\n"), cores_per_node=8, nodes=4)
    assert [j.id for j in w.jobs] == ["1", "8", "9"]
    assert w.report.skipped == {
        "submit_unknown": 1,
        "runtime_unknown": 1,
        "cancelled_before_start": 1,
        "no_processors": 2,
        "too_many_processors": 1,
    }
    assert w.report.clamped == {"runtime_over_walltime": 1}
    assert w.jobs[2].runtime == 100
    assert w.jobs[1].unit.cores == 6
    assert "read 9, kept 3" in w.report.summary()


GOOD = "1 10 0 50 4 -1 -1 4 100 -1 1 1 1 -1 -1 -1 -1 -1"


@pytest.mark.parametrize(
    ("line", "field", "value"),
    [
        # 17 fields: one missing
        ("1 10 0 50 4 -1 -1 4 100 -1 1 1 1 -1 -1 -1 -1", "line", None),
        # 19 fields: one too many
        (GOOD + " 3", "line", None),
        # run_time is not a number
        ("1 10 0 abc 4 -1 -1 4 100 -1 1 1 1 -1 -1 -1 -1 -1", "run_time", "abc"),
        # submit_time is a fraction: integers only
        ("1 10.5 0 50 4 -1 -1 4 100 -1 1 1 1 -1 -1 -1 -1 -1", "submit_time", "10.5"),
        # requested_processors is empty-ish garbage
        ("1 10 0 50 4 -1 -1 4x 100 -1 1 1 1 -1 -1 -1 -1 -1", "requested_processors", "4x"),
    ],
)
def test_malformed_lines_raise(
    write_file: Callable[[str, str], Path], line: str, field: str, value: str | None
) -> None:
    path = write_file("bad.swf", "; MaxProcs: 32\n" + GOOD + "\n" + line + "\n")
    with pytest.raises(TraceError) as info:
        read_swf(path, cores_per_node=8, nodes=4)
    e = info.value
    assert (e.path, e.line, e.field) == (str(path), 3, field)
    assert f"{path}:3: field '{field}'" in str(e)
    if value is not None:
        assert e.value == value and repr(value) in str(e)


def test_fractional_cpu_time_and_memory_are_accepted(
    write_file: Callable[[str, str], Path],
) -> None:
    line = "1 10 0 50 4 12.75 2048.5 4 100 -1 1 1 1 -1 -1 -1 -1 -1\n"
    w = read_swf(write_file("f.swf", line), cores_per_node=8, nodes=4)
    assert w.jobs[0].unit.mem_mb == 9  # 2048.5 KB x 4 cores = 8,194 KB: 9 MB rounded up


def test_record_has_all_18_fields() -> None:
    assert len(SWF_FIELDS) == 18
    assert list(SWFRecord.__dataclass_fields__) == list(SWF_FIELDS)


def test_speed_figure(data_dir: Path) -> None:
    """Not a timing assertion: prints the parse speed for the report."""
    for name, cpn, nodes in (("KTH-SP2-1996.swf", 1, 100), ("CEA-Curie-2011-sample.swf", 32, 300)):
        t0 = time.perf_counter()
        w = read_swf(data_dir / "swf" / name, cores_per_node=cpn, nodes=nodes)
        dt = time.perf_counter() - t0
        print(f"\n{name}: {w.report.read} lines in {dt:.3f} s ({w.report.read / dt:,.0f} lines/s)")
        assert w.report.read > 0


@given(
    procs=st.integers(min_value=1, max_value=4096),
    cpn=st.integers(min_value=1, max_value=128),
)
@settings(max_examples=60, deadline=None)
def test_units_rule_property(
    tmp_path_factory: pytest.TempPathFactory, procs: int, cpn: int
) -> None:
    """Units never exceed a node, cover the processors, and use no more nodes than needed."""
    path = tmp_path_factory.mktemp("prop") / "p.swf"
    path.write_text(f"1 0 0 10 {procs} -1 -1 {procs} 20 -1 1 1 1 -1 -1 -1 -1 -1\n")
    (job,) = read_swf(path, cores_per_node=cpn, nodes=4096).jobs
    assert job.unit.cores <= cpn
    assert job.units * job.unit.cores >= procs
    assert (job.units - 1) * cpn < procs
