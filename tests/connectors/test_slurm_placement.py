"""Multi-node Slurm jobs (``-N k``) planned by the dispatchers and started through the
connector run on k distinct nodes, on the real Slurm cluster; ``--exclusive`` jobs get empty
nodes. On the code before placement rules, ``-N2`` was planned ``n2,n2`` and ran on one node.
"""

from __future__ import annotations

import pytest
from harnesses import SlurmHarness

from wattsched.scheduler import dispatcher as registry
from wattsched.scheduler.model import Placement

pytestmark = pytest.mark.slurm


def _sbatch(h: SlurmHarness, *args: str) -> str:
    out = h.cluster.run("sbatch", "--parsable", "-o", "/dev/null", *args, "--wrap", "sleep 60")
    return out.strip().split(";")[0]


def _show(h: SlurmHarness, jid: str) -> dict[str, str]:
    line = h.cluster.run("scontrol", "show", "job", "-o", jid)
    return dict(kv.split("=", 1) for kv in line.split() if "=" in kv)


@pytest.mark.parametrize("name", ["prb", "hybrid"])
def test_multi_node_jobs_run_on_distinct_nodes(slurm: SlurmHarness, name: str) -> None:
    two = _sbatch(slurm, "-N2", "-n2")
    four = _sbatch(slurm, "-N4", "-n4")
    snap = slurm.connector.snapshot()
    jobs = {j.id: j for j in snap.queued}
    assert jobs[two].units == 2 and jobs[two].placement is Placement.SCATTER
    assert jobs[four].units == 4 and jobs[four].placement is Placement.SCATTER
    params = {"time_limit_s": 0.5} if name == "hybrid" else {}
    plan = registry.create(name, **params).plan(snap)
    now = plan.starts_now()
    assert now, "an empty 4-node cluster starts at least one of the jobs"
    for a in now:
        assert len(set(a.nodes)) == len(a.nodes), f"{name} planned {a.nodes}"
        slurm.connector.start(a.job_id, a.nodes)
        ran = slurm.ran_on(a.job_id)
        assert ran is not None and sorted(ran) == sorted(a.nodes)
        rec = _show(slurm, a.job_id)
        assert rec["NumNodes"].split("-")[0] == str(len(a.nodes))


def test_exclusive_job_gets_empty_nodes(slurm: SlurmHarness) -> None:
    small = slurm.submit(1)
    slurm.connector.start(small, ["n1"])
    assert slurm.ran_on(small) == ("n1",)
    excl = _sbatch(slurm, "--exclusive", "-n1")
    snap = slurm.connector.snapshot()
    job = next(j for j in snap.queued if j.id == excl)
    assert job.exclusive
    plan = registry.create("prb").plan(snap)
    a = next(a for a in plan.starts_now() if a.job_id == excl)
    assert "n1" not in a.nodes  # n1 runs a job; the exclusive one needs an empty node
    # A later job may not join the exclusive job's node.
    slurm.connector.start(excl, a.nodes)
    assert slurm.ran_on(excl) == tuple(a.nodes)
    later = slurm.submit(1)
    snap = slurm.connector.snapshot()
    plan = registry.create("prb").plan(snap)
    b = next(b for b in plan.starts_now() if b.job_id == later)
    assert not set(b.nodes) & set(a.nodes)
