"""Reservations the rollout judges (the online hybrid's ``hold_margin``; issue 16).

The reservation of :mod:`wattsched.scheduler.reservation` goes to a wide job that has waited
twice its queue's expected wait *and* passes the value test: its weight over its predicted
area is in the top quarter of the last arrivals'. The test keeps a long wide job from
stalling the machine for jobs worth more, but it also turns down jobs a reservation would
pay for: on ``hist_400_20140401_141724`` two 32-node ``reservation`` jobs (the whole
machine) waited behind a flow of small jobs under PRB and under the hybrid (0.999 of PRB),
while a clairvoyant hybrid that started them earlier reached 1.117.

Here a wide waited job that fails the value test is judged by a rollout instead
(:func:`.rollout.reservation_pays`): the job first, holding the machine until it starts
(the compiled decode's ``hold``: others start meanwhile only if they end, by the walltimes
the RMS knows, before the running jobs' last known end), then PRB's rule; against PRB's
rule from now; both under the rollout's runtime scenarios with the jobs to arrive within
``foresight``. The reservation is held when it beats PRB by ``margin`` in the mean. A job
that paid once keeps its reservation until it starts (a reservation dropped and taken again
wastes the idle room kept for it); one judged not to pay is judged again ``RETRY_S`` later;
one job is judged per cycle (a rollout costs a few decodes per scenario).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from wattsched.scheduler.hybrid.rollout import reservation_pays
from wattsched.scheduler.model import Job, Snapshot
from wattsched.scheduler.runtime_predictor import RuntimePredictor

log = logging.getLogger(__name__)

RETRY_S = 1800
"""Seconds before a job judged not to pay is judged again."""
DEFAULT_MARGIN = 0.02
"""The share by which a judged reservation must beat PRB's rule (the hybrid's default)."""


@dataclass
class JudgedHolds:
    """The judged reservations of one dispatcher (see the module doc): ``margin``, the
    rollout's ``count`` scenarios and its ``horizon`` (seconds of arrivals drawn)."""

    margin: float = DEFAULT_MARGIN
    count: int = 8
    horizon: int = 0
    retry_s: int = RETRY_S
    paid: set[str] = field(default_factory=set)
    """Jobs whose reservation paid: held until they start."""
    turned_down: dict[str, int] = field(default_factory=dict)
    """Job id -> when it was last judged not to pay."""
    judgements: int = 0
    """Rollouts run so far (the stats' count)."""

    def pays_for(
        self,
        snap: Snapshot,
        predictor: RuntimePredictor,
        seed: int,
        window: Sequence[Job] = (),
    ) -> Callable[[Job], bool]:
        """The test for this cycle (``pays`` of :func:`~wattsched.scheduler.reservation.starving`):
        at most one rollout; ``window``: the last arrivals, those to come are drawn from."""
        queued = {j.id for j in snap.queued}
        self.paid &= queued  # started or gone: forgotten
        self.turned_down = {k: t for k, t in self.turned_down.items() if k in queued}
        judged = False

        def pays(job: Job) -> bool:
            nonlocal judged
            if job.id in self.paid:
                return True
            last = self.turned_down.get(job.id)
            if judged or (last is not None and snap.time - last < self.retry_s):
                return False
            judged = True
            self.judgements += 1
            ok, gain = reservation_pays(snap, job, predictor, self.count, seed, window,
                                        self.horizon, self.margin)  # fmt: skip
            log.info("hybrid: a reservation for %s at %d %s (PRB / held %.4f)", job.id,
                     snap.time, "pays" if ok else "does not pay", gain)  # fmt: skip
            if ok:
                self.paid.add(job.id)
            else:
                self.turned_down[job.id] = snap.time
            return ok

        return pays
