"""Grid Engine placement rules from parallel environments, on recorded outputs (the live SGE
suite uses the machine-wide Grid Engine and is not needed for this)."""

from __future__ import annotations

from pathlib import Path

import pytest
from replay_runner import ReplayRunner, Reply

from wattsched.connectors.base import PlacementError
from wattsched.connectors.rms_options import RMSOptions
from wattsched.connectors.sge import SGEConnector
from wattsched.connectors.sge_xml import allocation_placement, parse_job_details, parse_pe_config
from wattsched.scheduler.model import Placement

FIX = Path(__file__).parent / "fixtures"
LIVE = FIX / "sge-live"
REC = FIX / "sge"
# qconf -sp as Grid Engine 8.1 prints it (the fixture's own PE, with the rule under test).
PE = """pe_name smp
slots 9999
user_lists NONE
allocation_rule {rule}
control_slaves FALSE
job_is_first_task TRUE
"""


def test_recorded_jobs_name_their_parallel_environment() -> None:
    (one,) = parse_job_details((REC / "ood_core_qstat_jr.xml").read_text()).values()
    (multi,) = parse_job_details((REC / "ood_core_qstat_jr_multislot.xml").read_text()).values()
    assert (one.pe, multi.pe) == ("single", "slots")
    assert all(d.pe == "" for d in parse_job_details((LIVE / "qstat-j.xml").read_text()).values())


@pytest.mark.parametrize(
    ("rule", "placement"),
    [
        ("$pe_slots", Placement.PACK),  # every slot on one host
        ("$fill_up", Placement.FREE),
        ("$round_robin", Placement.FREE),
        ("1", Placement.SCATTER),  # one slot per host
        ("4", Placement.FREE),  # N per host: not expressible, SGE checks it itself
    ],
)
def test_allocation_rule_maps_to_the_rule(rule: str, placement: Placement) -> None:
    conf = parse_pe_config(PE.format(rule=rule))
    assert conf["pe_name"] == "smp"
    assert allocation_placement(conf["allocation_rule"]) is placement


def _connector(rule: str) -> tuple[SGEConnector, ReplayRunner]:
    """The live fixture's cluster with pending job 1 asking 4 slots of PE ``smp``."""
    qstat = (LIVE / "qstat-r-u.xml").read_text()
    head, sep, tail = qstat.partition("<JB_job_number>1</JB_job_number>")
    qstat = head + sep + tail.replace("<slots>1</slots>", "<slots>4</slots>", 1)
    details = (LIVE / "qstat-j.xml").read_text()
    details = details.replace(
        "<JB_job_number>1</JB_job_number>", "<JB_job_number>1</JB_job_number><JB_pe>smp</JB_pe>"
    )
    replies = {
        ("qhost", "-xml"): Reply((LIVE / "qhost.xml").read_text()),
        ("qstat", "-f", "-xml"): Reply((LIVE / "qstat-f.xml").read_text()),
        ("qstat", "-xml", "-r", "-u", "*"): Reply(qstat),
        ("qstat", "-xml", "-j", "1,3"): Reply(details),
        ("qstat", "-xml", "-j", "1"): Reply(details),
        ("qconf", "-sp", "smp"): Reply(PE.format(rule=rule)),
        ("qalter", "-q", "all.q@localhost", "1"): Reply(),
        ("qrls", "-h", "u", "1"): Reply(),
    }
    runner = ReplayRunner(replies)
    return SGEConnector(runner, RMSOptions(clock=lambda: 1795318300.0)), runner


def test_pe_slots_job_is_packed_and_a_spread_start_refused() -> None:
    conn, runner = _connector("$pe_slots")
    job = next(j for j in conn.snapshot().queued if j.id == "1")
    assert job.units == 4 and job.placement is Placement.PACK
    with pytest.raises(PlacementError, match="one node"):
        conn.start("1", ["localhost", "localhost", "other", "other"])
    assert not any(c[0] == "qalter" for c in runner.calls)
    conn.start("1", ["localhost"] * 4)
    assert ("qalter", "-q", "all.q@localhost", "1") in runner.calls
    assert sum(c[:2] == ("qconf", "-sp") for c in runner.calls) == 1  # read once


def test_fill_up_job_stays_free() -> None:
    conn, _ = _connector("$fill_up")
    job = next(j for j in conn.snapshot().queued if j.id == "1")
    assert job.placement is Placement.FREE
    conn.start("1", ["localhost"] * 4)
