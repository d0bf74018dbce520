"""``wattsched-power suspend|resume|status`` as Slurm runs them (a minimal PATH, signals
blocked), against real ipmi_sim BMCs through ipmitool; every command journaled in the store."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from ipmi_farm import PASSWORD, USER, BMCFarm

pytestmark = pytest.mark.ipmi
SCRIPT = Path(sys.executable).parent / "wattsched-power"


def _config(tmp_path: Path, farm: BMCFarm, driver: str = "ipmi-local") -> Path:
    pw = tmp_path / "bmc-password"
    pw.write_text(PASSWORD + "\n")
    pw.chmod(0o600)
    table = "\n".join(f'{n} = "{a}"' for n, a in farm.table().items())
    cfg = tmp_path / "wattsched.toml"
    cfg.write_text(
        f'database_url = "sqlite:///{tmp_path}/w.db"\n'
        '[connector]\nkind = "slurm"\n'
        f'[power]\ndriver = "{driver}"\nattempts = 2\nretry_backoff_s = 0\n'
        f'[power.bmc]\ntemplate = ""\nuser = "{USER}"\npassword_file = "{pw}"\n'
        f"[power.bmc.table]\n{table}\n"
    )
    subprocess.run(
        [str(Path(sys.executable).parent / "wattsched"), "migrate", "-c", str(cfg)],
        check=True, capture_output=True,
    )  # fmt: skip
    return cfg


def _as_slurm(args: list[str], cfg: Path) -> subprocess.CompletedProcess[str]:
    """Run like slurmctld does: PATH without /usr/sbin, SIGTERM blocked."""
    blocker = (
        "import os, signal, sys; signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM});"
        "os.execv(sys.argv[1], sys.argv[1:])"
    )
    env = {"PATH": "/bin", "WATTSCHED_CONFIG": str(cfg)}
    return subprocess.run(
        [sys.executable, "-c", blocker, str(SCRIPT), *args],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def _journal(tmp_path: Path) -> list[tuple[str, str, str]]:
    with sqlite3.connect(tmp_path / "w.db") as db:
        return list(db.execute("SELECT kind, nodes, state FROM actions ORDER BY id"))


def test_suspend_and_resume_switch_the_bmcs_and_journal(tmp_path: Path, bmc_farm: BMCFarm) -> None:
    cfg = _config(tmp_path, bmc_farm)
    r = _as_slurm(["suspend", "n[2-3]"], cfg)
    assert r.returncode == 0, r.stderr
    assert [bmc_farm.power(n) for n in bmc_farm.nodes] == [True, False, False, True]
    st = _as_slurm(["status", "n[1-3]"], cfg)
    assert st.stdout.split("\n")[:3] == ["n1 on", "n2 off", "n3 off"]
    r = _as_slurm(["resume", "n[2-3]"], cfg)
    assert r.returncode == 0, r.stderr
    assert all(bmc_farm.power(n) for n in bmc_farm.nodes)
    rows = _journal(tmp_path)
    assert rows == [
        ("power_off", "n2", "done"), ("power_off", "n3", "done"),
        ("power_on", "n2", "done"), ("power_on", "n3", "done"),
    ]  # fmt: skip
    assert PASSWORD not in (tmp_path / "w.db").read_bytes().decode("latin-1")


def test_a_failed_node_exits_1_and_is_journaled_failed(tmp_path: Path, bmc_farm: BMCFarm) -> None:
    cfg = _config(tmp_path, bmc_farm)
    bmc_farm.stop_bmc("n4")
    try:
        r = _as_slurm(["suspend", "n[3-4]"], cfg)
    finally:
        bmc_farm.restart_bmc("n4")
        bmc_farm.wait_ready()
    assert r.returncode == 1 and "n4" in r.stderr and PASSWORD not in r.stderr
    assert _journal(tmp_path) == [("power_off", "n3", "done"), ("power_off", "n4", "failed")]
    bmc_farm.set_power("n3", True)


def test_bad_input_is_refused_with_the_key(tmp_path: Path, bmc_farm: BMCFarm) -> None:
    cfg = _config(tmp_path, bmc_farm)
    r = _as_slurm(["suspend", "n9"], cfg)
    assert r.returncode == 2 and "n9" in r.stderr and "no BMC address" in r.stderr
    (tmp_path / "bmc-password").chmod(0o644)
    r = _as_slurm(["suspend", "n1"], cfg)
    assert r.returncode == 2 and "readable by others" in r.stderr
    assert bmc_farm.power("n1")
    rms = cfg.read_text().replace('driver = "ipmi-local"', 'driver = "rms"')
    cfg.write_text(rms)
    r = _as_slurm(["suspend", "n1"], cfg)
    assert r.returncode == 2 and "would ask Slurm" in r.stderr


def test_the_console_script_is_installed() -> None:
    assert SCRIPT.exists() or shutil.which("wattsched-power"), "pip install did not add it"
    assert os.access(SCRIPT, os.X_OK)
