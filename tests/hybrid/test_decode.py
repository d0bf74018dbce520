"""The compiled decode (:class:`wattsched.scheduler.hybrid.decode.ListDecoder`) gives the very
schedule of :func:`wattsched.scheduler.hybrid.mapping.map_schedule` with ``release=None``
(the real list scheduler): same assignments (jobs, starts, nodes, in the same order), same
objective, on random instances (node power models, unusable nodes, placement rules, exclusive
jobs, running jobs, overrunning ones, cap steps); and the local search makes many decodes."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wattsched.scheduler.dispatcher import prb_order
from wattsched.scheduler.hybrid import decode_kernel
from wattsched.scheduler.hybrid.decode import ListDecoder, warm
from wattsched.scheduler.hybrid.localsearch import priority_search
from wattsched.scheduler.hybrid.mapping import map_schedule
from wattsched.scheduler.hybrid.search import SearchParams, hybrid_search
from wattsched.scheduler.hybrid.synthetic import eurora_like_jobs, eurora_like_nodes
from wattsched.scheduler.mapper import StateCache
from wattsched.scheduler.model import (
    Job,
    Node,
    NodePowerModel,
    Placement,
    PowerCap,
    PowerState,
    Resources,
    RunningJob,
    Snapshot,
)

warm()

MODELS = (
    NodePowerModel(idle_w=60.0, first_core_w=15.0, core_w=6.0, gpu_w=40.0, mic_w=45.0),
    NodePowerModel(idle_w=40.0, first_core_w=0.0, core_w=4.0, gpu_w=30.0, mic_w=20.0),
    NodePowerModel(idle_w=50.0, first_core_w=5.0, core_w=7.0, gpu_w=35.0, mic_w=45.0),
)


@st.composite
def instances(draw: st.DrawFn) -> tuple[Snapshot, list[list[Job]]]:
    """A snapshot and a few priority lists of its waiting jobs."""
    n_nodes = draw(st.integers(2, 8))
    mixed = draw(st.booleans())  # per-node power models (no flat unit power)
    nodes = []
    for k, node in enumerate(eurora_like_nodes(n_nodes)):
        nodes.append(
            Node(
                name=node.name,
                capacity=node.capacity,
                power=MODELS[k % 3] if mixed else node.power,
                efficiency=draw(st.sampled_from([1.0, 1.0, 0.8])),
                available=draw(st.integers(0, 9)) > 0,
                state=PowerState.ON if draw(st.integers(0, 9)) > 0 else PowerState.OFF,
            )
        )
    now = draw(st.integers(0, 100))
    jobs = []
    for i in range(draw(st.integers(1, 25))):
        jobs.append(
            Job(
                id=f"j{i}",
                submit=draw(st.integers(0, now)),
                walltime=draw(st.integers(1, 3000)),
                units=draw(st.integers(1, 4)),
                unit=Resources(
                    cores=draw(st.sampled_from([1, 2, 4, 8, 16])),
                    mem_mb=1024 * draw(st.integers(1, 8)),
                    gpus=draw(st.sampled_from([0, 0, 0, 1, 2])),
                    mics=draw(st.sampled_from([0, 0, 0, 1])),
                ),
                unit_power_w=draw(st.sampled_from([None, None, 12.5, 33.3, 71.7])),
                ewt=draw(st.sampled_from([3600, 21600, 86400])),
                placement=draw(st.sampled_from([Placement.FREE] * 4 + list(Placement))),
                exclusive=draw(st.integers(0, 9)) == 0,
            )
        )
    running = []
    for k in range(draw(st.integers(0, 3))):
        node = nodes[k % n_nodes]
        if not node.available or node.state is not PowerState.ON:
            continue
        r = Job(id=f"r{k}", submit=0, walltime=500, units=1, unit=Resources(cores=4, mem_mb=1024),
                unit_power_w=draw(st.sampled_from([None, 20.7])), exclusive=k == 2)  # fmt: skip
        end = draw(st.integers(now - 20, now + 600))  # below now: overrunning
        running.append(RunningJob(r, 0, (node.name,), max(end, 1)))
    steps = draw(
        st.sampled_from(
            [
                ((0, float("inf")),),
                ((0, 900.0),),
                ((0, 600.0),),
                ((0, 700.0), (now + 500, 400.0), (now + 2000, 1000.0)),
            ]
        )
    )
    snap = Snapshot(now, tuple(nodes), tuple(running), tuple(jobs), PowerCap(steps))
    rng = np.random.default_rng(draw(st.integers(0, 1000)))
    lists = [prb_order(snap.queued)]
    lists += [[jobs[i] for i in rng.permutation(len(jobs))] for _ in range(3)]
    return snap, lists


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances())
def test_the_compiled_decode_is_the_mapper(case: tuple[Snapshot, list[list[Job]]]) -> None:
    snap, lists = case
    cache = StateCache()
    decoder = ListDecoder(snap, cache)
    assert decoder.compiled  # whole-watt node models and first cores: the compiled path
    for jobs in lists:
        expected = map_schedule(snap, StateCache(), jobs, release=None, source="s")
        assert decoder.schedule(jobs, "s") == expected
        assert decoder.objective(jobs) == expected.objective


def test_the_compiled_decode_on_eurora_like_instances() -> None:
    """Seeded: 60-job instances at three caps, 20 noisy orders each."""
    nodes = tuple(eurora_like_nodes(8))
    for seed in range(3):
        jobs = tuple(eurora_like_jobs(60, seed))
        for cap in (900.0, 1500.0, float("inf")):
            snap = Snapshot(0, nodes, (), jobs, PowerCap.constant(cap))
            decoder = ListDecoder(snap, StateCache())
            rng = np.random.default_rng(seed)
            for _ in range(20):
                order = [jobs[i] for i in rng.permutation(len(jobs))]
                expected = map_schedule(snap, StateCache(), order, release=None, source="r")
                assert decoder.schedule(order, "r") == expected


def test_a_fractional_first_core_takes_the_mapper() -> None:
    """Power sums that could round differently: every call goes to ``map_schedule``."""
    model = NodePowerModel(idle_w=10.0, first_core_w=2.3, core_w=1.1)
    nodes = tuple(Node(f"n{k}", Resources(cores=16, mem_mb=32768), model) for k in range(3))
    jobs = tuple(eurora_like_jobs(10, 1))
    jobs = tuple(Job(j.id, 0, j.walltime, j.units, Resources(cores=j.unit.cores, mem_mb=1024))
                 for j in jobs)  # fmt: skip
    snap = Snapshot(0, nodes, (), jobs, PowerCap.constant(200.0))
    decoder = ListDecoder(snap, StateCache())
    assert not decoder.compiled
    expected = map_schedule(snap, StateCache(), list(jobs), release=None, source="f")
    assert decoder.schedule(list(jobs), "f") == expected
    assert decoder.objective(list(jobs)) == expected.objective


def test_the_search_reports_its_decodes() -> None:
    """The local search's tries are counted in the stats (and are many: objective-only
    decodes); its result never loses to PRB."""
    nodes = tuple(eurora_like_nodes(8))
    snap = Snapshot(0, nodes, (), tuple(eurora_like_jobs(60, 4)), PowerCap.constant(1200.0))
    params = SearchParams(budget_s=1.0, workers=2, cp=False, lower_bound="none")
    out = hybrid_search(snap, StateCache(), params)
    assert int(out.stats.extra["ls_tries"]) >= 10
    assert out.best.objective <= out.prb.objective
    assert out.stats.extra["mapped_schedules"] == len(out.history)


def test_warm_loads_every_signature_a_decode_uses() -> None:
    """After :func:`warm`, decoding a real instance compiles nothing more."""
    before = len(decode_kernel.list_decode.signatures)
    steps = ((0, 900.0), (100, 500.0))
    snap = Snapshot(0, tuple(eurora_like_nodes(8)), (), tuple(eurora_like_jobs(30, 1)),
                    PowerCap(steps))  # fmt: skip
    ListDecoder(snap, StateCache()).schedule(list(snap.queued), "w")
    assert len(decode_kernel.list_decode.signatures) == before == 1


def test_the_local_search_decodes_no_swap_of_jobs_that_start_together() -> None:
    """Every job starts at once (room and power for all): every swap would exchange two jobs
    that start together, so none is decoded (restarts are tried instead)."""
    nodes = tuple(eurora_like_nodes(16))
    jobs = tuple(Job(f"j{k}", 0, 100 + k, 1, Resources(cores=1, mem_mb=1024), unit_power_w=5.0)
                 for k in range(12))  # fmt: skip
    snap = Snapshot(0, nodes, (), jobs, PowerCap.unlimited())
    decoder = ListDecoder(snap, StateCache())
    best = decoder.schedule(prb_order(snap.queued), "prb")
    sources: list[str] = []
    clock = iter(range(10**6))
    tries, _ = priority_search(
        decoder, prb_order(snap.queued), lambda: best, lambda m: sources.append(m.source),
        lambda s, o: sources.append(s), deadline=2000.0, timer=lambda: float(next(clock)),
        seed=0,
    )  # fmt: skip
    assert tries == len(sources) > 0
    assert "swap" not in sources


def _busy_snapshot() -> Snapshot:
    """30 jobs on 8 nodes under a cap: a list schedule's starts are not in list order."""
    return Snapshot(0, tuple(eurora_like_nodes(8)), (), tuple(eurora_like_jobs(30, 3)),
                    PowerCap.constant(1600.0))  # fmt: skip


def _swap_lists(own_list: bool) -> tuple[list[str], list[list[str]]]:
    """The incumbent's own list and every swap candidate one local search decoded from it."""
    snap = _busy_snapshot()
    decoder = ListDecoder(snap, StateCache())
    listed = list(reversed(prb_order(snap.queued)))  # starts not in list order: a busy cluster
    best = decoder.schedule(listed, "restart")
    decoded: list[list[str]] = []
    sources: list[str] = []
    objective = decoder.objective

    def recording(jobs: list[Job]) -> float:
        decoded.append([j.id for j in jobs])
        return objective(jobs)

    decoder.objective = recording  # type: ignore[method-assign]
    clock = iter(range(10**6))
    priority_search(
        decoder, prb_order(snap.queued), lambda: best, lambda m: sources.append(m.source),
        lambda s, o: sources.append(s), deadline=400.0, timer=lambda: float(next(clock)),
        seed=0, own_list=own_list,
    )  # fmt: skip
    return list(best.order), [c for c, s in zip(decoded, sources, strict=True) if s == "swap"]


def test_a_list_schedule_keeps_the_list_it_was_decoded_from() -> None:
    """``MappedSchedule.order`` is the list given, and decoding it again gives the schedule;
    the start order of the same schedule is another list (the reason the swaps use it)."""
    snap = _busy_snapshot()
    cache = StateCache()
    listed = list(reversed(prb_order(snap.queued)))
    sched = ListDecoder(snap, cache).schedule(listed, "x")
    assert sched.complete
    assert sched.order == tuple(j.id for j in listed)
    assert map_schedule(snap, cache, listed, release=None, source="x").order == sched.order
    by_id = {j.id: j for j in snap.queued}
    again = ListDecoder(snap, cache).schedule([by_id[i] for i in sched.order], "y")
    assert again.assignments == sched.assignments
    start = {a.job_id: a.start for a in sched.assignments}
    assert sorted(sched.order, key=lambda i: start[i]) != list(sched.order)


def test_the_swaps_exchange_two_jobs_of_the_incumbents_own_list() -> None:
    """With ``own_list`` every swap candidate is the incumbent's own list with two jobs
    exchanged; without, the swaps start from its start order, another list."""
    own, swaps = _swap_lists(own_list=True)
    assert swaps
    for cand in swaps:
        assert sum(a != b for a, b in zip(cand, own, strict=True)) == 2
    own, swaps = _swap_lists(own_list=False)
    assert swaps
    assert any(sum(a != b for a, b in zip(cand, own, strict=True)) > 2 for cand in swaps)
