"""Power switching benchmark (issue 10): 64 real ipmi_sim BMCs switched off, then on, through
the ``ipmi-local`` and ``ipmi-ssh`` drivers (a real sshd on loopback) and ``ipmi-native``, in
parallel through the daemon's :class:`~wattsched.powerctl.switching.Switcher`.

    .venv/bin/python bench/power_switch.py [--nodes 64] [--repeat 3] [--parallel 32]

Results: ``bench/results/power_switch.{md,json}`` (machine, date, commit, command, every run).
Goal: 64 nodes under 5 s each way, no failure.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "tests" / "powerctl"), str(REPO / "tests" / "connectors")]

from ipmi_farm import PASSWORD, USER, BMCFarm  # noqa: E402
from sshd_server import start_sshd  # noqa: E402

from wattsched.connectors.runner import SSHRunner  # noqa: E402
from wattsched.powerctl.drivers.base import PowerDriver  # noqa: E402
from wattsched.powerctl.drivers.bmc import BMCTable, Secret  # noqa: E402
from wattsched.powerctl.drivers.ipmitool import IpmitoolDriver  # noqa: E402
from wattsched.powerctl.drivers.native import NativeIPMIDriver  # noqa: E402
from wattsched.powerctl.switching import Switcher  # noqa: E402


def commit() -> str:
    out = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                         capture_output=True, text=True, check=False)  # fmt: skip
    return out.stdout.strip() or "unknown"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--nodes", type=int, default=64)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--parallel", type=int, default=32)
    ap.add_argument("--ssh-connections", type=int, default=1)
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="wattsched-bench-bmc-"))
    farm = BMCFarm(root / "bmcs", args.nodes)
    t0 = time.perf_counter()
    farm.start()
    print(f"{args.nodes} BMCs up in {time.perf_counter() - t0:.1f} s", flush=True)
    sshd = start_sshd(root / "sshd")
    table = BMCTable(template=None, user=USER, table=farm.table())
    drivers: dict[str, PowerDriver] = {
        "ipmi-local": IpmitoolDriver(table, Secret(PASSWORD)),
        "ipmi-ssh": IpmitoolDriver(
            table, Secret(PASSWORD),
            ssh=[SSHRunner("127.0.0.1", user="root", port=sshd.port, key_file=sshd.key_file,
                           known_hosts=sshd.known_hosts) for _ in range(args.ssh_connections)],
        ),
        "ipmi-native": NativeIPMIDriver(table, Secret(PASSWORD)),
    }  # fmt: skip
    runs: list[dict[str, object]] = []
    try:
        for name, drv in drivers.items():
            sw = Switcher(drv, max_parallel=args.parallel, attempts=3, backoff_s=0.5)
            for i in range(args.repeat):
                for on in (False, True):
                    t = time.perf_counter()
                    res = sw.run([(n, on) for n in farm.nodes])
                    wall = time.perf_counter() - t
                    wrong = [n for n in farm.nodes if farm.power(n) is not on]
                    row = {
                        "driver": name, "run": i, "command": "on" if on else "off",
                        "wall_s": round(wall, 3), "failures": sum(not r.ok for r in res),
                        "retries": sum(r.attempts - 1 for r in res), "wrong_state": len(wrong),
                    }  # fmt: skip
                    runs.append(row)
                    print(row, flush=True)
            drv.close()
    finally:
        farm.stop()
        sshd.stop()
    write(args, runs)


def write(args: argparse.Namespace, runs: list[dict[str, object]]) -> None:
    out = REPO / "bench" / "results"
    stamp = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    cmd = "python bench/power_switch.py " + " ".join(sys.argv[1:])
    uname = " ".join(platform.uname())
    machine = f"{os.cpu_count()} cores, `{uname}`, Python {platform.python_version()}"
    (out / "power_switch.json").write_text(json.dumps(
        {"date": stamp, "commit": commit(), "command": cmd, "machine": machine, "runs": runs},
        indent=1))  # fmt: skip
    lines = [
        "# Power switching: 64 ipmi_sim BMCs through the drivers, in parallel",
        "",
        f"- date: {stamp}; commit {commit()}",
        f"- command: `{cmd}`",
        f"- machine: {machine}",
        f"- {args.nodes} BMCs (real `ipmi_sim`), {args.parallel} commands at once, goal: under 5 s"
        " each way, 0 failures",
        "",
        "| driver | command | wall s (best) | wall s (worst) | failures | retries"
        " | nodes in the wrong state |",
        "|---|---|---|---|---|---|---|",
    ]
    for drv in dict.fromkeys(str(r["driver"]) for r in runs):
        for cmd_ in ("off", "on"):
            rows = [r for r in runs if r["driver"] == drv and r["command"] == cmd_]
            walls = [float(str(r["wall_s"])) for r in rows]
            lines.append(
                f"| {drv} | {cmd_} | {min(walls):.2f} | {max(walls):.2f} | "
                f"{sum(int(str(r['failures'])) for r in rows)} | "
                f"{sum(int(str(r['retries'])) for r in rows)} | "
                f"{sum(int(str(r['wrong_state'])) for r in rows)} |"
            )
    (out / "power_switch.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
