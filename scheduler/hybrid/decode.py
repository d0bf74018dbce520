"""The hybrid's decode of priority lists, compiled: :func:`.mapping.map_schedule` with
``release=None`` (plain list scheduling by the real mapper) at a fraction of its cost.

A :class:`ListDecoder` is built once per search from the snapshot and its
:class:`~wattsched.scheduler.mapper.StateCache` (the nodes, the running jobs' placements, every
waiting job's vector as arrays); each decode is then one call of
:func:`.decode_kernel.list_decode` on a permutation, with the very same schedule as
``map_schedule`` (``tests/hybrid/test_decode.py`` compares them on random instances).
:meth:`ListDecoder.objective` gives the objective alone, :meth:`ListDecoder.schedule` the
:class:`~.mapping.MappedSchedule` (assignments built only then).

The compiled path is taken only when every power sum is exact whatever its order (each job's
unit power the same on every node, or per-node figures that are whole watts; whole-watt first
cores), so the float results cannot differ from the mapper's; otherwise, and for job ids
not unique, every call falls back to ``map_schedule``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from wattsched.scheduler.fit_kernels import RULE_FREE, RULE_PACK, RULE_SCATTER
from wattsched.scheduler.hybrid.decode_kernel import list_decode, mean_weighted_wait
from wattsched.scheduler.hybrid.mapping import MappedSchedule, map_schedule
from wattsched.scheduler.listsched import live_end
from wattsched.scheduler.mapper import StateCache
from wattsched.scheduler.model import (
    Assignment,
    Job,
    Node,
    NodePowerModel,
    Placement,
    PowerCap,
    Resources,
    Snapshot,
)
from wattsched.scheduler.node_arrays import FloatArray, IntArray, JobVec

KernelOut = tuple[IntArray, IntArray, int, IntArray, IntArray, IntArray]
"""A compiled decode's ``(start, seq, placed, pool_i, pool_c, plen)``."""

_RULE = {Placement.FREE: RULE_FREE, Placement.SCATTER: RULE_SCATTER, Placement.PACK: RULE_PACK}


def _whole(a: FloatArray) -> bool:
    return bool(np.all(np.isfinite(a)) and np.all(a == np.round(a)) and np.all(np.abs(a) < 2**40))


class ListDecoder:
    """Priority lists of ``snap``'s waiting jobs decoded by the real list scheduler;
    ``arrivals``: jobs yet to arrive (submit after ``snap``'s time), listed too and never
    started before their submit time (compiled decode only)."""

    def __init__(self, snap: Snapshot, cache: StateCache, arrivals: Sequence[Job] = ()) -> None:
        self.snap = snap
        self.cache = cache
        self.max_ewt = snap.max_ewt()
        self.ops = 0
        """The compiled decodes' work so far, in the kernel's steps (none counted for a
        decode by :func:`.map_schedule`, where the kernel does not apply)."""
        state = cache.state(snap)
        placements = cache.running_placements()
        running = [(rj.job.id, rj.end_estimate) for rj in snap.running]
        jobs = [*snap.queued, *arrivals]
        self.index = {j.id: snap_i for snap_i, j in enumerate(jobs)}
        self.jobs = jobs
        ids = [jid for jid, _ in running] + [j.id for j in jobs]
        vecs: list[JobVec] = [placements[jid][0] for jid, _ in running if jid in placements]
        vecs += [cache.vec(j) for j in jobs]
        arrays = state.arrays
        self.names = arrays.names
        self.compiled = (
            len(set(ids)) == len(ids)
            and all(jid in placements for jid, _ in running)
            and all(j.submit > snap.time for j in arrivals)
            and (not arrays.has_first_core or _whole(arrays.first_core_w))
            and all(
                v.flat_w is not None or (v.node_w is not None and _whole(v.node_w)) for v in vecs
            )
        )
        if not self.compiled:
            return
        r = len(running)
        self.n_running = r
        n_nodes = len(arrays.names)
        self.req = np.array([v.req for v in vecs], dtype=np.int64).reshape(len(vecs), 4)
        self.nz = np.zeros((len(vecs), 4), dtype=np.int64)
        self.nnz = np.array([len(v.nz) for v in vecs], dtype=np.int64)
        for e, v in enumerate(vecs):
            self.nz[e, : len(v.nz)] = v.nz
        self.units = np.array([v.units for v in vecs], dtype=np.int64)
        self.walltime = np.array([v.walltime for v in vecs], dtype=np.int64)
        shapes: dict[tuple[object, ...], int] = {}
        self.shape = np.array([shapes.setdefault(v.fit_kind, len(shapes)) for v in vecs], np.int64)
        self.n_shapes = max(len(shapes), 1)
        self.flat_w = np.array([math.nan if v.flat_w is None else v.flat_w for v in vecs])
        self.node_w = np.zeros((len(vecs), n_nodes if any(v.flat_w is None for v in vecs) else 0))
        for e, v in enumerate(vecs):
            if v.flat_w is None and v.node_w is not None:
                self.node_w[e] = v.node_w
        self.min_w = np.array([v.min_w for v in vecs], dtype=float)
        self.rule = np.array([_RULE[v.placement] for v in vecs], dtype=np.int64)
        self.exclusive = np.array([v.exclusive for v in vecs], dtype=np.bool_)
        rank = {jid: k for k, jid in enumerate(sorted(ids))}
        self.id_rank = np.array([rank[jid] for jid in ids], dtype=np.int64)
        self.ends0 = np.array([live_end(e, snap.time) for _, e in running], dtype=np.int64)
        sizes = [len(placements[jid][1]) for jid, _ in running] + [v.units for v in vecs[r:]]
        self.ptr = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        total = int(sum(sizes))
        self.pool_i = np.zeros(total, dtype=np.int64)
        self.pool_c = np.zeros(total, dtype=np.int64)
        self.plen0 = np.zeros(len(vecs), dtype=np.int64)
        for e, (jid, _) in enumerate(running):
            _, idx, cnt = placements[jid]
            lo = int(self.ptr[e])
            self.pool_i[lo : lo + len(idx)] = idx
            self.pool_c[lo : lo + len(idx)] = cnt
            self.plen0[e] = len(idx)
        self.state = state
        self.cap_t = np.array([t for t, _ in snap.cap.steps], dtype=np.int64)
        self.cap_w = np.array([w for _, w in snap.cap.steps], dtype=float)
        self.weight = np.zeros(len(vecs))
        self.submit = np.zeros(len(vecs), dtype=np.int64)
        for k, j in enumerate(jobs):
            self.weight[r + k] = self.max_ewt / j.ewt
            self.submit[r + k] = j.submit
        self.release = np.zeros(len(vecs), dtype=np.int64)
        self.release[r + len(snap.queued) :] = [j.submit for j in arrivals]
        self.hold = -1
        """An entity row holding a reservation in the decode (-1: none; see the kernel)."""
        self.known_wall = self.walltime
        """The walltimes the RMS knows (the hold's rule), whatever durations are decoded."""
        self.known_end0 = self.ends0

    def perm(self, jobs: Sequence[Job]) -> IntArray:
        """The entity rows of ``jobs`` (waiting jobs of the snapshot), in their order."""
        index, r = self.index, self.n_running
        return np.array([index[j.id] + r for j in jobs], dtype=np.int64)

    def _run(self, perm: IntArray) -> KernelOut:
        s, a = self.state, self.state.arrays
        start, seq, placed, pool_i, pool_c, plen, ops = list_decode(
            perm, self.snap.time, s.free, s.busy_units, s.held_whole, s.power_w, a.usable,
            a.capacity, a.efficiency, a.first_core_w, a.has_first_core, self.cap_t, self.cap_w,
            self.req, self.nz, self.nnz, self.units, self.walltime, self.shape, self.flat_w,
            self.node_w, self.min_w, self.rule, self.exclusive, self.id_rank, self.ends0,
            self.ptr, self.pool_i, self.pool_c, self.plen0, self.n_running, self.n_shapes,
            self.release, self.hold, self.known_wall, self.known_end0,
        )  # fmt: skip
        self.ops += ops
        return start, seq, placed, pool_i, pool_c, plen

    def objective(self, jobs: Sequence[Job]) -> float:
        """The mean weighted queue time of ``jobs`` list scheduled (``inf``: some unplaced)."""
        if not self.compiled:
            return self.schedule(jobs, "").objective
        perm = self.perm(jobs)
        start = self._run(perm)[0]
        return float(mean_weighted_wait(perm, start, self.weight, self.submit))

    def schedule(self, jobs: Sequence[Job], source: str) -> MappedSchedule:
        """``map_schedule(snap, cache, jobs, release=None, source=source)``, the same value."""
        if not self.compiled:
            return map_schedule(self.snap, self.cache, jobs, release=None, source=source)
        perm = self.perm(jobs)
        out = self._run(perm)
        return self.mapped(perm, out, source, tuple(j.id for j in jobs))

    def mapped(
        self,
        perm: IntArray,
        out: KernelOut,
        source: str,
        order: tuple[str, ...] = (),
    ) -> MappedSchedule:
        """The schedule of a kernel's output ``(start, seq, placed, pool_i, pool_c, plen)``
        for the entities ``perm``."""
        start, seq, placed, pool_i, pool_c, plen = out
        names, r = self.names, self.n_running
        assigned = []
        for e in seq[:placed].tolist():
            lo = int(self.ptr[e])
            nodes: list[str] = []
            for i, c in zip(
                pool_i[lo : lo + plen[e]].tolist(), pool_c[lo : lo + plen[e]].tolist(), strict=True
            ):
                nodes.extend([names[i]] * c)
            assigned.append(Assignment(self.jobs[e - r].id, int(start[e]), tuple(nodes)))
        return MappedSchedule(
            assignments=tuple(assigned),
            objective=float(mean_weighted_wait(perm, start, self.weight, self.submit)),
            conflicts=(),
            postponed=0,
            source=source,
            order=order,
        )


_warm = False


def warm() -> None:
    """Load the compiled decode now (compiled on first use, then cached on disk): a toy
    decode with the argument types of a real one, once per process, so that a search's
    budget does not pay for it."""
    global _warm
    if _warm:
        return
    node = Node("w0", Resources(cores=2, mem_mb=1024), NodePowerModel(first_core_w=1.0))
    job = Job("w", 0, 10, 1, Resources(cores=1, mem_mb=1), unit_power_w=1.5)
    snap = Snapshot(0, (node,), (), (job,), PowerCap.constant(1000.0))
    ListDecoder(snap, StateCache()).schedule([job], "warm")
    _warm = True
