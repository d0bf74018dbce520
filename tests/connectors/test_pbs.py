"""PBS connector on recorded PBS Pro / OpenPBS JSON (no PBS server installs on Debian 12)."""

from __future__ import annotations

from pathlib import Path

import pytest
from replay_runner import ReplayRunner, Reply

from wattsched.connectors.base import (
    Capability,
    PlacementError,
    RMSParseError,
    UnknownJobError,
)
from wattsched.connectors.pbs import PBSConnector
from wattsched.connectors.pbs_json import (
    duration_s,
    parse_pbsnodes,
    parse_qstat,
    parse_select,
    size_mb,
)
from wattsched.connectors.rms_options import RMSOptions, UnsupportedOperation
from wattsched.scheduler.model import Placement, PowerState

PBS = Path(__file__).parent / "fixtures" / "pbs"
QSTAT_ALL = (PBS / "qstat-f-F-json-x_openpbs-23.06.06_firecrest_allusers.json").read_text()
QSTAT_HELD = (
    PBS / "qstat-x-f-F-json_pbs-19.0.0_buildtest_held-job_EXCERPT-dedented.json"
).read_text()
NODES_1 = (PBS / "pbsnodes-a-F-json_openpbs-23.06.06_firecrest.json").read_text()
NODES_GPU = (PBS / "pbsnodes-F-json_pbspro-2025.2.0_0nebody_node.json").read_text()
NODES_MULTI = (PBS / "pbsnodes-F-json_pbspro-2024.1.2_0nebody_multivnode.json").read_text()
# PBS Pro's documented error for an unknown job (qstat exit 153); not a captured output.
UNKNOWN = Reply(returncode=153, stderr="qstat: Unknown Job Id 999.pbs\n")


def _conn(replies: dict[tuple[str, ...], Reply]) -> tuple[PBSConnector, ReplayRunner]:
    runner = ReplayRunner(replies)
    return PBSConnector(runner, RMSOptions(clock=lambda: 1750400000.0)), runner


def test_parsers_on_recorded_outputs() -> None:
    jobs = {j.job_id: j for j in parse_qstat(QSTAT_ALL)}
    states = {k: j.state for k, j in jobs.items()}
    assert states == {"1004.pbs": "F", "1005.pbs": "F", "1006.pbs": "R"}
    run = jobs["1006.pbs"]
    assert run.exec_hosts == ("pbs",) and run.walltime_s == 300
    assert run.chunks[0].count == 1 and run.chunks[0].ncpus == 1
    assert run.start_time is not None and run.owner == "firesrv"
    held = parse_qstat(QSTAT_HELD)[0]
    assert (held.state, held.hold_types) == ("H", "u")
    gpu = parse_pbsnodes(NODES_GPU)[0]
    assert (gpu.ncpus, gpu.ngpus, gpu.assigned_ncpus) == (168, 4, 96)
    assert gpu.mem_mb == 1022318284 // 1024
    multi = parse_pbsnodes(NODES_MULTI)
    assert [n.name for n in multi] == ["cpu1n001[0]", "cpu1n001[1]"]  # natural vnode skipped


def test_helpers() -> None:
    assert duration_s("01:00:00") == 3600 and duration_s("05:00") == 300
    assert size_mb("2gb") == 2048 and size_mb("1024kb") == 1 and size_mb("junk") == 0
    chunks = parse_select("2:ncpus=4:mem=8gb+1:ngpus=2")
    got = [(c.count, c.ncpus, c.mem_mb, c.ngpus) for c in chunks]
    assert got == [(2, 4, 8192, 0), (1, 1, 0, 2)]


def test_snapshot_from_recorded_outputs() -> None:
    conn, _ = _conn(
        {
            ("pbsnodes", "-a", "-F", "json"): Reply(NODES_1),
            ("qstat", "-f", "-F", "json"): Reply(QSTAT_ALL),
        }
    )
    snap = conn.snapshot()
    assert [n.name for n in snap.nodes] == ["pbs"]
    node = snap.nodes[0]
    assert node.capacity.cores == 1 and node.capacity.mem_mb == 1024
    assert node.state is PowerState.ON and node.available
    assert [r.job.id for r in snap.running] == ["1006.pbs"]
    assert snap.running[0].nodes == ("pbs",)
    assert snap.running[0].end_estimate == snap.running[0].start + 300
    assert snap.queued == ()  # finished jobs (-x history) are neither running nor queued


def test_user_held_job_is_held() -> None:
    conn, _ = _conn(
        {
            ("pbsnodes", "-a", "-F", "json"): Reply(NODES_1),
            ("qstat", "-f", "-F", "json"): Reply(QSTAT_HELD),
        }
    )
    (job,) = conn.snapshot().queued
    assert job.id == "157.pbs" and job.held and job.walltime == 120 and job.unit.cores == 1


# The recorded held job (select=1:ncpus=1, place=scatter), queued and made two chunks.
QUEUED_2 = (
    QSTAT_HELD.replace('"job_state":"H"', '"job_state":"Q"')
    .replace('"Hold_Types":"u"', '"Hold_Types":"n"')
    .replace('"select":"1:ncpus=1"', '"select":"2:ncpus=1"')
)


def test_start_runs_qrun_on_the_chosen_hosts() -> None:
    queued = QUEUED_2
    conn, runner = _conn(
        {
            ("qstat", "-f", "-F", "json", "157.pbs"): Reply(queued),
            ("qrun", "-H", "n2+n3", "157.pbs"): Reply(),
        }
    )
    res = conn.start("157.pbs", ["n2", "n3"])
    assert res.nodes == ("n2", "n3")
    assert runner.calls[-1] == ("qrun", "-H", "n2+n3", "157.pbs")


def test_start_refuses_hosts_that_break_place_scatter() -> None:
    conn, runner = _conn({("qstat", "-f", "-F", "json", "157.pbs"): Reply(QUEUED_2)})
    job = conn._job(parse_qstat(QUEUED_2)[0])
    assert job.placement is Placement.SCATTER and job.units == 2
    with pytest.raises(PlacementError, match="several units on one node"):
        conn.start("157.pbs", ["n2", "n2"])
    assert all(c[0] != "qrun" for c in runner.calls)  # nothing sent


@pytest.mark.parametrize(
    ("place", "rule", "exclusive"),
    [
        ("scatter", Placement.SCATTER, False),
        ("vscatter:shared", Placement.SCATTER, False),
        ("pack:excl", Placement.PACK, True),
        ("free", Placement.FREE, False),
        ("excl", Placement.FREE, True),
        ("", Placement.FREE, False),
    ],
)
def test_place_maps_to_the_rule(place: str, rule: Placement, exclusive: bool) -> None:
    text = QSTAT_HELD.replace('"place":"scatter"', f'"place":"{place}"')
    conn, _ = _conn({})
    job = conn._job(parse_qstat(text)[0])
    assert (job.placement, job.exclusive) == (rule, exclusive)


def test_start_of_an_operator_held_job_releases_then_runs() -> None:
    gated = QSTAT_HELD.replace('"Hold_Types":"u"', '"Hold_Types":"o"')
    conn, runner = _conn(
        {
            ("qstat", "-f", "-F", "json", "157.pbs"): Reply(gated),
            ("qrls", "-h", "o", "157.pbs"): Reply(),
            ("qrun", "-H", "n1", "157.pbs"): Reply(),
        }
    )
    conn.start("157.pbs", ["n1"])
    assert runner.calls[1:] == [("qrls", "-h", "o", "157.pbs"), ("qrun", "-H", "n1", "157.pbs")]


def test_start_of_running_or_unknown_job_is_refused() -> None:
    conn, runner = _conn(
        {
            ("qstat", "-f", "-F", "json", "1006.pbs"): Reply(QSTAT_ALL),
            ("qstat", "-f", "-F", "json", "999.pbs"): UNKNOWN,
        }
    )
    with pytest.raises(UnknownJobError):
        conn.start("1006.pbs", ["pbs"])
    with pytest.raises(UnknownJobError):
        conn.start("999.pbs", ["pbs"])
    assert not any(c[0] == "qrun" for c in runner.calls)


def test_hold_release_and_no_power() -> None:
    conn, runner = _conn(
        {("qhold", "-h", "o", "7.pbs"): Reply(), ("qrls", "-h", "o", "7.pbs"): Reply()}
    )
    conn.hold("7.pbs")
    conn.release("7.pbs")
    assert runner.calls == [("qhold", "-h", "o", "7.pbs"), ("qrls", "-h", "o", "7.pbs")]
    assert Capability.POWER not in conn.capabilities
    with pytest.raises(UnsupportedOperation):
        conn.power("pbs", on=False)
    with pytest.raises(ValueError):
        conn.hold("7.pbs; rm -rf /")


@pytest.mark.parametrize(
    "name",
    [
        "qstat-f-F-json_pbspro-2022.1.1_polaris_EXCERPT-from-comments.txt",  # trimmed: not JSON
        "pbsnodes-a-F-json_pbspro-2022.1.1_polaris_EXCERPT-from-comments.txt",  # "..." inside
    ],
)
def test_recorded_broken_json_is_a_parse_error(name: str) -> None:
    text = (PBS / name).read_text()
    with pytest.raises(RMSParseError) as err:
        parse_qstat(text) if name.startswith("qstat") else parse_pbsnodes(text)
    assert err.value.text == text
