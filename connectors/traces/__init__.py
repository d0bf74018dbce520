"""Readers of workloads, systems and power caps: SWF, the Eurora formats, TOML systems.

Every reader returns model objects (:mod:`wattsched.scheduler.model`), skips and counts the
records it cannot use (:class:`TraceReport`) and raises :class:`TraceError` (file, line, field,
value) on a malformed one. Details: ``docs/traces.md``.
"""

from wattsched.connectors.traces.caps import parse_power_cap, read_power_cap
from wattsched.connectors.traces.errors import TraceError, TraceReport, Workload
from wattsched.connectors.traces.eurora import (
    read_eurora_jobs,
    read_eurora_nodes,
    read_power_predictions,
    read_queues,
)
from wattsched.connectors.traces.swf import SWFRecord, read_swf
from wattsched.connectors.traces.system import homogeneous_nodes, read_system_toml

__all__ = [
    "SWFRecord",
    "TraceError",
    "TraceReport",
    "Workload",
    "homogeneous_nodes",
    "parse_power_cap",
    "read_eurora_jobs",
    "read_eurora_nodes",
    "read_power_cap",
    "read_power_predictions",
    "read_queues",
    "read_swf",
    "read_system_toml",
]
