"""Fixtures of the connector tests: a real Slurm cluster (session), contract-suite backends."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from harnesses import Harness, SimulatedHarness, SlurmHarness
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
    root = tmp_path_factory.mktemp("slurm")
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
        pytest.param("simulated"),
    ]
)
def backend(request: pytest.FixtureRequest) -> Harness:
    """Every backend of the contract suite."""
    if request.param == "slurm":
        return request.getfixturevalue("slurm")
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
