"""start_planned's shortcuts (issue 11) change no outcome: a plan whose starts of now are all
of distinct pending jobs is carried out as it is, and the refusal counts are asked for the
jobs found; plans with a duplicate, a held job, a job that is not pending, a job refused too
often or one started already go through the filter, with the outcomes of the rules."""

from __future__ import annotations

from wattsched.connectors.base import ConnectorError
from wattsched.connectors.simulated import SimulatedCluster
from wattsched.daemon.acting import MemoryJournal, start_planned
from wattsched.daemon.job_records import StartRecord
from wattsched.scheduler.model import Assignment, Job, Node, Plan, Resources


def _cluster() -> SimulatedCluster:
    nodes = [Node(f"n{i}", Resources(cores=4)) for i in range(3)]
    jobs = [Job(str(k), 0, 100, 1, Resources(cores=1), runtime=50) for k in range(8)]
    cluster = SimulatedCluster(nodes, jobs)
    cluster.hold("6")
    return cluster


def test_distinct_pending_jobs_all_start_in_plan_order() -> None:
    cluster, journal = _cluster(), MemoryJournal()
    plan = Plan(0, (Assignment("2", 0, ("n1",)), Assignment("0", 0, ("n0",)),
                    Assignment("5", 9, ("n2",))))  # fmt: skip
    out = start_planned(cluster, journal, cluster.snapshot(), plan, {}, max_start_attempts=3)
    assert [a.job_id for a in out.started] == ["2", "0"]  # "5" starts later
    assert [row[:5] for row in journal.actions] == [
        ["start", "2", ("n1",), 0, "done"], ["start", "0", ("n0",), 0, "done"]
    ]  # fmt: skip


def test_the_rules_filter_a_mixed_plan() -> None:
    cluster, journal = _cluster(), MemoryJournal()
    journal.refusals["3"] = 3  # refused max_start_attempts times already
    starts = {"4": StartRecord(0, 0, ("n0",))}  # started already in this incarnation
    plan = Plan(0, tuple(Assignment(j, 0, ("n1",)) for j in ["1", "1", "3", "4", "6", "nope", "7"]))
    out = start_planned(cluster, journal, cluster.snapshot(), plan, starts, max_start_attempts=3)
    assert [a.job_id for a in out.started] == ["1", "7"]
    assert [a.job_id for a, _ in out.errors] == ["1"]  # the duplicate: no longer pending
    assert isinstance(out.errors[0][1], ConnectorError)
    assert out.gave_up == ["3"] and out.refused_twice == ["4"]
    assert [row[1] for row in journal.actions] == ["1", "1", "7"] and journal.pending() == 0
    assert journal.refusals == {"3": 3, "1": 1}
    assert set(starts) == {"1", "4", "7"}


def test_a_start_record_is_the_constructors() -> None:
    from dataclasses import fields

    from wattsched.daemon.acting import start_record

    nodes = ("n1", "n1")
    fast, slow = start_record(2, 30, nodes), StartRecord(2, 30, nodes)
    assert fast == slow and hash(fast) == hash(slow)
    assert all(getattr(fast, f.name) is getattr(slow, f.name) for f in fields(StartRecord))
