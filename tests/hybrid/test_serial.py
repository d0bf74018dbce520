"""The serial decoder (:mod:`wattsched.scheduler.hybrid.serial`): each job in list order at the
earliest time it fits beside the jobs placed before it. Its schedules are feasible on random
instances (running and overrunning jobs, placement rules, exclusive jobs, cap steps), a wide
job keeps the slot the parallel decoder gives away, and the search with ``serial`` on keeps
the better schedule."""

from __future__ import annotations

import itertools
import math
from dataclasses import replace

import numpy as np
from hypothesis import HealthCheck, assume, given, settings

from tests.hybrid.test_decode import instances
from wattsched.scheduler.hybrid.decode import ListDecoder
from wattsched.scheduler.hybrid.mapping import MappedSchedule, map_schedule
from wattsched.scheduler.hybrid.search import SearchParams, hybrid_search
from wattsched.scheduler.hybrid.serial import SerialDecoder, serial_schedule
from wattsched.scheduler.hybrid.serial_swaps import SWAP_REACH, serial_search
from wattsched.scheduler.hybrid.synthetic import eurora_like_jobs, eurora_like_nodes
from wattsched.scheduler.listsched import live_end
from wattsched.scheduler.mapper import StateCache
from wattsched.scheduler.model import Job, PowerCap, Resources, Snapshot
from wattsched.scheduler.validate import Executed, validate_schedule


def _whole_nodes(jid: str, units: int, walltime: int, ewt: int = 3600) -> Job:
    return Job(id=jid, submit=0, walltime=walltime, units=units,
               unit=Resources(cores=16, mem_mb=1024), queue="q", ewt=ewt)  # fmt: skip


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances())
def test_serial_schedules_are_feasible(case: tuple[Snapshot, list[list[Job]]]) -> None:
    snap, lists = case
    runs = [Executed(rj.job, rj.start, live_end(rj.end_estimate, snap.time), rj.nodes)
            for rj in snap.running]  # fmt: skip
    # Cases the generator makes that no schedule can mend: a cap step below the nodes' static
    # draw, running jobs that already break a rule (an exclusive one sharing its node).
    static = sum(n.power.state_watts(n.state) for n in snap.nodes)
    assume(static <= min(w for _, w in snap.cap.steps))
    assume(validate_schedule(snap.nodes, runs, snap.cap) == [])
    cache = StateCache()
    for jobs in lists:
        sched = serial_schedule(snap, cache, jobs, source="s")
        assert sched is not None
        placed = {a.job_id: a for a in sched.assignments}
        if math.isfinite(sched.objective):
            assert placed.keys() == {j.id for j in jobs}
        # A job the parallel decoder places somewhere, the serial one places too (at worst
        # once everything else has ended).
        parallel = map_schedule(snap, StateCache(), jobs, release=None, source="p")
        assert math.isfinite(sched.objective) or not math.isfinite(parallel.objective)
        by_id = {j.id: j for j in jobs}
        done = [Executed(by_id[a.job_id], a.start, a.start + by_id[a.job_id].walltime, a.nodes)
                for a in placed.values()]  # fmt: skip
        assert all(a.start >= snap.time for a in placed.values())
        assert validate_schedule(snap.nodes, runs + done, snap.cap) == []


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances())
def test_the_compiled_serial_decode_is_the_python_one(
    case: tuple[Snapshot, list[list[Job]]],
) -> None:
    """The same assignments (jobs, starts, nodes, in order) and objective, to the unit."""
    snap, lists = case
    cache = StateCache()
    decoder = SerialDecoder(ListDecoder(snap, cache))
    assert decoder.compiled  # whole-watt node models and first cores: the compiled path
    for jobs in lists:
        expected = serial_schedule(snap, StateCache(), jobs, source="s")
        assert decoder.schedule(jobs, "s") == expected
        assert serial_schedule(snap, cache, jobs, source="s", decoder=decoder) == expected


def test_the_compiled_serial_decode_on_eurora_like_instances() -> None:
    """Seeded: 60-job instances at three caps and a cap step, 10 noisy orders each."""
    nodes = tuple(eurora_like_nodes(8))
    caps = (PowerCap.constant(900.0), PowerCap.constant(1500.0), PowerCap.constant(math.inf),
            PowerCap(((0, 1500.0), (4000, 700.0), (20000, 1200.0))))  # fmt: skip
    for seed in range(2):
        jobs = tuple(eurora_like_jobs(60, seed))
        for cap in caps:
            snap = Snapshot(0, nodes, (), jobs, cap)
            decoder = SerialDecoder(ListDecoder(snap, StateCache()))
            assert decoder.compiled
            rng = np.random.default_rng(seed)
            for _ in range(10):
                order = [jobs[i] for i in rng.permutation(len(jobs))]
                expected = serial_schedule(snap, StateCache(), order, source="r")
                assert decoder.schedule(order, "r") == expected


def test_the_serial_decoder_falls_back_to_python_off_the_exact_path() -> None:
    """A fractional first core: the list decode is not compiled, nor the serial one."""
    nodes = tuple(
        replace(n, power=replace(n.power, first_core_w=7.25)) for n in eurora_like_nodes(4)
    )
    jobs = tuple(eurora_like_jobs(20, 3))
    snap = Snapshot(0, nodes, (), jobs, PowerCap.constant(700.0))
    decoder = SerialDecoder(ListDecoder(snap, StateCache()))
    assert not decoder.compiled
    expected = serial_schedule(snap, StateCache(), list(jobs), source="f")
    assert decoder.schedule(list(jobs), "f") == expected


def test_a_wide_job_keeps_its_slot() -> None:
    """List: a one-node job, a two-node job, a long one-node job, on two free nodes. The
    parallel decoder starts the long job beside the first (it fits now) and the wide job waits
    for it; the serial one keeps the wide job's slot and starts the long job after it."""
    nodes = tuple(eurora_like_nodes(2))
    first, wide, long_ = (
        _whole_nodes("a", 1, 50),
        _whole_nodes("b", 2, 10),
        _whole_nodes("c", 1, 1000),
    )
    snap = Snapshot(0, nodes, (), (first, wide, long_), PowerCap.unlimited())
    order = [first, wide, long_]
    parallel = map_schedule(snap, StateCache(), order, release=None, source="p")
    assert {a.job_id: a.start for a in parallel.assignments} == {"a": 0, "b": 1000, "c": 0}
    serial = serial_schedule(snap, StateCache(), order, source="s")
    assert serial is not None
    assert {a.job_id: a.start for a in serial.assignments} == {"a": 0, "b": 50, "c": 60}
    assert serial.objective < parallel.objective


def test_the_search_considers_the_serial_schedules() -> None:
    nodes = tuple(eurora_like_nodes(2))
    jobs = (_whole_nodes("a", 1, 50), _whole_nodes("b", 2, 10), _whole_nodes("c", 1, 1000))
    snap = Snapshot(0, nodes, (), jobs, PowerCap.unlimited())
    params = SearchParams(budget_s=2.0, workers=1, lns=False, cp=False, local_search=0.1,
                          orderings=False, lower_bound="none", serial=0.5)  # fmt: skip
    out = hybrid_search(snap, StateCache(), params)
    seen = dict(out.history)
    assert "serial-prb" in seen and "serial-best" in seen
    assert out.best.objective <= min(seen["serial-prb"], seen["serial-best"])
    assert not any(s in seen for s in ("serial-wspt", "serial-wsdf", "serial-wsef"))
    off = hybrid_search(snap, StateCache(), replace(params, serial=0.0))
    assert not any(s.startswith("serial") for s, _ in off.history)
    # With the orderings on, the serial search decodes them too, as starting lists.
    both = hybrid_search(snap, StateCache(), replace(params, orderings=True))
    seen = dict(both.history)
    assert {"wspt", "serial-wspt", "serial-wsdf", "serial-wsef"} <= seen.keys()
    assert both.best.objective <= min(seen["serial-wspt"], seen["serial-wsef"])


def test_a_serial_decode_past_its_deadline_gives_up() -> None:
    nodes = tuple(eurora_like_nodes(2))
    jobs = [_whole_nodes(str(k), 1, 100) for k in range(5)]
    snap = Snapshot(0, nodes, (), tuple(jobs), PowerCap.unlimited())
    assert (
        serial_schedule(snap, StateCache(), jobs, source="s", deadline=0.0, timer=lambda: 1.0)
        is None
    )


def test_serial_search_decodes_every_queued_job_whatever_the_incumbents_list() -> None:
    """An incumbent whose list names only some jobs (or none: a schedule mapped by release
    times) still gives full lists: the jobs it leaves out follow in PRB's order."""
    nodes = tuple(eurora_like_nodes(2))
    jobs = (_whole_nodes("a", 1, 50), _whole_nodes("b", 2, 10), _whole_nodes("c", 1, 1000))
    snap = Snapshot(0, nodes, (), jobs, PowerCap.unlimited())
    base = map_schedule(snap, StateCache(), list(jobs), release=None, source="p")
    seen: list[MappedSchedule] = []
    for order in (("b",), ()):
        best = replace(base, order=order)
        # A timer that counts its calls: the two serial decodes and a few swaps fit.
        serial_search(snap, StateCache(), list(jobs), best, seen.append, deadline=40,
                      timer=itertools.count().__next__)  # fmt: skip
    assert seen and all({a.job_id for a in s.assignments} == {"a", "b", "c"} for s in seen)


def test_cp_solutions_are_decoded_serially_with_cp_serial() -> None:
    """With ``cp_serial`` each CP solution (a whole-model solve, an LNS move) is decoded by the
    serial scheme too, in the order of its starts; without it, never."""
    nodes = tuple(eurora_like_nodes(2))
    jobs = (_whole_nodes("a", 1, 50), _whole_nodes("b", 2, 10), _whole_nodes("c", 1, 1000),
            _whole_nodes("d", 1, 300), _whole_nodes("e", 2, 40))  # fmt: skip
    snap = Snapshot(0, nodes, (), jobs, PowerCap.unlimited())
    params = SearchParams(budget_s=1.5, workers=1, lns=True, local_search=0.1, serial=0.1,
                          cp_serial=True, lns_time_s=0.05, lower_bound="none")  # fmt: skip
    out = hybrid_search(snap, StateCache(), params)
    sources = [s for s, _ in out.history]
    assert "cp1-serial" in sources
    assert any(s.startswith("lns") and s.endswith("-serial") for s in sources)
    assert out.best.objective <= min(o for _, o in out.history)
    off = hybrid_search(snap, StateCache(), replace(params, cp_serial=False))
    assert "cp1-mapper" in [s for s, _ in off.history]
    assert not any(s.endswith("-serial") for s, _ in off.history)


def test_serial_polish_keeps_time_after_the_lns_for_serial_swaps() -> None:
    """With ``serial_polish`` the LNS stops early and serial swaps run in the final
    incumbent's list; the search's best is never worse than what it saw."""
    nodes = tuple(eurora_like_nodes(8))
    jobs = tuple(eurora_like_jobs(40, 5))
    snap = Snapshot(0, nodes, (), jobs, PowerCap.constant(1500.0))
    params = SearchParams(budget_s=1.2, workers=1, local_search=0.1, serial=0.1,
                          cp_serial=True, lns_time_s=0.05, lower_bound="none",
                          serial_polish=0.3)  # fmt: skip
    out = hybrid_search(snap, StateCache(), params)
    extra = out.stats.extra
    assert int(extra["polish_tries"]) >= 1  # the incumbent's list at least
    polished = [src for src, _ in out.history if "+serial-" in src]
    assert polished and all(src.split("+")[0] != "serial" for src in polished)
    assert int(extra["lns_moves"]) >= 1
    assert out.best.objective <= min(o for _, o in out.history)
    off = hybrid_search(snap, StateCache(), replace(params, serial_polish=0.0))
    assert "polish_tries" not in off.stats.extra
    no_serial = hybrid_search(snap, StateCache(), replace(params, serial=0.0))
    assert "polish_tries" not in no_serial.stats.extra  # the polish needs the serial decoder


def test_the_compiled_swaps_are_the_python_decoders_swaps() -> None:
    """``serial_search``'s swaps on the compiled decoder's entity rows keep the very swaps
    (and schedules) that Job lists decoded in Python keep, draw for draw."""
    nodes = tuple(eurora_like_nodes(8))
    jobs = tuple(eurora_like_jobs(40, 9))
    snap = Snapshot(0, nodes, (), jobs, PowerCap.constant(1500.0))
    cache = StateCache()
    decoder = SerialDecoder(ListDecoder(snap, cache))
    assert decoder.compiled
    order = list(jobs)
    start = serial_schedule(snap, cache, order, source="s")
    assert start is not None
    start = replace(start, order=tuple(j.id for j in order))
    # The reference: the swaps drawn as serial_search draws them, each list in Python.
    rng = np.random.default_rng(4)
    current, best_obj, expected = order, start.objective, []
    for _ in range(60):
        i = int(rng.integers(0, len(order) - 1))
        j = min(len(order) - 1, i + int(rng.integers(1, SWAP_REACH + 1)))
        cand = current.copy()
        cand[i], cand[j] = cand[j], cand[i]
        sched = serial_schedule(snap, StateCache(), cand, source="s")
        assert sched is not None
        if sched.objective < best_obj:
            current, best_obj = cand, sched.objective
            expected.append((sched.objective, sched.assignments))
    assert len(expected) >= 3  # swaps that pay, on this instance
    reads = itertools.count()  # one read of the clock per swap (after the start list's)
    got: list[MappedSchedule] = []
    tries, wins = serial_search(snap, cache, order, start, got.append, deadline=60.5,
                                timer=lambda: next(reads), seed=4, decoder=decoder,
                                polish=True)  # fmt: skip
    assert (tries, wins) == (61, len(expected))
    assert [(m.objective, m.assignments) for m in got[1:]] == expected


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances())
def test_a_decode_from_a_known_prefix_is_the_whole_decode(
    case: tuple[Snapshot, list[list[Job]]],
) -> None:
    """``SerialDecoder.run`` with the first ``fixed`` rows placed from another list's decode
    gives that list's whole decode, to the node, whatever the cut (cap steps, exclusive and
    overrunning jobs, unplaceable jobs)."""
    snap, lists = case
    decoder = SerialDecoder(ListDecoder(snap, StateCache()))
    assert decoder.compiled
    for jobs in lists:
        perm = decoder.decoder.perm(jobs)
        objective, known = decoder.run(perm)
        for fixed in range(len(perm) + 1):
            other = perm.copy()
            if fixed + 1 < len(perm):  # the rest of the list changes
                other[fixed], other[-1] = other[-1], other[fixed]
            expected_obj, expected = decoder.run(other)
            got_obj, got = decoder.run(other, fixed, known)
            assert got_obj == expected_obj
            assert np.array_equal(got[0], expected[0]) and got[2] == expected[2]
            assert np.array_equal(got[1][: got[2]], expected[1][: expected[2]])
            for e in range(len(got[0])):
                lo, m = decoder.decoder.ptr[e], got[5][e]
                assert m == expected[5][e]
                assert np.array_equal(got[3][lo : lo + m], expected[3][lo : lo + m])
                assert np.array_equal(got[4][lo : lo + m], expected[4][lo : lo + m])
        assert decoder.run(perm, len(perm), known)[0] == objective
