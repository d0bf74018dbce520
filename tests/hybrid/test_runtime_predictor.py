"""The runtime predictor (``scheduler/runtime_predictor.py``) and the hybrid's predicted view."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import pytest

from wattsched.connectors.simulated import SimulatedCluster
from wattsched.daemon.replay import replay
from wattsched.scheduler.dispatcher import create
from wattsched.scheduler.hybrid.dispatcher import HybridDispatcher
from wattsched.scheduler.hybrid.predicted import predicted_view
from wattsched.scheduler.hybrid.synthetic import eurora_like_jobs, eurora_like_nodes
from wattsched.scheduler.model import (
    Assignment,
    EndedJob,
    Job,
    Node,
    Plan,
    PowerCap,
    Resources,
    RunningJob,
    Snapshot,
)
from wattsched.scheduler.runtime_predictor import MAX_ERRORS, MIN_EVIDENCE, RuntimePredictor


def _job(jid: str, walltime: int = 3600, cores: int = 4, queue: str = "q", units: int = 1) -> Job:
    return Job(id=jid, submit=0, walltime=walltime, units=units, unit=Resources(cores=cores),
               queue=queue, runtime=7)  # fmt: skip


def test_the_prediction_is_the_mean_of_the_last_two_of_the_class() -> None:
    p = RuntimePredictor()
    p.learn_all([(_job("a"), 100), (_job("b"), 200), (_job("c"), 400)])
    assert p.predict(_job("x")) == 300 and p.level(_job("x")) == "class"


def test_the_fallbacks_coarse_class_then_walltime() -> None:
    p = RuntimePredictor()
    p.learn_all([(_job("a", cores=8), 100), (_job("b", cores=4), 300)])  # another shape
    assert p.level(_job("x")) == "coarse" and p.predict(_job("x")) == 200
    assert p.level(_job("y", queue="other")) == "walltime"
    assert p.predict(_job("y", queue="other")) == 3600
    assert p.predict(_job("z", walltime=60)) == 60  # another walltime: another class


def test_one_run_is_no_history() -> None:
    # A job of a 1-hour class fails after 20 s: the next of its class, started in the same
    # burst, is not taken for a 20-s job (a plan would count on its node 20 s later); a
    # second end of the class makes it speak, and min_runs=1 trusts the first.
    p = RuntimePredictor()
    p.learn(_job("failed"), 20)
    assert p.level(_job("x")) == "walltime" and p.predict(_job("x")) == 3600
    p.learn(_job("ran"), 3600)
    assert p.level(_job("x")) == "class" and p.predict(_job("x")) == 1810
    eager = RuntimePredictor(min_runs=1)
    eager.learn(_job("failed"), 20)
    assert eager.predict(_job("x")) == 20


def test_never_above_the_walltime_nor_below_one_second() -> None:
    p = RuntimePredictor()
    p.learn(_job("a"), 10**6)  # clamped to the walltime when learned
    p.learn(_job("b"), 0)
    assert p.predict(_job("x")) == (3600 + 1) // 2
    assert 1 <= p.predict(_job("x")) <= 3600
    assert p.errors[0] == 1.0  # 3600 s against the walltime predicted


def test_a_job_that_has_not_ended_never_informs_a_prediction() -> None:
    node = Node("n1", Resources(cores=16))
    run, queued = _job("r"), _job("w")
    p = RuntimePredictor(min_runs=1)
    at = {t: Snapshot(t, (node,), (RunningJob(run, 0, ("n1",), 3600),), (queued,))
          for t in (0, 500, 900)}  # fmt: skip
    for t in (0, 500, 900):  # running, then still running: nothing learned
        assert p.observe(at[t]) == []
        assert p.predict(queued) == 3600 and p.learned == 0
    # requeued (back in the queue, not running): no end either
    assert p.observe(Snapshot(950, (node,), (), (run, queued))) == []
    assert p.learned == 0
    p.observe(at[900])
    assert p.observe(Snapshot(1000, (node,), (), (queued,))) == ["r"]  # ended: ran 1000 s
    assert p.predict(queued) == 1000


def test_a_job_started_and_ended_between_two_snapshots_is_learned() -> None:
    node = Node("n1", Resources(cores=16))
    short, refused, other = _job("s"), _job("x"), _job("o", queue="other")
    p = RuntimePredictor(min_runs=1)
    p.observe(Snapshot(100, (node,), (), (short, refused, other)))
    p.started([(short, 100), (refused, 100), (other, 100)])  # the dispatcher starts all three
    # next cycle: ``short`` ended at 112 (as the RMS reports), ``other`` at some time before
    # now, ``refused`` never started (still queued): no end
    ended = (EndedJob("s", "completed", 112),)
    assert sorted(p.observe(Snapshot(130, (node,), (), (refused,), ended=ended))) == ["o", "s"]
    assert p.predict(short) == 12  # the end reported
    assert p.predict(other) == 30  # no end reported: until now, at most
    assert p.learned == 2 and p.level(refused) == "class"
    # a job the RMS reports cancelled (cut short, or never run) is not learned
    gone = _job("c", queue="third")
    p.started([(gone, 130)])
    p.observe(Snapshot(140, (node,), (), (), ended=(EndedJob("c", "cancelled", 131),)))
    assert p.learned == 2 and p.predict(gone) == gone.walltime


def test_only_the_plans_starts_now_are_watched() -> None:
    node = Node("n1", Resources(cores=16))
    now, later, gone = _job("a"), _job("b"), _job("g")
    p = RuntimePredictor(min_runs=1)
    snap = Snapshot(100, (node,), (), (now, later))
    p.observe(snap)
    plan = Plan(100, (Assignment("a", 100, ("n1",)), Assignment("b", 400, ("n1",)),
                      Assignment("g", 100, ("n1",))))  # fmt: skip
    p.plan_started(snap, plan)  # "g" is not queued: a plan naming it starts nothing
    assert p.observe(Snapshot(130, (node,), (), (later,))) == ["a"]  # ran 30 s at most
    assert p.predict(now) == 30 and p.predict(gone) == 30  # one class


def test_the_online_hybrid_learns_a_burst_of_jobs_shorter_than_its_cycles() -> None:
    # One whole node, six 5-s jobs (walltime 1 h) queued together: each starts at a cycle and
    # has ended by the next one, so no snapshot ever shows it running. Each is learned at its
    # end all the same, with the 5 s it ran (the predictions of the class drop to 5 s).
    node = Node("n1", Resources(cores=16))
    jobs = [Job(id=f"b{k}", submit=0, walltime=3600, units=1, unit=Resources(cores=16),
                queue="q", runtime=5) for k in range(6)]  # fmt: skip
    p = RuntimePredictor()
    hybrid = HybridDispatcher(mode="online", workers=1, cycle_budget_s=0.2, predictor=p)
    cluster = SimulatedCluster([node], jobs, PowerCap.unlimited(), record_power=False)
    replay(cluster, hybrid)
    assert [r.end for r in cluster.records.values()] == [5, 10, 15, 20, 25, 30]
    assert p.learned >= 5 and p.predict(jobs[0]) == 5


def test_the_predicted_view_plans_on_predictions_and_keeps_overrunning_jobs() -> None:
    node = Node("n1", Resources(cores=16))
    p = RuntimePredictor()
    p.learn_all([(_job("old"), 100), (_job("older"), 100)])
    snap = Snapshot(300, (node,), (RunningJob(_job("r"), 0, ("n1",), 3600),),
                    (_job("w"), _job("v", queue="other")))  # fmt: skip
    view, durations = predicted_view(snap, p)
    assert [j.walltime for j in view.queued] == [100, 3600]
    (rj,) = view.running
    # past its prediction (100 s) and still running: as long again as it has run, at most
    # its walltime end
    assert rj.end_estimate == 600 and durations["r"] == 600
    assert snap.queued[0].walltime == 3600  # the snapshot itself is untouched
    late = replace(snap, time=3000)
    assert predicted_view(late, p)[0].running[0].end_estimate == 3600


def _replay(predictor: RuntimePredictor | bool | None) -> tuple[SimulatedCluster, object]:
    nodes = eurora_like_nodes(6)
    jobs = [replace(j, runtime=max(1, j.walltime // (2 + k % 5)))
            for k, j in enumerate(eurora_like_jobs(24, seed=3))]  # fmt: skip
    cluster = SimulatedCluster(nodes, jobs, PowerCap.constant(2500.0), offline=True,
                               record_power=False)  # fmt: skip
    hybrid = create("hybrid", mode="offline", workers=1, total_budget_s=1.0, predictor=predictor,
                    research={"budget_s": 0.05, "total_s": 0.5, "robust": "none"})  # fmt: skip
    res = replay(cluster, hybrid, keep_stats=True)
    assert res.start_errors == 0 and cluster.cap_violation_s == 0
    assert all(r.start is not None for r in cluster.records.values())
    return cluster, hybrid


def test_online_learning_from_a_replay_learns_each_ended_job_once_as_it_ran() -> None:
    p = RuntimePredictor(depth=50)
    cluster, _ = _replay(p)
    ran = Counter(r.job.runtime for r in cluster.records.values())
    learned = Counter(v for runs in p._fine.values() for v in runs)
    # each job learned once, at a cycle after its end, with the runtime it ran (the jobs that
    # end after the replay's last cycle are never seen to end)
    assert not learned - ran
    last = max(r.end or 0 for r in cluster.records.values())
    assert p.learned >= sum(1 for r in cluster.records.values() if (r.end or 0) < last)


def test_the_default_learns_online_and_plans_on_walltimes_offline() -> None:
    assert HybridDispatcher(mode="offline").predictor is None
    assert isinstance(HybridDispatcher(mode="offline", predictor=True).predictor,
                      RuntimePredictor)  # fmt: skip
    online = HybridDispatcher(mode="online").predictor
    assert isinstance(online, RuntimePredictor) and online.gate and online.learned == 0
    assert HybridDispatcher(mode="online", predictor=False).predictor is None


def test_depth_is_checked() -> None:
    with pytest.raises(ValueError, match="depth"):
        RuntimePredictor(depth=0)
    with pytest.raises(ValueError, match="window"):
        RuntimePredictor(window=0)
    with pytest.raises(ValueError, match="min_runs"):
        RuntimePredictor(min_runs=3)  # more than the depth kept: it would never speak
    with pytest.raises(ValueError, match="spread"):
        RuntimePredictor(spread=1.0)


def test_an_erratic_class_is_predicted_at_its_longest_recent_run() -> None:
    """A class whose jobs either fail at once or run to the walltime (hist_400_20140402_194226's
    debug jobs: 45 s or 1,800 s): the mean is what neither kind runs; with ``spread`` the
    class is predicted at its longest recent run once its runs differ by more than that."""
    runs = [(_job("a", walltime=1800), 45), (_job("b", walltime=1800), 1800)]
    mean, erratic = RuntimePredictor(), RuntimePredictor(spread=3.0)
    mean.learn_all(runs)
    erratic.learn_all(runs)
    assert mean.predict(_job("x", walltime=1800)) == 922
    assert erratic.predict(_job("x", walltime=1800)) == 1800
    erratic.learn_all([(_job("c", walltime=1800), 50), (_job("d", walltime=1800), 100)])
    assert erratic.predict(_job("x", walltime=1800)) == 75  # within the spread: the mean


def _first_started_online(predictor: RuntimePredictor | bool | None) -> str:
    """Two whole-node jobs of one weight queued on a free node: ``long`` (walltime 1,000 s)
    and ``short`` (walltime 3,600 s, its class seen to run 100 s). Which starts first."""
    node = Node("n1", Resources(cores=16))
    long = Job(id="long", submit=0, walltime=1000, units=1, unit=Resources(cores=16), queue="q")
    short = Job(id="short", submit=0, walltime=3600, units=1, unit=Resources(cores=16), queue="q")
    hybrid = HybridDispatcher(mode="online", workers=1, cycle_budget_s=0.3, predictor=predictor)
    plan = hybrid.plan(Snapshot(10, (node,), (), (long, short)))
    (now,) = [a for a in plan.assignments if a.start == 10]
    return now.job_id


def test_online_the_hybrid_plans_on_the_predicted_runtimes() -> None:
    # On walltimes the shorter walltime goes first (the other waits 1,000 s, not 3,600 s);
    # with the class of ``short`` seen to run 100 s, ``short`` goes first (the other waits
    # 100 s). Every start is still checked on the real snapshot.
    assert _first_started_online(False) == "long"
    assert _first_started_online(None) == "long"  # the default: nothing learned yet
    old = [Job(id=f"old{k}", submit=0, walltime=3600, units=1, unit=Resources(cores=16),
               queue="q") for k in range(MIN_EVIDENCE)]  # fmt: skip
    p = RuntimePredictor()
    p.learn_all((j, 100) for j in old)
    assert p.better_than_walltimes()
    assert _first_started_online(p) == "short"


def test_predictions_no_better_than_the_walltimes_are_not_planned_on() -> None:
    # Ten jobs ran to their walltimes (as good a guess as their predictions), then one of
    # the class of ``short`` ran 100 s: its prediction is there, but the predictions have
    # not beaten the walltimes: plan on the walltimes.
    exact = [replace(_job(f"x{k}"), walltime=600) for k in range(MIN_EVIDENCE)]
    p = RuntimePredictor(min_runs=1)
    p.learn_all((j, 600) for j in exact)
    p.learn(Job(id="old", submit=0, walltime=3600, units=1, unit=Resources(cores=16),
                queue="q"), 100)  # fmt: skip
    assert not p.better_than_walltimes() and p.level(_job("s", cores=16)) == "class"
    assert _first_started_online(p) == "long"
    ungated = RuntimePredictor(gate=False, min_runs=1)  # the same evidence, the gate off
    ungated.learn_all((j, 600) for j in exact)
    ungated.learn(Job(id="old", submit=0, walltime=3600, units=1, unit=Resources(cores=16),
                      queue="q"), 100)  # fmt: skip
    assert ungated.better_than_walltimes() and _first_started_online(ungated) == "short"


def test_better_than_walltimes_needs_evidence_over_its_window() -> None:
    p = RuntimePredictor(window=MIN_EVIDENCE)
    p.learn_all((_job(str(k)), 100) for k in range(MIN_EVIDENCE - 1))
    assert not p.better_than_walltimes()  # too few jobs to judge
    p.learn(_job("9"), 100)
    assert p.better_than_walltimes()  # predicted 100 s, walltimes 3,600 s
    # The walltimes become right (runtimes of 3,600 s, predictions still lagging): after a
    # window of them, the predictions have lost.
    p.learn_all((_job(f"w{k}"), 3600) for k in range(MIN_EVIDENCE))
    assert not p.better_than_walltimes()
    # The prediction recorded for a job is the one made when it was first seen running.
    node = Node("n1", Resources(cores=16))
    rj = RunningJob(_job("r"), 0, ("n1",), 3600)
    q = RuntimePredictor(min_runs=1)
    q.learn(_job("a"), 100)
    q.observe(Snapshot(0, (node,), (rj,), ()))  # predicted 100 s now
    q.learn(_job("b"), 1000)  # the class's mean becomes 550 s before it ends
    q.observe(Snapshot(200, (node,), (), ()))
    assert q.errors[-1] == 2.0  # ran 200 s against the 100 s predicted at its start


def test_a_job_class_is_per_user_where_the_rms_names_one() -> None:
    p = RuntimePredictor(min_runs=1)
    p.learn(replace(_job("a"), user="alice"), 100)
    assert p.predict(replace(_job("x"), user="alice")) == 100
    assert p.level(replace(_job("y"), user="bob")) == "coarse"  # another user: coarse class


def test_the_error_record_is_bounded() -> None:
    p = RuntimePredictor()
    p.learn_all((_job(str(k)), 100) for k in range(MAX_ERRORS + 5))
    assert len(p.errors) == MAX_ERRORS and p.learned == MAX_ERRORS + 5
