"""The Slurm connector: snapshots from ``squeue --json`` / ``sinfo --json``, decisions through
``scontrol``.

* Snapshot: ``sinfo --json`` (per-node records in 21.08/22.05; on newer Slurm, whose
  ``sinfo --json`` is grouped, ``scontrol show node --json``) and ``squeue --json``. In 22.05
  ``--json`` ignores ``-j/-t/-n`` filters, so everything is read and filtered here.
* Start on exactly the chosen nodes: ``scontrol update JobId=X NodeList=<nodes>
  NumNodes=k-k StartTime=now`` then ``scontrol release X`` (NodeList alone means "must
  include": Slurm may add nodes). The job must be pending; wattsched keeps jobs held (the
  ``deploy/slurm/job_submit.lua`` plugin) so that Slurm never starts them on its own.
* Which held jobs are wattsched's: ``job_submit.lua`` holds every new job of a managed
  partition and marks it ``AdminComment=wattsched:gate``. A marked held job is offered to the
  dispatcher (``Job.held`` False); a job its user holds (``sbatch -H``) is ``held``.
* A job requeued after a node failure comes back unheld: the snapshot holds it again.
* Power: ``scontrol update NodeName=n State=POWER_DOWN|POWER_UP`` (Slurm's power saving with
  Suspend/ResumeProgram does the switching).

Slurm node states map to power states as follows: ``POWERING_UP``/``POWER_UP`` -> booting
(also next to ``POWERED_DOWN``: a power-up was asked); ``POWERED_DOWN`` -> off;
``POWERING_DOWN``/``POWER_DOWN`` -> shutting down;
``DOWN``/``FAIL`` (not powered down) -> failed; anything else -> on. A node is unavailable
for new work when drained, down, failed, in maintenance, reserved or not responding.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Literal

from wattsched.connectors.base import (
    Capability,
    Connector,
    HeldJobError,
    PlacementError,
    RMSCommandError,
    StartResult,
    UnknownJobError,
    UnknownNodeError,
)
from wattsched.connectors.retry import read_command
from wattsched.connectors.rms_options import PowerBusyError, RMSOptions, per_unit
from wattsched.connectors.runner import CommandRunner
from wattsched.connectors.slurm_jobs import (
    SlurmJob,
    parse_jobs,
    parse_key_values,
    parse_scontrol_jobs,
)
from wattsched.connectors.slurm_json import (
    SlurmNode,
    available,
    fold_hostlist,
    load_json,
    parse_node_record,
    parse_nodes,
    power_state,
)
from wattsched.scheduler.model import (
    END_STATES,
    EndedJob,
    Job,
    Node,
    Placement,
    Resources,
    RunningJob,
    Snapshot,
)

log = logging.getLogger(__name__)

RUNNING_STATES = frozenset({"RUNNING", "COMPLETING", "CONFIGURING", "STAGE_OUT"})
NOT_STARTABLE_REASONS = frozenset(
    {"Dependency", "DependencyNeverSatisfied", "BeginTime", "JobArrayTaskLimit",
     "PartitionDown", "PartitionInactive", "InvalidAccount", "InvalidQOS"}
)  # fmt: skip
"""Pending jobs Slurm could not run whatever the nodes: not offered to the dispatcher."""
GATE_MARKER = "wattsched:gate"
"""The AdminComment ``deploy/slurm/job_submit.lua`` puts on the jobs it holds for wattsched."""


class SlurmConnector(Connector):
    """Slurm through its command-line tools, run by ``runner`` (locally or over SSH)."""

    name = "slurm"

    def __init__(
        self,
        runner: CommandRunner,
        options: RMSOptions | None = None,
        *,
        gate_marker: str = GATE_MARKER,
        track_memory: bool | None = None,
        job_source: Literal["squeue-json", "scontrol"] = "squeue-json",
    ) -> None:
        self.runner = runner
        self.options = options or RMSOptions()
        self.gate_marker = gate_marker
        self._track_memory = track_memory
        if job_source not in ("squeue-json", "scontrol"):
            raise ValueError(f"job_source={job_source!r}: squeue-json or scontrol")
        self.job_source = job_source
        self._node_cmd: list[str] | None = None

    @property
    def capabilities(self) -> frozenset[Capability]:
        return frozenset(Capability)

    # -- reading -----------------------------------------------------------------------------

    def read_nodes(self) -> list[SlurmNode]:
        """Every node, one record each (version-independent)."""
        if self._node_cmd is None:
            text = read_command(self.runner, ["sinfo", "--json"]).stdout
            doc = load_json(text, "sinfo --json")
            if isinstance(doc.get("nodes"), list):
                self._node_cmd = ["sinfo", "--json"]
                return [parse_node_record(n) for n in doc["nodes"]]
            # Newer Slurm groups sinfo records: ask scontrol for per-node detail.
            self._node_cmd = ["scontrol", "show", "node", "--json"]
        return parse_nodes(read_command(self.runner, self._node_cmd).stdout)

    def memory_is_consumable(self) -> bool:
        """Whether Slurm allocates memory (``SelectTypeParameters`` with ``MEMORY``).

        When it does not (``CR_Core``, ``CR_CPU``), a job's memory request binds nothing and
        is left out of its units (else every job would seem to fill a node's memory). Asked
        once (``scontrol show config``) unless given to the constructor.
        """
        if self._track_memory is None:
            out = read_command(self.runner, ["scontrol", "show", "config"]).stdout
            m = re.search(r"^SelectTypeParameters\s*=\s*(\S+)", out, re.MULTILINE)
            self._track_memory = bool(m and "MEMORY" in m.group(1).upper())
        return self._track_memory

    def read_jobs(self) -> list[SlurmJob]:
        """Every job Slurm still shows (filtering is ours: 22.05 ignores squeue filters).

        ``job_source="squeue-json"`` (default) reads ``squeue --json``; ``"scontrol"`` reads
        ``scontrol show job -o`` with epoch times, the same fields about eight times faster
        on a 1,000-job queue (``bench/results/slurm_snapshot.md``).
        """
        if self.job_source == "scontrol":
            cmd = ["env", "SLURM_TIME_FORMAT=%s", "scontrol", "show", "job", "-o"]
            return parse_scontrol_jobs(read_command(self.runner, cmd).stdout)
        return parse_jobs(read_command(self.runner, ["squeue", "--json"]).stdout)

    def show_job(self, job_id: str) -> dict[str, str]:
        """``scontrol show job -o ID`` as a dict (fields squeue's JSON lacks, e.g. NumTasks)."""
        _check_id(job_id)
        try:
            out = read_command(self.runner, ["scontrol", "show", "job", "-o", job_id]).stdout
        except RMSCommandError as exc:
            raise _map_error(exc, job=job_id) from exc
        recs = parse_key_values(out, "JobId")
        if not recs:
            raise UnknownJobError(f"Slurm does not know job {job_id!r}", job_id=job_id)
        return recs[0]

    def snapshot(self) -> Snapshot:
        opts = self.options
        now = int(opts.clock())
        # The two reads are independent: overlap them (squeue dominates on big queues).
        with ThreadPoolExecutor(max_workers=2) as pool:
            jobs_f = pool.submit(self.read_jobs)
            slurm_nodes = self.read_nodes()
            slurm_jobs = jobs_f.result()
        nodes = [self._node(n) for n in slurm_nodes if self._managed_node(n)]
        names = {n.name for n in nodes}
        running: list[RunningJob] = []
        queued: list[Job] = []
        ended: list[EndedJob] = []
        for sj in slurm_jobs:
            if sj.state in RUNNING_STATES and sj.nodes:
                if not set(sj.nodes) <= names:
                    continue
                job = self._job(sj, units=len(sj.nodes))
                start = sj.start_time or now
                end = sj.end_time if sj.end_time and sj.end_time >= start else start + job.walltime
                running.append(RunningJob(job, start, sj.nodes, end))
            elif sj.state == "PENDING":
                part = opts.first_managed(sj.partition)
                if part is None:
                    continue
                # A requeued job comes back unheld: the snapshot only reports it (restarts);
                # holding it again is a journaled action of the daemon's cycle.
                if sj.reason in NOT_STARTABLE_REASONS and not (sj.restart_count and not sj.held):
                    continue
                queued.append(self._job(sj, units=sj.node_count, partition=part))
            elif sj.state.lower() in END_STATES:
                ended.append(EndedJob(sj.job_id, sj.state.lower(), sj.end_time))
        return Snapshot(
            time=now,
            nodes=tuple(nodes),
            running=tuple(running),
            queued=tuple(queued),
            ended=tuple(ended),
        )

    def is_gated(self, sj: SlurmJob) -> bool:
        """True for a held job that waits for wattsched (marked by ``job_submit.lua``) and that
        no operator holds (``scontrol hold``: ``JobHeldAdmin``; the operator's hold wins)."""
        return (
            sj.held
            and bool(self.gate_marker)
            and self.gate_marker in sj.admin_comment
            and sj.reason != "JobHeldAdmin"
        )

    @staticmethod
    def held_by(sj: SlurmJob) -> str | None:
        """``operator`` for ``JobHeldAdmin``, ``user`` for another hold, None if not held."""
        if not sj.held:
            return None
        return "operator" if sj.reason == "JobHeldAdmin" else "user"

    def _managed_node(self, n: SlurmNode) -> bool:
        return not self.options.partitions or any(self.options.manages(p) for p in n.partitions)

    def _node(self, n: SlurmNode) -> Node:
        opts = self.options
        part = next((p for p in n.partitions if opts.manages(p)), None)
        return Node(
            name=n.name,
            capacity=Resources(cores=n.cpus, mem_mb=n.memory_mb, gpus=n.gpus),
            power=opts.node_power,
            state=power_state(n),
            boot_s=opts.boot_s,
            shutdown_s=opts.shutdown_s,
            available=available(n),
            partition=part,
        )

    def _job(self, sj: SlurmJob, *, units: int, partition: str | None = None) -> Job:
        opts = self.options
        units = max(units, 1)
        mem = (sj.memory_mb_per_node or 0) if self.memory_is_consumable() else 0
        unit = Resources(
            cores=max(per_unit(sj.cpus, units), 1),
            mem_mb=mem,
            gpus=per_unit(sj.gpus, units),
        )
        walltime = sj.time_limit_min * 60 if sj.time_limit_min else opts.default_walltime_s
        return Job(
            id=sj.job_id,
            submit=max(sj.submit_time, 0),
            walltime=walltime,
            units=units,
            unit=unit,
            unit_power_w=opts.job_power.unit_watts(unit, units, sj.comment),
            queue=partition or sj.partition or "default",
            user=sj.user,
            held=sj.held and not self.is_gated(sj),
            partition=partition or sj.partition or None,
            held_by="wattsched" if self.is_gated(sj) else self.held_by(sj),
            restarts=sj.restart_count,
            # Slurm gives each of a job's node_count units a node of its own (-N k).
            placement=Placement.SCATTER,
            exclusive=sj.exclusive,
        )

    # -- acting ------------------------------------------------------------------------------

    def start(self, job_id: str, nodes: Sequence[str]) -> StartResult:
        """Pin the pending job to exactly ``nodes`` (one per unit, each node once: Slurm runs a
        job's units on distinct nodes) and release it.

        Raises :class:`PlacementError`, sending nothing, when a node is named twice or the
        count is not the job's node count (``NumNodes``): the job is never changed to fit.
        """
        distinct = list(dict.fromkeys(nodes))
        if not distinct:
            raise ValueError(f"start of job {job_id!r} names no node")
        if len(distinct) != len(nodes):
            raise PlacementError(
                job_id, nodes, "Slurm runs each unit of a job on a node of its own: "
                "a node is named twice"
            )  # fmt: skip
        for n in distinct:
            _check_id(n)
        info = self.show_job(job_id)
        if info.get("JobState") != "PENDING":
            raise UnknownJobError(
                f"job {job_id} is {info.get('JobState', 'unknown')}, not pending: not started",
                job_id=job_id,
            )
        reason = info.get("Reason", "")
        if reason == "JobHeldAdmin":
            raise HeldJobError(job_id, "an operator")
        gated = bool(self.gate_marker) and self.gate_marker in info.get("AdminComment", "")
        if reason.startswith("JobHeld") and not gated:
            raise HeldJobError(job_id, "its user")
        k = len(distinct)
        lo, _, hi = info.get("NumNodes", "").partition("-")
        if lo.isdigit() and not int(lo) <= k <= int(hi if hi.isdigit() else lo):
            raise PlacementError(
                job_id, nodes, f"the job asks for NumNodes={info['NumNodes']}, not {k} nodes"
            )
        hostlist = fold_hostlist(distinct)
        # StartTime=now clears a begin time (a requeued job gets one ~2 min ahead); it does
        # not release a held job: the release below does.
        cmd = [
            "scontrol", "update", f"JobId={job_id}", f"NodeList={hostlist}",
            f"NumNodes={k}-{k}", "StartTime=now",
        ]  # fmt: skip
        try:
            self.runner.run(cmd)
            self.runner.run(["scontrol", "release", job_id])
        except RMSCommandError as exc:
            raise _map_error(exc, job=job_id) from exc
        return StartResult(job_id, tuple(nodes))

    def hold(self, job_id: str, *, operator: bool = False) -> None:
        """``scontrol uhold``: Slurm will not start the job by itself. A user hold, so that a
        gated job stays wattsched's; ``operator``: ``scontrol hold`` (JobHeldAdmin), which
        keeps it back until an operator gives it back with ``scontrol uhold``."""
        self._job_cmd("hold" if operator else "uhold", job_id)

    def release(self, job_id: str) -> None:
        """``scontrol release``."""
        self._job_cmd("release", job_id)

    def _job_cmd(self, verb: str, job_id: str) -> None:
        _check_id(job_id)
        try:
            self.runner.run(["scontrol", verb, job_id])
        except RMSCommandError as exc:
            raise _map_error(exc, job=job_id) from exc

    def show_node(self, node: str) -> dict[str, str]:
        """``scontrol show node -o NODE`` as a dict."""
        _check_id(node)
        try:
            out = read_command(self.runner, ["scontrol", "show", "node", "-o", node]).stdout
        except RMSCommandError as exc:
            raise _map_error(exc, node=node) from exc
        recs = parse_key_values(out, "NodeName")
        if not recs:
            raise UnknownNodeError(f"Slurm does not know node {node!r}", node=node)
        return recs[0]

    def power(self, node: str, on: bool) -> None:
        """``scontrol update NodeName=node State=POWER_UP|POWER_DOWN``.

        Slurm 22.05 accepts, and silently drops, a POWER_UP while the node is still powering
        down (and the reverse): that case is refused here with :class:`PowerBusyError`, to be
        asked again once the node has settled.
        """
        current = self.show_node(node).get("State", "")
        flags = set(current.split("+"))
        opposite = {"POWERING_DOWN", "POWER_DOWN"} if on else {"POWERING_UP", "POWER_UP"}
        if flags & opposite:
            raise PowerBusyError(node, current)
        state = "POWER_UP" if on else "POWER_DOWN"
        try:
            self.runner.run(["scontrol", "update", f"NodeName={node}", f"State={state}"])
        except RMSCommandError as exc:
            raise _map_error(exc, node=node) from exc

    def close(self) -> None:
        self.runner.close()


def _check_id(value: str) -> None:
    """Job ids and node names go into ``Key=value`` words: refuse anything that could split."""
    if not value or any(c.isspace() for c in value) or "=" in value or value.startswith("-"):
        raise ValueError(f"not a valid Slurm job id or node name: {value!r}")


def _map_error(
    exc: RMSCommandError, *, job: str | None = None, node: str | None = None
) -> Exception:
    text = exc.stderr.lower()
    if job is not None and ("invalid job id" in text or "job not found" in text):
        return UnknownJobError(f"Slurm does not know job {job!r}: {exc.stderr.strip()}", job_id=job)
    if node is not None and ("invalid node name" in text or "not found" in text):
        return UnknownNodeError(
            f"Slurm does not know node {node!r}: {exc.stderr.strip()}", node=node
        )
    if job is not None and ("already completing" in text or "no longer pending" in text):
        return UnknownJobError(f"job {job} is not pending: {exc.stderr.strip()}", job_id=job)
    return exc
