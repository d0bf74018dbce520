"""A running job is checked at construction (one node per unit, an end estimate not before
its start), with a message naming the field and its value; the messages are made only when a
check fails (a replay builds one per start)."""

from __future__ import annotations

import pytest

from wattsched.scheduler.model import Job, ModelError, Resources, RunningJob

JOB = Job("7", 0, 100, 2, Resources(cores=1))


@pytest.mark.parametrize(
    ("nodes", "start", "end", "message"),
    [
        (("a",), 0, 100, "RunningJob 7: nodes=('a',) must name one node per unit (2)"),
        (("a", "b", "c"), 0, 100, "RunningJob 7: nodes=('a', 'b', 'c') must name one node"),
        (("a", "b"), 50, 49, "RunningJob 7: end_estimate=49 >= start"),  # ends before it starts
    ],
)
def test_a_bad_running_job_is_refused_with_its_field(
    nodes: tuple[str, ...], start: int, end: int, message: str
) -> None:
    with pytest.raises(ModelError) as err:
        RunningJob(JOB, start, nodes, end)
    assert str(err.value).startswith(message)


def test_a_good_running_job_is_kept_as_given() -> None:
    rj = RunningJob(JOB, 5, ("a", "a"), 5)  # two units on one node, ending at once
    assert (rj.job, rj.start, rj.nodes, rj.end_estimate) == (JOB, 5, ("a", "a"), 5)
