"""PRB's online pass (what starts now) straight off its queue index.

The same decisions as :func:`wattsched.scheduler.listsched.list_schedule` with
``full=False`` over :meth:`QueueIndex.fitting`'s jobs: the candidates in priority order,
each placed when its pooled need fits in what is free and no job of its kind (shape, rule,
exclusivity: :attr:`~wattsched.scheduler.node_arrays.JobVec.fit_kind`) failed for
lack of resources earlier in the pass (free resources only shrink while placing, so such a
job would fail too). Only the candidates that pass both tests are looked at in Python; the
scan over the others is one compiled call (:func:`next_candidate`) per placement tried.
A candidate whose total exceeds what is free now (after this pass's starts) is skipped rather
than failed by the mapper's pooled check: a job of its shape has the same total, so it is
skipped as well, as the failed shape would have had it.
"""

from __future__ import annotations

import numpy as np

from wattsched.scheduler.listsched import OrderFn
from wattsched.scheduler.mapper import ClusterState, StateCache
from wattsched.scheduler.model import Assignment
from wattsched.scheduler.node_arrays import IntArray
from wattsched.scheduler.pass_kernels import next_candidate
from wattsched.scheduler.queueindex import QueueIndex


def start_now(
    state: ClusterState,
    cache: StateCache,
    queue: QueueIndex,
    t: int,
    free_max: IntArray,
    *,
    node_order: OrderFn,
) -> list[Assignment]:
    """Place, at ``t``, the queue's eligible jobs that fit, in the queue's key order (booked
    in ``state``); ``free_max`` is the most free on any usable node, per resource."""
    out: list[Assignment] = []
    f = state.free_total_l
    cand = queue.candidates(np.array(f, dtype=np.int64), free_max)
    if not cand.size:
        return out
    totals, shapes = queue.totals, queue.shapes
    failed = np.zeros(queue.shape_count, dtype=np.bool_)
    order: IntArray | None = None
    pos = 0
    while True:
        pos = next_candidate(cand, totals, shapes, failed, pos, f[0], f[1], f[2], f[3])
        if pos < 0:
            return out
        i = int(cand[pos])
        pos += 1
        job = queue.job(i)
        if job.held:
            continue
        jv = cache.vec(job)
        if order is None:
            order = node_order(state)
        placed = state.place(jv, order, t)
        if placed is None:
            if state.last_fail == "resources":
                failed[shapes[i]] = True
            continue
        idx, cnt = placed
        state.commit(jv, idx, cnt)
        order = None  # loads changed: the node order may too
        names = state.names_for(idx, cnt)
        cache.planned(job.id, names, idx, cnt)  # booked from here when it runs (no name lookup)
        out.append(Assignment(job.id, t, names))
