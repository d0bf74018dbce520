"""The power drivers against real BMC simulators (ipmi_sim), real ipmitool and a real sshd."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from ipmi_farm import PASSWORD, USER, BMCFarm

from wattsched.powerctl.drivers.base import (
    BMCAuthError,
    BMCUnreachable,
    PowerCommandError,
    PowerCommandTimeout,
    PowerDriver,
)
from wattsched.powerctl.drivers.bmc import BMCTable, Secret
from wattsched.powerctl.drivers.ipmitool import REMOTE_WRAPPER, IpmitoolDriver, ipmitool_argv
from wattsched.powerctl.drivers.native import NativeIPMIDriver
from wattsched.powerctl.switching import Switcher

pytestmark = pytest.mark.ipmi
KINDS = ["ipmi-local", "ipmi-ssh", "ipmi-native"]


def make_driver(
    kind: str, farm: BMCFarm, sshd: Any, password: str = PASSWORD, **kw: Any
) -> PowerDriver:
    table = BMCTable(template=None, user=USER, table=farm.table())
    if kind == "ipmi-native":
        return NativeIPMIDriver(table, Secret(password))
    if kind == "ipmi-local":
        return IpmitoolDriver(table, Secret(password), **kw)
    from wattsched.connectors.runner import SSHRunner

    runner = SSHRunner(
        "127.0.0.1", user="root", port=sshd.port, key_file=sshd.key_file,
        known_hosts=sshd.known_hosts,
    )  # fmt: skip
    return IpmitoolDriver(table, Secret(password), ssh=runner, **kw)


@pytest.fixture(params=KINDS)
def kind(request: pytest.FixtureRequest) -> str:
    if request.param == "ipmi-ssh":
        request.getfixturevalue("power_sshd")
    return str(request.param)


@pytest.fixture
def sshd(kind: str, request: pytest.FixtureRequest) -> Any:
    return request.getfixturevalue("power_sshd") if kind == "ipmi-ssh" else None


def test_switch_off_and_on_and_read_back(kind: str, bmc_farm: BMCFarm, sshd: Any) -> None:
    drv = make_driver(kind, bmc_farm, sshd)
    try:
        bmc_farm.set_power("n2", True)
        assert drv.status("n2") is True
        drv.switch("n2", False)
        assert bmc_farm.power("n2") is False, "the BMC did not switch the node off"
        assert drv.status("n2") is False
        drv.switch("n2", True)
        assert bmc_farm.power("n2") is True
        assert drv.status("n2") is True
    finally:
        drv.close()


def test_a_wrong_password_is_refused_once_not_retried(
    kind: str, bmc_farm: BMCFarm, sshd: Any
) -> None:
    drv = make_driver(kind, bmc_farm, sshd, password="wrong-pass")
    [res] = Switcher(drv, attempts=3, backoff_s=0).run([("n1", False)])
    drv.close()
    assert isinstance(res.error, BMCAuthError) and res.attempts == 1
    assert bmc_farm.power("n1") is True
    assert "wrong-pass" not in str(res.error)


def test_a_bmc_that_does_not_answer_is_retried_then_reported(
    kind: str, bmc_farm: BMCFarm, sshd: Any
) -> None:
    bmc_farm.stop_bmc("n4")
    try:
        drv = make_driver(kind, bmc_farm, sshd)
        results = Switcher(drv, attempts=2, backoff_s=0).run([("n4", False), ("n3", False)])
        drv.close()
    finally:
        bmc_farm.restart_bmc("n4")
        bmc_farm.wait_ready()
    dead, alive = results
    assert isinstance(dead.error, BMCUnreachable) and dead.attempts == 2
    assert alive.ok and bmc_farm.power("n3") is False, "the other node was switched anyway"
    bmc_farm.set_power("n3", True)


def test_many_nodes_switch_in_parallel(bmc_farm: BMCFarm) -> None:
    drv = make_driver("ipmi-local", bmc_farm, None)
    results = Switcher(drv, max_parallel=4).run([(n, False) for n in bmc_farm.nodes])
    assert all(r.ok for r in results)
    assert not any(bmc_farm.power(n) for n in bmc_farm.nodes)
    results = Switcher(drv, max_parallel=4).run([(n, True) for n in bmc_farm.nodes])
    assert all(r.ok for r in results) and all(bmc_farm.power(n) for n in bmc_farm.nodes)


def test_a_command_past_its_limit_is_a_timeout(tmp_path: Path, bmc_farm: BMCFarm) -> None:
    hang = tmp_path / "ipmitool"
    hang.write_text("#!/bin/sh\nexec sleep 30\n")
    hang.chmod(0o755)
    drv = IpmitoolDriver(
        BMCTable(template=None, table=bmc_farm.table()), Secret(PASSWORD),
        timeout_s=0.5, ipmitool=str(hang),
    )  # fmt: skip
    [res] = Switcher(drv, attempts=2, backoff_s=0).run([("n1", False)])
    assert isinstance(res.error, PowerCommandTimeout) and res.attempts == 2
    assert res.outcome_unknown


def test_a_changed_ssh_host_key_is_refused(
    tmp_path: Path, bmc_farm: BMCFarm, power_sshd: Any
) -> None:
    from wattsched.connectors.runner import SSHRunner

    other = tmp_path / "k"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    kh = tmp_path / "known_hosts"
    kh.write_text(
        f"[127.0.0.1]:{power_sshd.port} {(tmp_path / 'k.pub').read_text().rsplit(' ', 1)[0]}\n"
    )
    runner = SSHRunner(
        "127.0.0.1", user="root", port=power_sshd.port, key_file=power_sshd.key_file,
        known_hosts=kh,
    )  # fmt: skip
    drv = IpmitoolDriver(
        BMCTable(template=None, table=bmc_farm.table()), Secret(PASSWORD), ssh=runner
    )
    [res] = Switcher(drv, attempts=3, backoff_s=0).run([("n1", False)])
    assert isinstance(res.error, PowerCommandError) and not res.error.temporary
    assert res.attempts == 1 and "host key" in str(res.error)
    assert bmc_farm.power("n1") is True


def test_the_password_is_in_no_command_line() -> None:
    from wattsched.connectors.runner import SSHRunner

    table = BMCTable(template=None, table={"n1": "127.0.0.1:623"})
    argv = ipmitool_argv(table.address("n1"), "off")
    assert "-E" in argv and "-P" not in argv and PASSWORD not in argv
    runner = SSHRunner("h", user="u", key_file="/k", known_hosts="/kh")
    line = runner.remote_command(["sh", "-c", REMOTE_WRAPPER, "sh", *argv])
    assert PASSWORD not in line and "IPMI_PASSWORD" in line
    assert PASSWORD not in repr(Secret(PASSWORD)) and PASSWORD not in str(Secret(PASSWORD))


def test_ipmitool_is_installed() -> None:
    """`make test` installs ipmitool and openipmi (.ci/apt-packages.txt)."""
    assert shutil.which("ipmitool") and shutil.which("ipmi_sim")


def test_ipmi_ssh_sends_a_batch_in_one_channel(bmc_farm: BMCFarm, power_sshd: Any) -> None:
    """Many nodes over SSH: one remote shell runs their ipmitool calls side by side (the
    password read once from stdin, never in the command line); a dead BMC in the batch is
    retried alone and reported, the others switched."""
    drv = make_driver("ipmi-ssh", bmc_farm, power_sshd)
    assert isinstance(drv, IpmitoolDriver)
    conn = drv._ssh[0]
    sent: list[tuple[list[str], bytes | None]] = []
    real = conn.run

    def spy(argv: Any, **kw: Any) -> Any:
        sent.append((list(argv), kw.get("stdin")))
        return real(argv, **kw)

    conn.run = spy  # type: ignore[method-assign]
    bmc_farm.stop_bmc("n4")
    try:
        results = Switcher(drv, attempts=2, backoff_s=0).run([(n, False) for n in bmc_farm.nodes])
    finally:
        bmc_farm.restart_bmc("n4")
        bmc_farm.wait_ready()
    assert [r.ok for r in results] == [True, True, True, False]
    assert isinstance(results[3].error, BMCUnreachable) and results[3].attempts == 2
    assert [bmc_farm.power(n) for n in ("n1", "n2", "n3")] == [False, False, False]
    batch_argv, stdin = sent[0]
    assert batch_argv[:2] == ["sh", "-c"] and batch_argv[2].count("chassis power off") == 4
    assert PASSWORD not in " ".join(batch_argv) and stdin == (PASSWORD + "\n").encode()
    assert len(sent) == 2  # the batch, then n4 alone
    Switcher(drv).run([(n, True) for n in bmc_farm.nodes])
    assert all(bmc_farm.power(n) for n in bmc_farm.nodes)
    drv.close()
