"""The Grid Engine connector: ``qstat -xml``, ``qstat -f -xml``, ``qstat -xml -j``,
``qhost -xml``; start = ``qalter -q queue@host`` + ``qrls``; hold = ``qhold``.

* A node is an execution host; its cores are the slots of the managed queues' instances on
  it (``qstat -f -xml``), its memory ``qhost``'s ``mem_total``. A job unit is one slot (one
  core): a job of N slots has N units.
* Which held jobs are wattsched's: the ones whose job context has ``wattsched=gate``
  (``qsub -h -ac wattsched=gate``, or a JSV that adds it and holds the job). They are offered
  to the dispatcher; any other held job is ``held``.
* Start on exactly the chosen hosts: ``qalter -q all.q@h1,all.q@h2 JOB`` then
  ``qrls -h u JOB`` (only the user hold, the one ``qsub -h`` sets).
* Power: Grid Engine has no power saving command; this connector lacks
  :attr:`Capability.POWER`. A host whose queue instances are in state ``u`` (execd not
  reporting) reads as failed.
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
from wattsched.connectors.rms_options import RMSOptions, UnsupportedOperation
from wattsched.connectors.runner import CommandRunner
from wattsched.connectors.sge_xml import (
    SGEJob,
    parse_job_details,
    parse_qhost,
    parse_qstat,
    parse_queue_instances,
)
from wattsched.scheduler.model import (
    Job,
    Node,
    Placement,
    PowerState,
    Resources,
    RunningJob,
    Snapshot,
)

GATE_CONTEXT = ("wattsched", "gate")
UNAVAILABLE = frozenset("duEsSoDc")
"""Queue-instance state letters that keep new work off the host."""


class SGEConnector(Connector):
    """Grid Engine through its command-line tools."""

    name = "sge"

    def __init__(
        self, runner: CommandRunner, options: RMSOptions | None = None, *, queue: str = "all.q"
    ) -> None:
        self.runner = runner
        self.options = options or RMSOptions()
        self.queue = queue

    @property
    def capabilities(self) -> frozenset[Capability]:
        return frozenset({Capability.START, Capability.HOLD, Capability.RELEASE})

    def _queues(self) -> tuple[str, ...]:
        return self.options.partitions or (self.queue,)

    def read_jobs(self) -> list[SGEJob]:
        """Every user's jobs, with their hard requests (``qstat -xml -r -u *``)."""
        return parse_qstat(self.runner.run(["qstat", "-xml", "-r", "-u", "*"]).stdout)

    def gated(self, job_ids: Sequence[str]) -> set[str]:
        """The held jobs among ``job_ids`` that carry ``wattsched=gate`` in their context."""
        if not job_ids:
            return set()
        out = self.runner.run(["qstat", "-xml", "-j", ",".join(job_ids)]).stdout
        key, value = GATE_CONTEXT
        return {jid for jid, d in parse_job_details(out).items() if d.context.get(key) == value}

    def snapshot(self) -> Snapshot:
        opts = self.options
        now = int(opts.clock())
        queues = self._queues()
        hosts = {h.name: h for h in parse_qhost(self.runner.run(["qhost", "-xml"]).stdout)}
        instances = [
            qi
            for qi in parse_queue_instances(self.runner.run(["qstat", "-f", "-xml"]).stdout)
            if qi.queue in queues
        ]
        slots: dict[str, int] = {}
        bad: dict[str, set[str]] = {}
        for qi in instances:
            slots[qi.host] = slots.get(qi.host, 0) + qi.slots_total
            bad.setdefault(qi.host, set()).update(qi.state)
        nodes: list[Node] = []
        for host, n_slots in slots.items():
            h = hosts.get(host)
            failed = "u" in bad[host] or (h is not None and not h.reporting)
            nodes.append(
                Node(
                    name=host,
                    capacity=Resources(cores=n_slots, mem_mb=h.mem_mb if h else 0),
                    power=opts.node_power,
                    state=PowerState.FAILED if failed else PowerState.ON,
                    boot_s=opts.boot_s,
                    shutdown_s=opts.shutdown_s,
                    available=not (bad[host] & UNAVAILABLE),
                    partition=queues[0],
                )
            )
        jobs = self.read_jobs()
        gate = self.gated([j.job_id for j in jobs if j.pending and j.held])
        running: list[RunningJob] = []
        queued: list[Job] = []
        for sj in jobs:
            if sj.running and sj.host in slots and sj.queue in queues:
                job = self._job(sj, held=False)
                start = sj.start_time or now
                nodes_of = (sj.host,) * job.units
                running.append(RunningJob(job, start, nodes_of, start + job.walltime))
            elif sj.pending:
                job_queues = {q.split("@")[0] for q in sj.hard_queues}
                if job_queues and not job_queues & set(queues):
                    continue
                queued.append(self._job(sj, held=sj.held and sj.job_id not in gate))
        return Snapshot(time=now, nodes=tuple(nodes), running=tuple(running), queued=tuple(queued))

    def _job(self, sj: SGEJob, *, held: bool) -> Job:
        opts = self.options
        units = max(sj.slots, 1)
        unit = Resources(cores=1)
        return Job(
            id=sj.job_id,
            submit=sj.submit_time or sj.start_time or 0,
            walltime=sj.h_rt_s or opts.default_walltime_s,
            units=units,
            unit=unit,
            unit_power_w=opts.job_power.unit_watts(unit, units, ""),
            queue=sj.queue or self._queues()[0],
            user=sj.owner or None,
            held=held,
            partition=sj.queue or self._queues()[0],
            # A parallel job's slots are taken on one host (a $pe_slots environment): qstat
            # reports one host per job, and start() binds the job to the chosen host.
            placement=Placement.PACK,
        )

    def _pending(self, job_id: str) -> SGEJob:
        for sj in self.read_jobs():
            if sj.job_id == job_id:
                if not sj.pending:
                    raise UnknownJobError(f"SGE job {job_id} is {sj.state}, not pending")
                return sj
        raise UnknownJobError(f"SGE does not know job {job_id!r} (or it finished)")

    def start(self, job_id: str, nodes: Sequence[str]) -> StartResult:
        """Bind the job to ``queue@host`` of the chosen hosts, then release it."""
        hosts = list(dict.fromkeys(nodes))
        if not hosts:
            raise ValueError(f"start of job {job_id!r} names no node")
        for n in (job_id, *hosts):
            _check_id(n)
        if len(hosts) > 1:
            raise PlacementError(
                job_id, nodes, "a Grid Engine job's slots are taken on one host here"
            )
        self._pending(job_id)
        qlist = ",".join(f"{self._queues()[0]}@{h}" for h in hosts)
        try:
            self.runner.run(["qalter", "-q", qlist, job_id])
            self.runner.run(["qrls", "-h", "u", job_id])
        except RMSCommandError as exc:
            raise _map_error(exc, job_id) from exc
        return StartResult(job_id, tuple(nodes))

    def hold(self, job_id: str, *, operator: bool = False) -> None:
        """``qhold -h u JOB`` (an operator's keep-back: ``-h o``)."""
        self._job_cmd(["qhold", "-h", "o" if operator else "u", job_id], job_id)

    def release(self, job_id: str) -> None:
        """``qrls -h u JOB``."""
        self._job_cmd(["qrls", "-h", "u", job_id], job_id)

    def _job_cmd(self, cmd: list[str], job_id: str) -> None:
        _check_id(job_id)
        try:
            self.runner.run(cmd)
        except RMSCommandError as exc:
            raise _map_error(exc, job_id) from exc

    def power(self, node: str, on: bool) -> None:
        """Not supported by Grid Engine."""
        raise UnsupportedOperation(self.name, f"switch node {node!r} {'on' if on else 'off'}")

    def close(self) -> None:
        self.runner.close()


def _check_id(value: str) -> None:
    if not value or value.startswith("-") or any(c.isspace() or c in ",@" for c in value):
        raise ValueError(f"not a valid Grid Engine job id or host name: {value!r}")


def _map_error(exc: RMSCommandError, job_id: str) -> Exception:
    text = (exc.stderr or "").lower()
    if "does not exist" in text:
        return UnknownJobError(f"SGE does not know job {job_id!r}: {exc.stderr.strip()}")
    return exc
