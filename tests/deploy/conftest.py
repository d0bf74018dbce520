"""Fixtures of the deploy-kit tests: they start the daemon and its real neighbours with the
daemon tests' helpers (``tests/daemon/daemon_proc.py``, ``daemon_services.py``)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "daemon"))
