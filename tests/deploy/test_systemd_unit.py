"""The systemd unit of deploy/systemd passes ``systemd-analyze verify`` (where available)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

UNIT = Path(__file__).resolve().parents[2] / "deploy" / "systemd" / "wattsched.service"


def test_the_unit_verifies(tmp_path: Path) -> None:
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip(
            "not applicable: systemd-analyze is not installed here (verified where available)"
        )
    # The unit names the install path /opt/wattsched; point it at this install's script.
    script = Path(sys.executable).parent / "wattsched"
    text = UNIT.read_text().replace("/opt/wattsched/bin/wattsched", str(script))
    unit = tmp_path / "wattsched.service"
    unit.write_text(text)
    r = subprocess.run([analyze, "verify", str(unit)], capture_output=True, text=True, check=False)
    problems = [
        line for line in (r.stdout + r.stderr).splitlines()
        # systemd in a container without PID 1 systemd may warn about its own setup.
        if "wattsched.service" in line
    ]  # fmt: skip
    assert r.returncode == 0 and not problems, r.stdout + r.stderr
    for option in ("NoNewPrivileges=yes", "ProtectSystem=strict", "CapabilityBoundingSet=",
                   "SystemCallFilter=@system-service", "UMask=0077"):  # fmt: skip
        assert option in text
