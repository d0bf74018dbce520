"""A small PBS Pro server emulated in-process, answering in PBS's own JSON formats.

No PBS server installs here (``shared/RECIPES.md``), so the connector contract suite runs the
PBS connector against this stand-in: it is a :class:`CommandRunner` that keeps jobs and nodes
and prints ``qstat -f -F json`` / ``pbsnodes -a -F json`` built from the *recorded* outputs
under ``fixtures/pbs/`` (each job and node object is a recorded one, copied, with only the
fields that change set: ``job_state``, ``Hold_Types``, ``exec_host``, ``exec_vnode``,
``Resource_List``, ``state``, ``resources_assigned``). ``qrun``, ``qhold`` and ``qrls`` change
that state and fail with PBS's documented exit codes and messages (153 unknown job, 168
invalid state). The server's scheduling is off, as the connector expects: queued jobs wait
for ``qrun``. What this cannot show is how a real server differs from its documentation.
"""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wattsched.connectors.base import RMSCommandError
from wattsched.connectors.runner import CommandResult

FIXTURES = Path(__file__).parent / "fixtures" / "pbs"
_QSTAT = json.loads(
    (FIXTURES / "qstat-f-F-json-x_openpbs-23.06.06_firecrest_allusers.json").read_text()
)
_NODES = json.loads((FIXTURES / "pbsnodes-a-F-json_openpbs-23.06.06_firecrest.json").read_text())
JOB_TEMPLATE: dict[str, Any] = _QSTAT["Jobs"]["1006.pbs"]
NODE_TEMPLATE: dict[str, Any] = _NODES["nodes"]["pbs"]
UNKNOWN_JOB = 153
INVALID_STATE = 168


@dataclass
class EmulatedPBS:
    """Jobs and nodes of a PBS server; :meth:`run` is the runner the connector calls."""

    nodes: Sequence[str] = ("n1", "n2", "n3", "n4")
    ncpus: int = 4
    server: str = "pbs"
    jobs: dict[str, dict[str, Any]] = field(default_factory=dict)
    calls: list[tuple[str, ...]] = field(default_factory=list)
    _next: int = 100

    # -- what a user does (qsub) ----------------------------------------------------------

    def submit(self, units: int, seconds: int, *, hold: str = "o", place: str = "scatter") -> str:
        """``qsub -h`` of ``units`` chunks of one cpu; the hold type ``o`` is the gate's."""
        self._next += 1
        jid = f"{self._next}.{self.server}"
        job = copy.deepcopy(JOB_TEMPLATE)
        for key in ("exec_host", "exec_vnode", "stime", "session_id", "resources_used"):
            job.pop(key, None)
        now = time.strftime("%a %b %d %H:%M:%S %Y")
        job.update(
            job_state="H" if hold != "n" else "Q",
            Hold_Types=hold,
            ctime=now,
            qtime=now,
            comment="Not Running: Job held",
            run_count=0,
            substate=20,
        )
        hh, rem = divmod(seconds, 3600)
        job["Resource_List"] = {
            "ncpus": units,
            "nodect": units,
            "place": place,
            "select": f"{units}:ncpus=1",
            "walltime": f"{hh:02d}:{rem // 60:02d}:{rem % 60:02d}",
        }
        self.jobs[jid] = job
        return jid

    def exec_hosts(self, jid: str) -> tuple[str, ...] | None:
        """The hosts a running job was given (None: not running)."""
        job = self.jobs.get(jid)
        if job is None or job["job_state"] != "R":
            return None
        return tuple(h.split("/")[0] for h in job["exec_host"].split("+"))

    # -- the commands -------------------------------------------------------------------

    def run(
        self, argv: Sequence[str], *, timeout: float | None = None, check: bool = True
    ) -> CommandResult:
        args = tuple(argv)
        self.calls.append(args)
        try:
            out = self._dispatch(args)
        except RMSCommandError as exc:
            if check:
                raise
            return CommandResult(args, exc.returncode, "", exc.stderr, 0.0)
        return CommandResult(args, 0, out, "", 0.0)

    def close(self) -> None:
        """Nothing to release."""

    def _dispatch(self, args: tuple[str, ...]) -> str:
        match args:
            case ("pbsnodes", "-a", "-F", "json"):
                return self._pbsnodes()
            case ("qstat", "-f", "-F", "json"):
                return self._qstat(list(self.jobs))
            case ("qstat", "-f", "-F", "json", jid):
                self._job(args, jid)
                return self._qstat([jid])
            case ("qhold", "-h", kind, jid):
                job = self._job(args, jid)
                if job["job_state"] not in ("Q", "H"):
                    self._fail(
                        args, INVALID_STATE, f"qhold: Request invalid for state of job {jid}"
                    )
                types = set(job["Hold_Types"]) - {"n"} | {kind}
                job.update(Hold_Types="".join(sorted(types)), job_state="H")
                return ""
            case ("qrls", "-h", kind, jid):
                job = self._job(args, jid)
                types = set(job["Hold_Types"]) - {kind, "n"}
                job["Hold_Types"] = "".join(sorted(types)) or "n"
                if job["job_state"] == "H" and not types:
                    job["job_state"] = "Q"
                return ""
            case ("qrun", "-H", hosts, jid):
                return self._qrun(args, hosts.split("+"), jid)
        self._fail(args, 2, f"{args[0]}: usage not emulated: {' '.join(args[1:])}")

    def _qrun(self, args: tuple[str, ...], hosts: list[str], jid: str) -> str:
        job = self._job(args, jid)
        if job["job_state"] != "Q":
            self._fail(args, INVALID_STATE, f"qrun: Request invalid for state of job {jid}")
        unknown = [h for h in hosts if h not in self.nodes]
        if unknown:
            self._fail(args, 1, f"qrun: Unknown node  {unknown[0]}")
        free = {n: self.ncpus - self._used(n) for n in self.nodes}
        for h in hosts:
            free[h] -= 1
            if free[h] < 0:
                self._fail(args, 1, f"qrun: Insufficient amount of resource: ncpus on {h}")
        job.update(
            job_state="R",
            substate=42,
            exec_host="+".join(f"{h}/0" for h in hosts),
            exec_vnode="+".join(f"({h}:ncpus=1)" for h in hosts),
            stime=time.strftime("%a %b %d %H:%M:%S %Y"),
            comment=f"Job run at {time.strftime('%a %b %d at %H:%M')}",
            run_count=1,
        )
        return ""

    # -- the formats ----------------------------------------------------------------------

    def _header(self) -> dict[str, Any]:
        return {"timestamp": int(time.time()), "pbs_version": "23.06.06", "pbs_server": self.server}

    def _qstat(self, ids: list[str]) -> str:
        return json.dumps({**self._header(), "Jobs": {j: self.jobs[j] for j in ids}})

    def _used(self, node: str) -> int:
        return sum((self.exec_hosts(j) or ()).count(node) for j in self.jobs)

    def _pbsnodes(self) -> str:
        nodes = {}
        for name in self.nodes:
            node = copy.deepcopy(NODE_TEMPLATE)
            used = self._used(name)
            node.update(Mom=name, state="job-busy" if used >= self.ncpus else "free")
            node["resources_available"].update(host=name, vnode=name, ncpus=self.ncpus)
            node["resources_assigned"] = {"ncpus": used} if used else {}
            nodes[name] = node
        return json.dumps({**self._header(), "nodes": nodes})

    def _job(self, args: tuple[str, ...], jid: str) -> dict[str, Any]:
        job = self.jobs.get(jid)
        if job is None:
            self._fail(args, UNKNOWN_JOB, f"{args[0]}: Unknown Job Id {jid}")
        return job

    @staticmethod
    def _fail(args: tuple[str, ...], rc: int, msg: str) -> Any:
        raise RMSCommandError(args, rc, msg + "\n")
