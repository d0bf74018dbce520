"""The simulated cluster's power record (issue 11): a later sample of the same instant updates
the last one in place instead of replacing it by a new object; the record and the peak must
be those of the formula of before (a new sample each time, the peak by ``max``)."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from wattsched.connectors.simulated import SimulatedCluster
from wattsched.connectors.simulated_books import PowerSample
from wattsched.daemon.replay import replay
from wattsched.scheduler import dispatcher as registry
from wattsched.scheduler.model import Job, Node, NodePowerModel, PowerCap, Resources


class _Before(SimulatedCluster):
    """The cluster with the sampling of before."""

    def _sample(self) -> None:
        p = self.power_now_w
        self.peak_power_w = max(self.peak_power_w, p)  # type: ignore[has-type]
        if not self.record_power:
            return
        cap_w = self.cap.at(self.now)
        s = PowerSample(self.now, p, cap_w, self._nodes_on, len(self._queue), len(self._running))
        if self.samples and self.samples[-1].time == s.time:
            self.samples[-1] = s
        else:
            self.samples.append(s)


def _workload(seed: int, n_jobs: int) -> tuple[list[Node], list[Job]]:
    rng = random.Random(seed)
    nodes = [
        Node(f"n{i}", Resources(cores=4), NodePowerModel(idle_w=20, first_core_w=5, core_w=3))
        for i in range(4)
    ]
    jobs, t = [], 0
    for j in range(n_jobs):
        t += rng.choice([0, 0, 5, 60])  # several arrivals, and starts, at one instant
        wall = rng.randint(10, 600)
        jobs.append(
            Job(
                str(j), t, wall, rng.choice([1, 2]), Resources(cores=rng.choice([1, 2, 4])),
                runtime=rng.randint(1, wall),
            )
        )  # fmt: skip
    return nodes, jobs


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000), st.integers(1, 60), st.sampled_from([None, 150.0]))
def test_samples_are_those_of_before(seed: int, n_jobs: int, cap_w: float | None) -> None:
    """Every sample (time, power, cap, nodes on, queued, running) and the peak, as before."""
    nodes, jobs = _workload(seed, n_jobs)
    cap = PowerCap.unlimited() if cap_w is None else PowerCap(((0, cap_w), (300, cap_w * 2)))
    now = SimulatedCluster(nodes, jobs, cap)
    before = _Before(nodes, jobs, cap)
    replay(now, registry.create("easy"))
    replay(before, registry.create("easy"))
    assert [s.time for s in now.samples] == [s.time for s in before.samples]
    assert now.samples == before.samples  # every field (dataclass equality)
    assert now.peak_power_w == before.peak_power_w
    assert len({id(s) for s in now.samples}) == len(now.samples)
