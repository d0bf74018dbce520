"""Run every benchmark of bench/ in turn (``make bench``); each records under bench/results/."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCRIPTS = [
    "replay_traces.py",
    "hybrid_eurora.py",
    "daemon_cycle.py",
    "slurm_snapshot.py",
    "ui_load.py",
]


def main() -> int:
    failed = []
    for name in SCRIPTS:
        path = HERE / name
        if not path.exists():
            continue
        print(f"== {name}", flush=True)
        if subprocess.run([sys.executable, str(path)], check=False).returncode != 0:
            failed.append(name)
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
