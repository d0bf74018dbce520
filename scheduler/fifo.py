"""Strict first-come first-served: jobs start in submit order; the first that does not fit
(resources or power) blocks all later ones."""

from __future__ import annotations

from wattsched.scheduler.dispatcher import Dispatcher, register, submit_order
from wattsched.scheduler.model import Assignment, Plan, Snapshot


class FIFODispatcher(Dispatcher):
    """First come, first served, first fit on nodes in their listed order."""

    name = "fifo"
    skips_exact = True

    def plan(self, snap: Snapshot) -> Plan:
        state = self.cache.state(snap)
        order = state.order_index()
        out: list[Assignment] = []
        for job in submit_order(snap.queued):
            jv = self.cache.vec(job)
            placed = state.place(jv, order, snap.time)
            if placed is None:
                break
            idx, cnt = placed
            state.commit(jv, idx, cnt)
            out.append(Assignment(job.id, snap.time, state.names_for(idx, cnt)))
        return Plan(snap.time, tuple(out))


register("fifo", FIFODispatcher)
