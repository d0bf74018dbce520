"""Fixtures of the connector tests: a real Slurm cluster (session), contract-suite backends."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from harnesses import Harness, PBSHarness, SGEHarness, SimulatedHarness, SlurmHarness
from sge_cluster import SGECluster, start_sge
from slurm_cluster import SlurmCluster, missing_binaries, start_cluster
from sshd_server import SSHServer, start_sshd

REPO = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).parent / "fixtures"


def _skip(reason: str) -> None:
    # Printed as well, so a skipped real-service suite is visible in `make test` output.
    sys.stderr.write(f"\n[connectors] SKIP: {reason}\n")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmCluster]:
    """A real 4-node Slurm 22.05 cluster on loopback, jobs gated by deploy/slurm/job_submit.lua."""
    missing = missing_binaries()
    if missing:
        _skip(f"Slurm not installed ({', '.join(missing)}): add slurm-wlm munge via make test")
    if os.geteuid() != 0:
        _skip("the Slurm fixture needs root (SlurmUser=root, munge key ownership)")
    # World-readable (not under pytest's 0700 temp root): ordinary users (nobody) submit
    # jobs in the gate tests, and their sbatch must read slurm.conf.
    root = Path(tempfile.mkdtemp(prefix="wattsched-slurm-"))
    root.chmod(0o755)
    try:
        cluster = start_cluster(
            root, 4, job_submit_lua=REPO / "deploy" / "slurm" / "job_submit.lua"
        )
    except RuntimeError as exc:
        log = root / "log" / "slurmctld.log"
        tail = log.read_text()[-2000:] if log.exists() else ""
        _skip(f"Slurm cluster did not come up: {exc}\n{tail}")
    yield cluster
    cluster.stop()
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture()
def slurm(slurm_cluster: SlurmCluster) -> Iterator[SlurmHarness]:
    """The Slurm backend, clean (no jobs, all nodes idle and powered) before each test."""
    h = SlurmHarness(slurm_cluster)
    h.cleanup()
    yield h
    h.cleanup()


@pytest.fixture(
    params=[
        pytest.param("slurm", marks=pytest.mark.slurm),
        pytest.param("sge", marks=pytest.mark.sge),
        pytest.param("simulated"),
        pytest.param("pbs"),
    ]
)
def backend(request: pytest.FixtureRequest) -> Harness:
    """Every backend of the contract suite."""
    if request.param in ("slurm", "sge"):
        return request.getfixturevalue(request.param)
    if request.param == "pbs":
        return PBSHarness()
    return SimulatedHarness()


@pytest.fixture(scope="session")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SSHServer]:
    """A real sshd on a loopback port (root login with a generated ed25519 key)."""
    try:
        server = start_sshd(tmp_path_factory.mktemp("sshd"))
    except (RuntimeError, OSError, subprocess.SubprocessError) as exc:
        _skip(f"sshd did not come up: {exc}")
    yield server
    server.stop()


@pytest.fixture(scope="session")
def sge_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SGECluster]:
    """A real Grid Engine (qmaster + one execd) under a private SGE_ROOT; skipped with the
    reason printed when it does not come up within a minute."""
    from sge_cluster import missing_binaries as sge_missing

    missing = sge_missing()
    if missing:
        _skip(f"Grid Engine not installed ({', '.join(missing)})")
    if os.geteuid() != 0:
        _skip("the Grid Engine fixture needs root")
    try:
        cluster = start_sge(tmp_path_factory.mktemp("sge"), timeout=60)
    except (RuntimeError, OSError, subprocess.SubprocessError) as exc:
        _skip(f"Grid Engine did not come up (limit: one minute): {exc}")
    yield cluster
    cluster.stop()


@pytest.fixture()
def sge(sge_cluster: SGECluster) -> Iterator[SGEHarness]:
    """The Grid Engine backend, with no job left before and after each test."""
    h = SGEHarness(sge_cluster)
    h.cleanup()
    yield h
    h.cleanup()
