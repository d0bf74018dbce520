"""Grid Engine XML parsers on the live 8.1.9 outputs and on recorded outputs of other sites."""

from __future__ import annotations

from pathlib import Path

import pytest

from wattsched.connectors.base import RMSParseError
from wattsched.connectors.sge_xml import (
    duration_s,
    mem_mb,
    parse_job_details,
    parse_qhost,
    parse_qstat,
    parse_queue_instances,
)

FIX = Path(__file__).parent / "fixtures"
LIVE = FIX / "sge-live"
REC = FIX / "sge"


def test_live_qstat_r() -> None:
    jobs = {j.job_id: j for j in parse_qstat((LIVE / "qstat-r-u.xml").read_text())}
    assert jobs["2"].running and jobs["2"].host == "localhost" and jobs["2"].queue == "all.q"
    assert jobs["1"].pending and jobs["1"].held and jobs["1"].h_rt_s == 600
    assert jobs["3"].held and jobs["3"].h_rt_s is None
    assert all(j.submit_time for j in jobs.values() if j.pending)  # running: start time only


def test_live_queue_instances_and_hosts() -> None:
    (qi,) = parse_queue_instances((LIVE / "qstat-f.xml").read_text())
    assert (qi.queue, qi.host, qi.slots_total, qi.slots_used, qi.state) == (
        "all.q", "localhost", 4, 1, ""
    )  # fmt: skip
    (host,) = parse_qhost((LIVE / "qhost.xml").read_text())
    assert host.name == "localhost" and host.reporting and host.mem_mb == int(23.5 * 1024)


def test_live_job_details() -> None:
    details = parse_job_details((LIVE / "qstat-j.xml").read_text())
    assert sorted(details) == ["1", "2", "3"]


@pytest.mark.parametrize(
    ("name", "states"),
    [
        ("ood_core_qstat_r.xml", ["r", "qw", "qw", "hqw"]),  # qstat -r -xml, SGE 6.x schema
        ("qstat-ext-urg-xml_sge_aiida.xml", ["r", "qw", "hqw"]),  # qstat -ext -urg -xml
    ],
)
def test_recorded_qstat(name: str, states: list[str]) -> None:
    jobs = parse_qstat((REC / name).read_text())
    assert [j.state for j in jobs] == states
    running = [j for j in jobs if j.running]
    assert running and all(j.host for j in running)


def test_recorded_qhost_and_details() -> None:
    hosts = parse_qhost((REC / "qhost-xml_sge-gridscheduler_smith_kimrojas.xml").read_text())
    assert len(hosts) == 165 and hosts[0].num_proc == 32  # "global" left out
    assert list(parse_job_details((REC / "ood_core_qstat_jr.xml").read_text())) == ["4147342"]
    multi = parse_job_details((REC / "ood_core_qstat_jr_multislot.xml").read_text())
    assert list(multi) == ["942195"]  # Son of Grid Engine: no <element> wrapper
    # SGE prints a not-well-formed <unknown_jobs> document for an unknown job: no job.
    assert parse_job_details((REC / "ood_core_qstat_jr_missing.xml").read_text()) == {}


@pytest.mark.parametrize(
    "text",
    [
        "",  # nothing
        "error: commlib error: got select error (Connection refused)",  # qmaster down
        "<qhost></qhost>",  # the wrong document
        "<job_info><job_list><state>r</state></job_list></job_info>",  # no job number
    ],
)
def test_garbage_is_a_parse_error(text: str) -> None:
    with pytest.raises(RMSParseError):
        parse_qstat(text)


def test_helpers() -> None:
    assert duration_s("0:10:00") == 600 and duration_s("INFINITY") is None
    assert mem_mb("23.5G") == 24064 and mem_mb("-") == 0
