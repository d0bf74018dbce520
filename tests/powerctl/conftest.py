"""Fixtures of the node power policy tests (pure and fast: no services).

The hand-made nodes, snapshots and workloads live in ``power_builders.py`` next to the tests
(imported by name, as the other test folders do with their helpers).
"""

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "connectors"))


@pytest.fixture(scope="module")
def bmc_farm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """Four real ipmi_sim BMCs (n1..n4) on loopback."""
    from ipmi_farm import BMCFarm

    farm = BMCFarm(tmp_path_factory.mktemp("bmcs"), 4)
    try:
        farm.start()
    except (RuntimeError, OSError) as exc:
        farm.stop()
        pytest.skip(f"ipmi_sim BMCs did not come up: {exc}")
    yield farm
    farm.stop()


@pytest.fixture(scope="module")
def power_sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """A real sshd on loopback: the management host of the ipmi-ssh driver."""
    from sshd_server import start_sshd

    try:
        server = start_sshd(tmp_path_factory.mktemp("sshd"))
    except (RuntimeError, OSError) as exc:
        pytest.skip(f"sshd did not come up: {exc}")
    yield server
    server.stop()
