"""The compiled first-fit and booking kernels give what the numpy formulas they replaced give.

The reference below is the mapper's placement before the kernels (units that fit per node,
the placement rules, a cumulative sum cut at the job's units), kept here as the oracle.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from wattsched.scheduler.fit_kernels import (
    RULE_FREE,
    RULE_PACK,
    RULE_SCATTER,
    book,
    first_fit,
    fit_into,
)


def reference_fit(
    free: np.ndarray,
    req: np.ndarray,
    usable: np.ndarray,
    order: np.ndarray,
    units: int,
    limit_k: np.ndarray | None,
    held_whole: np.ndarray,
    busy_units: np.ndarray,
    exclusive: bool,
    rule: int,
) -> tuple[list[int], list[int]]:
    nz = np.flatnonzero(req)
    k = (free[:, nz] // req[nz]).min(axis=1)
    k = np.where(usable, k, 0)
    if limit_k is not None:
        k = np.minimum(k, limit_k)
    k = np.where(held_whole > 0, 0, k)
    if exclusive:
        k = np.where(busy_units > 0, 0, k)
    if rule == RULE_SCATTER:
        k = np.minimum(k, 1)
    elif rule == RULE_PACK:
        k = np.where(k >= units, units, 0)
    ko = k[order]
    cum = np.cumsum(ko)
    if cum.size == 0 or cum[-1] < units:
        return [], []
    last = int(np.searchsorted(cum, units))
    take = order[: last + 1]
    counts = ko[: last + 1].copy()
    counts[-1] -= int(cum[last]) - units
    sel = counts > 0
    return take[sel].tolist(), counts[sel].tolist()


@st.composite
def cases(draw: st.DrawFn) -> dict[str, object]:
    n = draw(st.integers(1, 12))
    r = 4
    free = np.array([[draw(st.integers(0, 9)) for _ in range(r)] for _ in range(n)], dtype=np.int64)
    req = np.array([draw(st.integers(0, 3)) for _ in range(r)], dtype=np.int64)
    if not req.any():
        req[0] = 1
    order = np.array(draw(st.permutations(range(n))), dtype=np.int64)
    use_limit = draw(st.booleans())
    limit = np.array([draw(st.integers(0, 5)) for _ in range(n)], dtype=np.int64)
    return {
        "free": free,
        "req": req,
        "usable": np.array([draw(st.booleans()) for _ in range(n)]),
        "order": order,
        "units": draw(st.integers(1, 12)),
        "limit_k": limit if use_limit else None,
        "held_whole": np.array([draw(st.sampled_from([0, 0, 1])) for _ in range(n)], np.int64),
        "busy_units": np.array([draw(st.sampled_from([0, 0, 2])) for _ in range(n)], np.int64),
        "exclusive": draw(st.booleans()),
        "rule": draw(st.sampled_from([RULE_FREE, RULE_SCATTER, RULE_PACK])),
    }


def _books(c: dict[str, object]) -> tuple[np.ndarray, np.ndarray]:
    free, req = c["free"], c["req"]
    assert isinstance(free, np.ndarray) and isinstance(req, np.ndarray)
    return free, req


@settings(max_examples=400, deadline=None)
@given(cases())
def test_first_fit_is_the_numpy_formula(c: dict[str, object]) -> None:
    free, req = _books(c)
    limit = c["limit_k"]
    held = c["held_whole"]
    assert isinstance(held, np.ndarray)
    take, counts = first_fit(
        free,
        req,
        np.flatnonzero(req).astype(np.int64),
        c["usable"],
        c["order"],
        c["units"],
        np.zeros(0, np.int64) if limit is None else limit,
        limit is not None,
        held,
        c["busy_units"],
        bool((held > 0).any()),
        c["exclusive"],
        c["rule"],
    )
    want = reference_fit(**c)  # type: ignore[arg-type]
    assert (take.tolist(), counts.tolist()) == want


@settings(max_examples=400, deadline=None)
@given(cases(), st.integers(0, 3))
def test_fit_into_writes_the_numpy_formula_s_placement(c: dict[str, object], extra: int) -> None:
    # Into scratch arrays (dirty, possibly longer than the order): the count, and the placement
    # in their first entries; 0 when the units do not all fit.
    free, req = _books(c)
    limit = c["limit_k"]
    held = c["held_whole"]
    order = c["order"]
    assert isinstance(held, np.ndarray) and isinstance(order, np.ndarray)
    take = np.full(len(order) + extra, -7, np.int64)
    counts = np.full(len(order) + extra, -7, np.int64)
    m = fit_into(
        free,
        req,
        np.flatnonzero(req).astype(np.int64),
        c["usable"],
        order,
        c["units"],
        np.zeros(0, np.int64) if limit is None else limit,
        limit is not None,
        held,
        c["busy_units"],
        bool((held > 0).any()),
        c["exclusive"],
        c["rule"],
        take,
        counts,
    )
    want = reference_fit(**c)  # type: ignore[arg-type]
    assert (take[:m].tolist(), counts[:m].tolist()) == want


@settings(max_examples=200, deadline=None)
@given(cases())
def test_book_then_give_back_restores_the_node_books(c: dict[str, object]) -> None:
    free, req = _books(c)
    n = free.shape[0]
    idx = np.array(sorted(set(range(0, n, 2))), dtype=np.int64)
    counts = np.arange(1, idx.size + 1, dtype=np.int64)
    busy = np.zeros(n, np.int64)
    nz = np.flatnonzero(req).astype(np.int64)
    before = free.copy()
    book(free, busy, idx, counts, req, nz, -1)
    want = before.copy()
    want[idx] -= counts[:, None] * req
    assert (free == want).all()
    assert busy[idx].tolist() == counts.tolist()
    book(free, busy, idx, counts, req, nz, +1)
    assert (free == before).all() and not busy.any()


WARM_THEN_REPLAY = """
from wattsched.connectors.simulated import SimulatedCluster
from wattsched.daemon.replay import replay
from wattsched.scheduler import dispatcher as registry
from wattsched.scheduler import fit_kernels as fk
from wattsched.scheduler import pass_kernels as pk
from wattsched.scheduler.model import Job, Node, NodePowerModel, PowerCap, Resources

fk.warm()
kernels = (fk.first_fit, fk.fit_into, fk.book, fk.room_both, fk.units_in, fk.col_sums,
           pk.next_candidate, pk.fitting_ranked, pk.usable_max)
loaded = {k: list(k.signatures) for k in kernels}
nodes = [Node(f"n{i}", Resources(cores=4, mem_mb=8000), NodePowerModel(idle_w=20, core_w=5))
         for i in range(3)]
jobs = [Job(str(j), 10 * j, 600, 1 + j % 2, Resources(cores=1 + j % 4), runtime=300)
        for j in range(20)]
for name in ("easy", "prb"):
    replay(SimulatedCluster(nodes, jobs, PowerCap.unlimited()), registry.create(name))
print(all(list(k.signatures) == s for k, s in loaded.items()))
"""


def test_warm_loads_the_very_kernels_a_replay_uses() -> None:
    # After warm(), placing and booking real jobs compiles no other signature: warm() passed
    # the argument types the mapper passes, so the first cycle pays no numba set-up.
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-c", WARM_THEN_REPLAY], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "True", out.stderr
