"""Slurm JSON / key=value parsers on recorded outputs: live 22.05, and 21.08 to 25.11 samples."""

from __future__ import annotations

from pathlib import Path

import pytest

from wattsched.connectors.base import RMSParseError
from wattsched.connectors.slurm_jobs import (
    parse_jobs,
    parse_key_values,
    parse_scontrol_jobs,
    time_limit_minutes,
)
from wattsched.connectors.slurm_json import (
    available,
    expand_hostlist,
    number,
    parse_node_record,
    parse_nodes,
    power_state,
    size_mb,
)
from wattsched.scheduler.model import PowerState

FIX = Path(__file__).parent / "fixtures"
LIVE = FIX / "slurm-22.05"
SAMPLES = FIX / "slurm-samples"


def test_numbers_in_both_shapes() -> None:
    assert number(5) == 5
    assert number(None) is None
    assert number({"set": True, "infinite": False, "number": 7}) == 7
    assert number({"set": False, "infinite": False, "number": 0}) is None
    assert number({"set": False, "infinite": True, "number": 0}) not in (None, 0)


def test_live_2205_jobs() -> None:
    jobs = {j.job_id: j for j in parse_jobs((LIVE / "squeue.json").read_text())}
    held = jobs["1"]
    assert (held.state, held.held, held.node_count, held.cpus) == ("PENDING", True, 2, 2)
    assert held.comment == "power=250" and held.time_limit_min == 10
    assert held.memory_mb_per_node == 1000
    assert jobs["3"].state == "RUNNING" and jobs["3"].nodes == ("n1", "n2")
    assert jobs["3"].time_limit_min is None  # unlimited
    assert jobs["5"].held is False and jobs["5"].reason == "Resources"


def test_live_2205_nodes_and_power_states() -> None:
    nodes = {n.name: n for n in parse_nodes((LIVE / "sinfo.json").read_text())}
    assert nodes["n1"].cpus == 4 and nodes["n1"].memory_mb == 1000
    assert nodes["n1"].alloc_cpus == 4 and nodes["n1"].state == "ALLOCATED"
    assert power_state(nodes["n3"]) is PowerState.SHUTTING_DOWN
    assert not available(nodes["n4"])  # drained
    assert available(nodes["n2"]) and power_state(nodes["n2"]) is PowerState.ON
    later = {n.name: n for n in parse_nodes((LIVE / "sinfo-powered-down.json").read_text())}
    assert power_state(later["n3"]) is PowerState.OFF
    assert available(later["n3"])  # powered down, not drained: can be woken


def test_live_2205_key_values() -> None:
    jobs = parse_key_values((LIVE / "scontrol-show-job.txt").read_text(), "JobId")
    assert [j["JobId"] for j in jobs] == ["1", "2", "3", "4", "5"]
    assert jobs[0]["NumTasks"] == "2" and jobs[0]["Comment"] == "power=250"
    nodes = parse_key_values((LIVE / "scontrol-show-node.txt").read_text(), "NodeName")
    n4 = next(n for n in nodes if n["NodeName"] == "n4")
    assert n4["State"] == "IDLE+DRAIN"
    assert n4["Reason"].startswith("maint")
    assert nodes[0]["OS"].startswith("Linux")  # free text with spaces kept whole


@pytest.mark.parametrize(
    ("file", "count", "first_state"),
    [
        ("squeue_21.08.5_rivos.json", 1, "RUNNING"),  # old shape: plain numbers, string state
        ("squeue_24.11.6_farnarkle_user.json", 2, "RUNNING"),  # new: set/number, state list
        ("jobs_23.11.1_v0.0.40_talapas_lcrownover.json", 2, "RUNNING"),  # slurmrestd
    ],
)
def test_recorded_jobs(file: str, count: int, first_state: str) -> None:
    jobs = parse_jobs((SAMPLES / file).read_text())
    assert len(jobs) == count and jobs[0].state == first_state
    assert all(j.submit_time > 0 and j.node_count >= 1 for j in jobs)


def test_new_shape_job_details() -> None:
    jobs = parse_jobs((SAMPLES / "squeue_24.11.6_farnarkle_user.json").read_text())
    big = jobs[0]
    assert big.node_count == 12 and len(big.nodes) == 12 and big.nodes[0] == "dave4"
    assert big.cpus == 768 and big.time_limit_min == 720
    assert big.memory_mb_per_node == 2048 * 64  # memory_per_cpu x cpus per node


@pytest.mark.parametrize(
    ("file", "count", "states"),
    [
        ("sinfo_21.08.5_rivos.json", 4, {"MIXED", "IDLE", "ALLOCATED", "DOWN"}),
        ("sinfo_24.05.4_sdsmt.json", 64, {"MIXED", "IDLE", "ALLOCATED"}),  # grouped records
        ("scontrol-show-node_23.02.6_2nodes-gpu.json", 2, {"ALLOCATED"}),
        ("scontrol-show-node_25.11.0_canonical.json", 1, {"DOWN"}),
        (
            "nodes_23.11.1_v0.0.40_talapas_lcrownover.json",
            12,
            {"DOWN", "IDLE", "MIXED", "ALLOCATED"},
        ),
        ("nodes_25.11.0_v0.0.44_slurmweb.json", 8, {"IDLE", "MIXED", "ALLOCATED", "DOWN"}),
    ],
)
def test_recorded_nodes(file: str, count: int, states: set[str]) -> None:
    nodes = parse_nodes((SAMPLES / file).read_text())
    assert len(nodes) == count
    assert {n.state for n in nodes} == states
    for n in nodes:
        if n.state == "DOWN":
            assert power_state(n) is PowerState.FAILED and not available(n)
        if "DRAIN" in n.flags:
            assert not available(n)


def test_gpus_from_gres() -> None:
    nodes = parse_nodes((SAMPLES / "scontrol-show-node_23.02.6_2nodes-gpu.json").read_text())
    assert [(n.name, n.gpus) for n in nodes] == [("gx01", 8), ("gx03", 2)]


@pytest.mark.parametrize(
    "text",
    [
        "squeue: error: load_plugins: unable to find plugin: serializer/json\n",  # no plugin
        "",  # nothing
        "[1, 2]",  # JSON but not an object
        '{"meta": {}, "errors": [{"error": "boom"}], "jobs": []}',  # Slurm's own error
        '{"jobs": [{"job_state": "PENDING"}]}',  # no job_id
    ],
)
def test_garbage_is_a_parse_error(text: str) -> None:
    with pytest.raises(RMSParseError) as err:
        parse_jobs(text)
    assert err.value.text == text or text in err.value.text or err.value.text


def test_recorded_no_plugin_error_output() -> None:
    text = (SAMPLES / "squeue-json_ERROR-no-serializer-plugin_rohanboard.txt").read_text()
    with pytest.raises(RMSParseError):
        parse_jobs(text)


def test_hostlists_and_sizes() -> None:
    assert sorted(expand_hostlist("n[1-3],gpu5")) == ["gpu5", "n1", "n2", "n3"]
    assert expand_hostlist("") == []
    with pytest.raises(RMSParseError):
        expand_hostlist("n[3-")
    assert size_mb("2000M") == 2000 and size_mb("32G") == 32768 and size_mb("1.5T") == 1572864


@pytest.mark.parametrize(
    ("state", "power", "usable"),
    [
        # state strings seen on the live 22.05 cluster during POWER_DOWN / POWER_UP
        ("IDLE+POWER_DOWN", PowerState.SHUTTING_DOWN, True),
        ("IDLE+POWERING_DOWN", PowerState.SHUTTING_DOWN, True),
        ("IDLE+POWERED_DOWN", PowerState.OFF, True),
        ("IDLE+POWER_UP+POWERED_DOWN", PowerState.BOOTING, True),
        ("IDLE+NOT_RESPONDING+POWERING_UP", PowerState.BOOTING, False),
        ("IDLE+DRAIN", PowerState.ON, False),
        ("DOWN+NOT_RESPONDING", PowerState.FAILED, False),
        ("MIXED", PowerState.ON, True),
    ],
)
def test_power_state_mapping(state: str, power: PowerState, usable: bool) -> None:
    node = parse_node_record({"name": "n1", "state": state, "cpus": 4})
    assert power_state(node) is power
    assert available(node) is usable


def test_scontrol_jobs_agree_with_squeue_json() -> None:
    """The same live 22.05 queue read both ways (scontrol -o recorded with local times)."""
    a = {j.job_id: j for j in parse_jobs((LIVE / "squeue.json").read_text())}
    b = {j.job_id: j for j in parse_scontrol_jobs((LIVE / "scontrol-show-job.txt").read_text())}
    assert a.keys() == b.keys()
    for jid in a:
        for f in ("state", "node_count", "cpus", "tasks", "time_limit_min", "held", "nodes",
                  "comment", "partition", "user", "restart_count", "gpus"):  # fmt: skip
            assert getattr(a[jid], f) == getattr(b[jid], f), (jid, f)
        assert a[jid].submit_time == b[jid].submit_time  # recorded in this machine's time zone
    assert b["1"].memory_mb_per_node == 1000  # pending: requested TRES


@pytest.mark.parametrize(
    ("text", "minutes"),
    [("UNLIMITED", None), ("00:10:00", 10), ("1-00:00:00", 1440), ("30", 30), ("00:00:30", 1)],
)
def test_time_limits(text: str, minutes: int | None) -> None:
    assert time_limit_minutes(text) == minutes
