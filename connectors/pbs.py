"""The PBS Pro / OpenPBS connector: ``qstat -f -F json``, ``pbsnodes -a -F json``, ``qrun``.

* Start on exactly the chosen hosts: ``qrun -H host1+host2 JOB`` (one host per unit/chunk).
  wattsched is meant to be PBS's scheduler: run it with the PBS scheduler off
  (``qmgr -c "set server scheduling = false"``), so queued jobs wait for ``qrun``.
* Hold/release: ``qhold -h o`` / ``qrls -h o`` (an operator hold). A job wattsched holds
  this way stays offered to the dispatcher (``start`` releases it and runs it at once); a job
  held by its user (``u``) or the system (``s``) is ``held`` and never dispatched.
* Power: PBS has no command to switch a node (its power provisioning is hook-driven), so
  this connector lacks :attr:`Capability.POWER`; use a powerctl driver (IPMI) instead. A
  node in state ``sleep`` reads as off.

No PBS server installs on Debian 12: this connector is tested on recorded ``-F json``
outputs of OpenPBS 23.06 and PBS Pro 2022-2025, shaped as PBS Pro documents them.
"""

from __future__ import annotations

from collections.abc import Sequence

from wattsched.connectors.base import (
    Capability,
    Connector,
    PlacementError,
    RMSCommandError,
    StartResult,
    UnknownJobError,
)
from wattsched.connectors.pbs_json import PBSJob, PBSNode, parse_pbsnodes, parse_qstat
from wattsched.connectors.rms_options import RMSOptions, UnsupportedOperation
from wattsched.connectors.runner import CommandRunner
from wattsched.scheduler.model import (
    Job,
    Node,
    Placement,
    PowerState,
    Resources,
    RunningJob,
    Snapshot,
    placement_error,
)

UNAVAILABLE = frozenset(
    {"offline", "down", "state-unknown", "unresolvable", "stale", "resv-exclusive",
     "maintenance", "wait-provisioning"}
)  # fmt: skip
GATE_HOLD = "o"
"""The hold type wattsched uses (operator hold)."""


def power_state(node: PBSNode) -> PowerState:
    """``sleep`` -> off, ``provisioning`` -> booting, ``down`` -> failed, else on."""
    if "sleep" in node.states:
        return PowerState.OFF
    if "provisioning" in node.states:
        return PowerState.BOOTING
    if "down" in node.states or "state-unknown" in node.states:
        return PowerState.FAILED
    return PowerState.ON


class PBSConnector(Connector):
    """PBS Pro / OpenPBS through its command-line tools."""

    name = "pbs"

    def __init__(self, runner: CommandRunner, options: RMSOptions | None = None) -> None:
        self.runner = runner
        self.options = options or RMSOptions()

    @property
    def capabilities(self) -> frozenset[Capability]:
        return frozenset({Capability.START, Capability.HOLD, Capability.RELEASE})

    def read_jobs(self, job_id: str | None = None) -> list[PBSJob]:
        """``qstat -f -F json [JOB]``."""
        cmd = ["qstat", "-f", "-F", "json"] + ([job_id] if job_id else [])
        try:
            return parse_qstat(self.runner.run(cmd).stdout)
        except RMSCommandError as exc:
            raise _map_error(exc, job_id) from exc

    def read_nodes(self) -> list[PBSNode]:
        """``pbsnodes -a -F json``."""
        return parse_pbsnodes(self.runner.run(["pbsnodes", "-a", "-F", "json"]).stdout)

    def _managed_node(self, n: PBSNode) -> bool:
        parts = self.options.partitions
        if not parts or not n.queues:
            return True
        return any(q in parts for q in n.queues)

    def snapshot(self) -> Snapshot:
        opts = self.options
        now = int(opts.clock())
        nodes = tuple(
            Node(
                name=n.name,
                capacity=Resources(cores=n.ncpus, mem_mb=n.mem_mb, gpus=n.ngpus),
                power=opts.node_power,
                state=power_state(n),
                boot_s=opts.boot_s,
                shutdown_s=opts.shutdown_s,
                available=not (n.states & UNAVAILABLE),
                partition=n.partition,
            )
            for n in self.read_nodes()
            if self._managed_node(n)
        )
        names = {n.name for n in nodes}
        running: list[RunningJob] = []
        queued: list[Job] = []
        for pj in self.read_jobs():
            if pj.state in ("R", "E") and pj.exec_hosts:
                if not set(pj.exec_hosts) <= names:
                    continue
                job = self._job(pj, units=len(pj.exec_hosts))
                start = pj.start_time or now
                running.append(RunningJob(job, start, pj.exec_hosts, start + job.walltime))
            elif pj.state in ("Q", "H") and opts.manages(pj.queue):
                queued.append(self._job(pj))
        return Snapshot(time=now, nodes=nodes, running=tuple(running), queued=tuple(queued))

    def _job(self, pj: PBSJob, units: int | None = None) -> Job:
        opts = self.options
        n = units or sum(c.count for c in pj.chunks) or 1
        unit = Resources(
            cores=max(max((c.ncpus for c in pj.chunks), default=1), 1),
            mem_mb=max((c.mem_mb for c in pj.chunks), default=0),
            gpus=max((c.ngpus for c in pj.chunks), default=0),
        )
        held = pj.state == "H" and set(pj.hold_types) - {GATE_HOLD, "n"} != set()
        return Job(
            id=pj.job_id,
            submit=pj.submit_time,
            walltime=pj.walltime_s or opts.default_walltime_s,
            units=n,
            unit=unit,
            unit_power_w=opts.job_power.unit_watts(unit, n, pj.comment),
            queue=pj.queue or "default",
            user=pj.owner,
            held=held,
            partition=pj.queue or None,
            placement=pbs_placement(pj.place),
            exclusive=any(w in ("excl", "exclhost") for w in pj.place.split(":")),
        )

    def start(self, job_id: str, nodes: Sequence[str]) -> StartResult:
        """``qrun -H host1+host2 JOB`` (after ``qrls -h o`` if wattsched holds it); refused
        with :class:`PlacementError` when the hosts break the job's ``place``."""
        if not nodes:
            raise ValueError(f"start of job {job_id!r} names no node")
        for n in (job_id, *nodes):
            _check_id(n)
        jobs = [j for j in self.read_jobs(job_id) if j.job_id == job_id]
        if not jobs or jobs[0].state not in ("Q", "H"):
            state = jobs[0].state if jobs else "unknown"
            raise UnknownJobError(f"PBS job {job_id} is {state}, not queued: not started")
        why = placement_error(self._job(jobs[0]), nodes)
        if why:
            raise PlacementError(job_id, nodes, why)
        try:
            if jobs[0].state == "H":
                self.runner.run(["qrls", "-h", GATE_HOLD, job_id])
            self.runner.run(["qrun", "-H", "+".join(nodes), job_id])
        except RMSCommandError as exc:
            raise _map_error(exc, job_id) from exc
        return StartResult(job_id, tuple(nodes))

    def hold(self, job_id: str, *, operator: bool = False) -> None:
        """``qhold -h o JOB`` (an operator's keep-back: ``-h s``, a system hold)."""
        self._job_cmd(["qhold", "-h", "s" if operator else GATE_HOLD, job_id], job_id)

    def release(self, job_id: str) -> None:
        """``qrls -h o JOB``."""
        self._job_cmd(["qrls", "-h", GATE_HOLD, job_id], job_id)

    def _job_cmd(self, cmd: list[str], job_id: str) -> None:
        _check_id(job_id)
        try:
            self.runner.run(cmd)
        except RMSCommandError as exc:
            raise _map_error(exc, job_id) from exc

    def power(self, node: str, on: bool) -> None:
        """Not supported by PBS's command line (see the module docstring)."""
        raise UnsupportedOperation(self.name, f"switch node {node!r} {'on' if on else 'off'}")

    def close(self) -> None:
        self.runner.close()


def _check_id(value: str) -> None:
    if not value or value.startswith("-") or any(c.isspace() or c == "+" for c in value):
        raise ValueError(f"not a valid PBS job id or host name: {value!r}")


def _map_error(exc: RMSCommandError, job_id: str | None) -> Exception:
    text = exc.stderr.lower()
    if job_id is not None and ("unknown job id" in text or "job has finished" in text):
        return UnknownJobError(f"PBS does not know job {job_id!r}: {exc.stderr.strip()}")
    if job_id is not None and "request invalid for state of job" in text:
        return UnknownJobError(f"PBS job {job_id} is not queued: {exc.stderr.strip()}")
    return exc


def pbs_placement(place: str) -> Placement:
    """The rule of a ``Resource_List.place`` value (``scatter:excl`` -> scatter)."""
    words = place.lower().split(":")
    if "scatter" in words or "vscatter" in words:
        return Placement.SCATTER
    if "pack" in words:
        return Placement.PACK
    return Placement.FREE
