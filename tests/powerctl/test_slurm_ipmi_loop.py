"""The whole loop on real parts: a 4-node Slurm whose nodes are powered by ipmi_sim BMCs (power
on starts that node's slurmd, power off kills it), the daemon's cycle in enforce mode with the
idle policy, switching through ``ipmi-ssh`` (paramiko to a real sshd, then ipmitool) or through
Slurm's own power saving calling ``wattsched-power`` (``rms``).

An idle node is switched off: its BMC says off and its slurmd is gone. A job that needs every
node arrives: the policy switches the node on, it comes back in Slurm, and the job runs there.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from harnesses import SlurmHarness
from ipmi_farm import PASSWORD, USER, BMCFarm
from slurm_cluster import SlurmCluster, missing_binaries, start_cluster
from sqlalchemy import select

from wattsched.connectors.rms_options import RMSOptions
from wattsched.connectors.runner import SSHRunner
from wattsched.daemon.loop import Service
from wattsched.daemon.power_cycle import PowerControl
from wattsched.daemon.store import Store
from wattsched.daemon.store_models import ActionRow
from wattsched.daemon.store_schema import make_engine, migrate
from wattsched.powerctl.drivers.bmc import BMCTable, Secret
from wattsched.powerctl.drivers.ipmitool import IpmitoolDriver
from wattsched.powerctl.idle_timeout import IdleTimeoutPolicy
from wattsched.powerctl.machine import PowerBook
from wattsched.powerctl.switching import Switcher
from wattsched.scheduler import dispatcher as registry

pytestmark = [pytest.mark.slurm, pytest.mark.ipmi, pytest.mark.ssh, pytest.mark.slow]
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def bmc_slurm() -> Iterator[tuple[SlurmCluster, BMCFarm]]:
    missing = missing_binaries()
    if missing or shutil.which("ipmi_sim") is None:
        pytest.skip(f"Slurm or ipmi_sim not installed ({missing})")
    root = Path(tempfile.mkdtemp(prefix="wattsched-slurm-ipmi-"))
    root.chmod(0o755)
    lua = REPO / "deploy" / "slurm" / "job_submit.lua"
    cluster = start_cluster(root, 4, slurmd_nodes=0, job_submit_lua=lua)
    # Each node's power is its slurmd, unless a test made the node "broken" (it powers on
    # and never comes back).
    for n in cluster.nodes:
        script = root / f"start-{n}.sh"
        script.write_text(
            f"#!/bin/sh\n[ -e {root}/broken-{n} ] && exec sleep 100000\n"
            f"exec /usr/sbin/slurmd -b -D -N {n} -f {cluster.conf}\n"
        )
        script.chmod(0o755)
    farm = BMCFarm(root / "bmcs", 4, startcmd=f"{root}/start-{{node}}.sh")
    try:
        farm.start()
        if not cluster.wait_idle(60):
            raise RuntimeError(f"nodes not idle: {cluster.node_states()}")
    except BaseException:
        farm.stop()
        cluster.stop()
        raise
    yield cluster, farm
    farm.stop()
    cluster.stop()
    shutil.rmtree(root, ignore_errors=True)


def slurmd_alive(node: str, conf: Path) -> bool:
    """Whether this cluster's slurmd of ``node`` runs (other Slurm fixtures may run their own
    slurmd of a node of the same name: the config path tells them apart)."""
    pattern = f"slurmd -b -D -N {node} -f {conf}"
    r = subprocess.run(["pgrep", "-f", pattern], capture_output=True, check=False)
    return r.returncode == 0


def wait(cond: Callable[[], bool], what: str, timeout: float = 90) -> None:
    end = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < end, f"timed out waiting for {what}"
        time.sleep(0.5)


def harness(cluster: SlurmCluster) -> SlurmHarness:
    """The Slurm backend; nodes boot in seconds here (a real one: minutes)."""
    h = SlurmHarness(cluster)
    h.connector.options = RMSOptions(default_walltime_s=3600, boot_s=3)
    return h


def service(h: SlurmHarness, tmp_path: Path, control: PowerControl) -> Service:
    engine = make_engine(f"sqlite:///{tmp_path / 'w.db'}")
    migrate(engine)
    return Service(
        h.connector, registry.create("prb"), Store(engine), mode="enforce", power=control
    )


def run_loop(svc: Service, h: SlurmHarness, farm: BMCFarm) -> None:
    conf = h.cluster.conf
    """Switch one idle node off, then bring it back for a job that needs every node."""
    assert svc.run_now().ok
    wait(lambda: any(not farm.power(n) for n in farm.nodes), "a BMC to say off", timeout=15)
    off = [n for n in farm.nodes if not farm.power(n)]
    with svc.store.sessions() as s:
        acts = [(a.kind, a.nodes, a.state, a.error) for a in s.scalars(select(ActionRow))]
    assert len(off) == 1, f"one node should be off: {off}; journal {acts}; {svc.last}"
    node = off[0]
    wait(lambda: not slurmd_alive(node, conf), f"{node}'s slurmd to stop")

    def seen_off() -> bool:
        assert svc.run_now().ok and svc.last is not None
        return svc.last.nodes_by_state["off"] == 1

    wait(seen_off, "the cycle to see the node off", timeout=30)
    assert all(farm.power(n) for n in farm.nodes if n != node), "only one node goes off"

    jid = h.submit(4, seconds=20)  # -N 4: needs the node that is off

    def started() -> bool:
        assert svc.run_now().ok
        return h.ran_on(jid, timeout=0.1) is not None

    wait(started, "the job to start on the node switched back on", timeout=120)
    ran = h.ran_on(jid)
    assert ran is not None and node in ran
    assert farm.power(node) and slurmd_alive(node, conf)
    with svc.store.sessions() as s:
        rows = [(a.kind, a.nodes, a.state) for a in s.scalars(select(ActionRow))]
    assert ("power_off", node, "done") in rows and ("power_on", node, "done") in rows
    assert ("start", ",".join(sorted(ran)), "done") in [
        (k, ",".join(sorted((n or "").split(","))), st) for k, n, st in rows
    ]


def cleanup(cluster: SlurmCluster, farm: BMCFarm) -> None:
    cluster.cancel_all()
    for n in farm.nodes:
        if not farm.power(n):
            farm.ipmitool(n, "chassis", "power", "on")
    for n, state in cluster.node_states().items():
        if "POWER" in state:
            wait(lambda n=n: "POWERING_DOWN" not in cluster.node_states()[n], f"{n} down")
            cluster.run("scontrol", "update", f"NodeName={n}", "State=POWER_UP", check=False)
    assert cluster.wait_idle(60), cluster.node_states()


def test_ipmi_ssh_switches_an_idle_node_off_and_back_for_a_job(
    bmc_slurm: tuple[SlurmCluster, BMCFarm], power_sshd: Any, tmp_path: Path
) -> None:
    cluster, farm = bmc_slurm
    h = harness(cluster)
    ssh = SSHRunner(
        "127.0.0.1", user="root", port=power_sshd.port, key_file=power_sshd.key_file,
        known_hosts=power_sshd.known_hosts,
    )  # fmt: skip
    driver = IpmitoolDriver(
        BMCTable(template=None, user=USER, table=farm.table()), Secret(PASSWORD), ssh=ssh
    )
    control = PowerControl(
        Switcher(driver, attempts=2, backoff_s=0.2),
        IdleTimeoutPolicy(idle_s=0, min_on=3),
        PowerBook(boot_timeout_s=120, shutdown_timeout_s=60),
    )
    try:
        run_loop(service(h, tmp_path, control), h, farm)
    finally:
        driver.close()
        cleanup(cluster, farm)


def test_slurm_power_saving_through_wattsched_power(
    bmc_slurm: tuple[SlurmCluster, BMCFarm], tmp_path: Path
) -> None:
    cluster, farm = bmc_slurm
    # Slurm's Suspend/ResumeProgram become wattsched-power with an ipmi-local config.
    pw = tmp_path / "pw"
    pw.write_text(PASSWORD + "\n")
    pw.chmod(0o600)
    table = "\n".join(f'{n} = "{a}"' for n, a in farm.table().items())
    cfg = tmp_path / "power.toml"
    cfg.write_text(
        f'database_url = "sqlite:///{tmp_path / "programs.db"}"\n[connector]\nkind = "slurm"\n'
        f'[power]\ndriver = "ipmi-local"\n[power.bmc]\ntemplate = ""\nuser = "{USER}"\n'
        f'password_file = "{pw}"\n[power.bmc.table]\n{table}\n'
    )
    bindir = Path(sys.executable).parent
    subprocess.run(
        [str(bindir / "wattsched"), "migrate", "-c", str(cfg)], check=True, capture_output=True
    )
    for action in ("suspend", "resume"):
        script = cluster.root / "etc" / f"{action}.py"
        script.write_text(
            f'#!/bin/sh\nexec {bindir / "wattsched-power"} {action} -c {cfg} "$1" '
            f">> {cluster.root / 'log' / 'wattsched-power.log'} 2>&1\n"
        )
    h = harness(cluster)
    control = PowerControl.through_connector(
        h.connector, IdleTimeoutPolicy(idle_s=0, min_on=3),
        book=PowerBook(boot_timeout_s=120, shutdown_timeout_s=60),
    )  # fmt: skip
    try:
        run_loop(service(h, tmp_path, control), h, farm)
        log = (cluster.root / "log" / "wattsched-power.log").read_text()
        assert "power_off" in log and "power_on" in log
    finally:
        cleanup(cluster, farm)


def test_a_node_that_never_comes_back_is_marked_failed_and_the_cycle_goes_on(
    bmc_slurm: tuple[SlurmCluster, BMCFarm], tmp_path: Path
) -> None:
    """Switched off, then on for a job, a node whose BMC says on but whose slurmd never
    returns is ``failed`` after the boot time limit (with the time, the back-off on); the
    cycle goes on, the job waits, nothing is started on it."""
    cluster, farm = bmc_slurm
    h = harness(cluster)
    driver = IpmitoolDriver(
        BMCTable(template=None, user=USER, table=farm.table()), Secret(PASSWORD)
    )
    control = PowerControl(
        Switcher(driver, attempts=2, backoff_s=0.2),
        IdleTimeoutPolicy(idle_s=0, min_on=3),
        PowerBook(boot_timeout_s=10, shutdown_timeout_s=60),
    )
    svc = service(h, tmp_path, control)
    try:
        assert svc.run_now().ok
        wait(lambda: any(not farm.power(n) for n in farm.nodes), "a BMC to say off", timeout=15)
        node = next(n for n in farm.nodes if not farm.power(n))
        (cluster.root / f"broken-{node}").touch()
        # Slurm notices the dead slurmd (SlurmdTimeout): the node is down for it too.
        wait(lambda: "DOWN" in cluster.node_states()[node] or "NOT_RESPONDING"
             in cluster.node_states()[node], f"Slurm to miss {node}", timeout=90)  # fmt: skip
        jid = h.submit(4, seconds=20)

        def failed() -> bool:
            s = svc.run_now()
            assert s.ok
            return s.nodes_by_state.get("failed", 0) == 1

        wait(failed, f"{node} to be marked failed", timeout=60)
        assert farm.power(node), "the BMC did switch it on"
        rec = control.book.nodes[node]
        assert rec.last_failure is not None
        assert h.ran_on(jid, timeout=0.5) is None, "nothing may start on a node that is not back"
        with svc.store.sessions() as s:
            kinds = [(a.kind, a.nodes, a.state) for a in s.scalars(select(ActionRow))]
        assert ("power_on", node, "done") in kinds
        assert not any(k == "start" for k, _, _ in kinds)
    finally:
        (cluster.root / f"broken-{node}").unlink(missing_ok=True)
        farm.ipmitool(node, "chassis", "power", "off")
        time.sleep(1)
        cleanup(cluster, farm)
