""":meth:`JobVec.of` with the shape cache (one vector per unit and unit count, the job's power
estimate, walltime and rule laid over it) against the vector built from the job alone by the
formula it replaced, field by field, whatever jobs came before."""

from __future__ import annotations

from dataclasses import fields

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from wattsched.scheduler.model import Job, Node, NodePowerModel, Placement, Resources
from wattsched.scheduler.node_arrays import JobVec, NodeArrays


def reference_vec(job: Job, arrays: NodeArrays | None) -> dict[str, object]:
    """The fields of a job's vector by the formula of before (every job built alone)."""
    unit = job.unit.as_tuple()
    units = job.units
    req = np.array(unit, dtype=np.int64)
    node_w = None
    flat_w = job.unit_power_w
    if job.unit_power_w is None and arrays is not None:
        node_w = arrays.res_w @ req.astype(float)
        if arrays.uniform_power and len(node_w):
            flat_w = float(node_w[0])
    if flat_w is not None:
        min_w = flat_w * units
    elif node_w is not None and len(node_w):
        min_w = float(node_w.min()) * units
    else:
        min_w = 0.0
    return {
        "req": req,
        "units": units,
        "walltime": job.walltime,
        "unit_power_w": job.unit_power_w,
        "nz": np.array([r for r, a in enumerate(unit) if a], dtype=np.int64),
        "total": np.array([a * units for a in unit], dtype=np.int64),
        "node_w": node_w,
        "shape": (*unit, units),
        "flat_w": flat_w,
        "total_l": tuple(a * units for a in unit),
        "min_w": min_w,
        "placement": job.placement,
        "exclusive": job.exclusive,
    }


def _same(a: object, b: object) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (
            isinstance(a, np.ndarray)
            and isinstance(b, np.ndarray)
            and a.dtype == b.dtype
            and np.array_equal(a, b)
        )
    # Floats compared bit for bit (the very same operations), types too (int vs float).
    return type(a) is type(b) and a == b


def _nodes(uniform: bool, n: int) -> tuple[Node, ...]:
    return tuple(
        Node(
            f"n{i}",
            Resources(cores=16, mem_mb=64, gpus=2, mics=1),
            NodePowerModel(
                core_w=3.0 if uniform else 2.0 + 0.7 * i, gpu_w=50.0, mic_w=11.1 * (i % 2)
            ),
        )
        for i in range(n)
    )


jobs_st = st.lists(
    st.builds(
        lambda k, wt, units, cores, mem, gpus, mics, w, rule, excl: Job(
            str(k),
            0,
            wt,
            units,
            Resources(cores=cores + 1, mem_mb=mem, gpus=gpus, mics=mics),
            unit_power_w=w,
            placement=rule,
            exclusive=excl,
        ),
        st.integers(0, 10**6),
        st.integers(1, 10**5),
        st.integers(1, 4),
        st.integers(0, 2),
        st.sampled_from((0, 4, 1000)),
        st.integers(0, 2),
        st.integers(0, 1),
        st.one_of(st.none(), st.sampled_from((0.0, 7.8, 11.11)), st.floats(0.0, 500.0)),
        st.sampled_from(tuple(Placement)),
        st.booleans(),
    ),
    min_size=1,
    max_size=25,
)


@settings(max_examples=200, deadline=None)
@given(jobs_st, st.sampled_from(("none", "uniform", "mixed", "empty")))
def test_cached_vectors_are_the_formula_s(jobs: list[Job], nodes: str) -> None:
    arrays = {
        "none": None,
        "uniform": NodeArrays(_nodes(True, 3)),
        "mixed": NodeArrays(_nodes(False, 3)),
        "empty": NodeArrays(()),
    }[nodes]
    shapes: dict[tuple[object, ...], JobVec] = {}
    for job in jobs:
        for jv in (JobVec.of(job, arrays, shapes), JobVec.of(job, arrays)):
            want = reference_vec(job, arrays)
            for name, value in want.items():
                assert _same(getattr(jv, name), value), (name, getattr(jv, name), value)
            for arr in (jv.req, jv.nz, jv.total, jv.node_w):
                assert arr is None or not arr.flags.writeable


@settings(max_examples=200, deadline=None)
@given(jobs_st, st.sampled_from(("none", "uniform", "mixed")))
def test_for_job_sets_the_constructors_fields(jobs: list[Job], nodes: str) -> None:
    # for_job sets the slots directly: every field the very object the constructor set
    # (the shape's shared arrays, the job's own values), and no checks passed over
    assert not hasattr(JobVec, "__post_init__")
    arrays = None if nodes == "none" else NodeArrays(_nodes(nodes == "uniform", 3))
    for job in jobs:
        base = JobVec.of_shape(job.unit.as_tuple(), job.units, arrays)
        w = job.unit_power_w
        slow = JobVec(
            base.req,
            base.units,
            job.walltime,
            w,
            base.nz,
            base.total,
            base.node_w if w is None else None,
            base.shape,
            base.flat_w if w is None else w,
            base.total_l,
            base.min_w if w is None else w * base.units,
            job.placement,
            job.exclusive,
        )
        fast = base.for_job(job)
        assert type(fast) is JobVec
        for f in fields(JobVec):
            a, b = getattr(fast, f.name), getattr(slow, f.name)
            if isinstance(a, float):  # the same operation: equal bit for bit
                assert type(b) is float and a.hex() == b.hex(), f.name
            else:
                assert a is b, f.name
