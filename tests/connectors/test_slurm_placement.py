"""Multi-node jobs on the real Slurm cluster (issue 17, item 1): a ``-N k`` job is k units on
k distinct nodes; PRB and the hybrid plan it so, the connector pins exactly those nodes, and
refuses (job left pending) a node list that would run it on fewer."""

from __future__ import annotations

from typing import Literal

import pytest
from harnesses import SlurmHarness

from wattsched.connectors.base import PlacementError
from wattsched.connectors.slurm import SlurmConnector
from wattsched.scheduler import dispatcher as registry
from wattsched.scheduler.model import Placement

pytestmark = pytest.mark.slurm


@pytest.mark.parametrize("name", ["prb", "hybrid"])
def test_multi_node_jobs_run_on_as_many_distinct_nodes(slurm: SlurmHarness, name: str) -> None:
    two = slurm.submit(2, 50)  # sbatch -N2 -n2 --wrap 'sleep 50'
    four = slurm.submit(4, 50)  # sbatch -N4 -n4
    snap = slurm.connector.snapshot()
    queued = {j.id: j for j in snap.queued}
    assert queued[two].units == 2 and queued[two].placement is Placement.SCATTER
    assert queued[four].units == 4 and queued[four].placement is Placement.SCATTER
    params = {"time_limit_s": 1.0} if name == "hybrid" else {}
    plan = registry.create(name, **params).plan(snap)
    starts = {a.job_id: a.nodes for a in plan.starts_now()}
    assert set(starts) == {two, four}, plan
    for jid, nodes in starts.items():
        assert len(set(nodes)) == len(nodes), f"{name} planned {nodes} for job {jid}"
        slurm.connector.start(jid, nodes)
    for jid, k in ((two, 2), (four, 4)):
        ran = slurm.ran_on(jid)
        assert ran is not None and len(set(ran)) == k, (jid, ran)
        assert sorted(ran) == sorted(starts[jid])
        assert slurm.cluster.run("scontrol", "show", "job", "-o", jid).count(f"NumNodes={k} ")


def test_start_refuses_a_placement_that_breaks_the_node_count(slurm: SlurmHarness) -> None:
    jid = slurm.submit(2, 50)
    with pytest.raises(PlacementError) as info:
        slurm.connector.start(jid, ["n2", "n2"])
    assert info.value.job_id == jid and info.value.nodes == ("n2", "n2")
    with pytest.raises(PlacementError, match="NumNodes=2"):
        slurm.connector.start(jid, ["n1", "n2", "n3"])
    with pytest.raises(PlacementError, match="NumNodes=2"):
        slurm.connector.start(jid, ["n1"])
    assert slurm.job_state(jid) == "PENDING"
    rec = slurm.cluster.run("scontrol", "show", "job", "-o", jid)
    assert "NumNodes=2" in rec and "Priority=0" in rec, "the job must be left unchanged"
    slurm.connector.start(jid, ["n2", "n3"])
    assert slurm.ran_on(jid) == ("n2", "n3")


def test_exclusive_job_is_read_as_exclusive(slurm: SlurmHarness) -> None:
    out = slurm.cluster.run(
        "sbatch", "--parsable", "-o", "/dev/null", "-N", "1", "--exclusive", "--wrap", "sleep 50"
    )
    excl = out.strip().split(";")[0]
    plain = slurm.submit(1, 50)
    sources: tuple[Literal["squeue-json", "scontrol"], ...] = ("squeue-json", "scontrol")
    for source in sources:
        conn = SlurmConnector(slurm.connector.runner, slurm.connector.options, job_source=source)
        queued = {j.id: j for j in conn.snapshot().queued}
        assert queued[excl].exclusive is True, source
        assert queued[plain].exclusive is False, source
        assert queued[plain].placement is Placement.FREE and queued[plain].units == 1
