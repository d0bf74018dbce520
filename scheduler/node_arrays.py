"""A snapshot's nodes and a job's needs as numpy arrays, built once and shared by the mapper's
working states (:mod:`wattsched.scheduler.mapper`): :class:`NodeArrays` (capacities, usable
nodes, power models, the static draw) and :class:`JobVec` (a job's requirement, its power,
its placement rule)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from wattsched.scheduler.model import Job, Node, Placement, PowerState
from wattsched.scheduler.slots import new as _new
from wattsched.scheduler.slots import slot_setters
from wattsched.scheduler.tuple_diff import changed_positions

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

EPS_W = 1e-6
"""Tolerance on power comparisons (float sums)."""


@dataclass(frozen=True, slots=True)
class JobVec:
    """A job's requirement as arrays, computed once per job."""

    req: IntArray
    """Per-unit requirement in RESOURCES order."""
    units: int
    walltime: int
    unit_power_w: float | None
    nz: IntArray
    """Indexes of the resources the unit needs (> 0)."""
    total: IntArray
    node_w: FloatArray | None = None
    """Power of one unit on each node (from the node models), when the job has no estimate."""
    shape: tuple[int, ...] = ()
    """Per-unit requirement and unit count (see :attr:`fit_kind` for what fails together)."""
    flat_w: float | None = None
    """Power of one unit when it is the same on every node (estimate, or uniform nodes)."""
    total_l: tuple[int, ...] = ()
    """``total`` as Python ints (cheap scalar checks)."""
    min_w: float = 0.0
    """The least power all units can add, on the cheapest nodes, first cores not counted."""
    placement: Placement = Placement.FREE
    """How the units may share nodes (the job's rule)."""
    exclusive: bool = False
    """The job takes its nodes whole."""

    @classmethod
    def of(
        cls,
        job: Job,
        arrays: NodeArrays | None = None,
        shapes: dict[tuple[object, ...], JobVec] | None = None,
    ) -> JobVec:
        """The job's arrays. ``shapes`` keeps one vector per (unit, units) built on ``arrays``
        (:meth:`of_shape`): a job of a shape seen before shares its (read-only) arrays, and
        only its own walltime, rule and power estimate are new (:meth:`for_job`)."""
        if shapes is None:
            return cls.of_shape(job.unit.as_tuple(), job.units, arrays).for_job(job)
        key = (job.unit, job.units)
        t = shapes.get(key)
        if t is None:
            t = shapes[key] = cls.of_shape(job.unit.as_tuple(), job.units, arrays)
        return t.for_job(job)

    @classmethod
    def of_shape(cls, unit: tuple[int, ...], units: int, arrays: NodeArrays | None) -> JobVec:
        """The vector of ``units`` units of ``unit`` with no power estimate (each unit's power
        from the node models of ``arrays``), walltime 0, free placement."""
        req = np.array(unit, dtype=np.int64)
        node_w = None
        flat_w = None
        if arrays is not None:
            node_w = arrays.res_w @ req.astype(float)
            if arrays.uniform_power and len(node_w):
                flat_w = float(node_w[0])
        nz_l = [r for r, a in enumerate(unit) if a]
        if flat_w is not None:
            min_w = flat_w * units
        elif node_w is not None and len(node_w):
            min_w = float(node_w.min()) * units
        else:
            min_w = 0.0
        total_l = tuple(a * units for a in unit)
        req.flags.writeable = False
        nz = np.array(nz_l, dtype=np.int64)
        nz.flags.writeable = False
        total = np.array(total_l, dtype=np.int64)
        total.flags.writeable = False
        if node_w is not None:
            node_w.flags.writeable = False
        return cls(
            req=req,
            units=units,
            walltime=0,
            unit_power_w=None,
            nz=nz,
            total=total,
            node_w=node_w,
            shape=(*unit, units),
            flat_w=flat_w,
            total_l=total_l,
            min_w=min_w,
        )

    @property
    def fit_kind(self) -> tuple[object, ...]:
        """Shape, placement rule and exclusivity: on the same free resources, jobs of one kind
        are placed or refused for lack of resources together (a rule or exclusivity changes
        the nodes a placement may use, so a job failing says nothing of another rule's)."""
        return (self.shape, self.placement, self.exclusive)

    def for_job(self, job: Job) -> JobVec:
        """This shape's vector (:meth:`of_shape`; its read-only arrays shared) with the job's
        own walltime and rule, and its power estimate when it has one (then one unit draws
        that on any node: no per-node power).

        Made by setting the slots directly rather than through the frozen dataclass's
        ``__init__`` (one ``object.__setattr__`` per field; :func:`dataclasses.replace` also
        inspects the fields at every call): once per job of a replay. The vector is the very
        one the constructor makes (``tests/scheduler/test_job_vec.py``); it has no checks."""
        v = _new(JobVec)
        w = job.unit_power_w
        _jv_req(v, self.req)
        _jv_units(v, self.units)
        _jv_walltime(v, job.walltime)
        _jv_unit_power(v, w)
        _jv_nz(v, self.nz)
        _jv_total(v, self.total)
        _jv_shape(v, self.shape)
        _jv_total_l(v, self.total_l)
        _jv_placement(v, job.placement)
        _jv_exclusive(v, job.exclusive)
        if w is None:
            _jv_node_w(v, self.node_w)
            _jv_flat_w(v, self.flat_w)
            _jv_min_w(v, self.min_w)
        else:
            _jv_node_w(v, None)
            _jv_flat_w(v, w)
            _jv_min_w(v, w * self.units)
        return v


(
    _jv_req,
    _jv_units,
    _jv_walltime,
    _jv_unit_power,
    _jv_nz,
    _jv_total,
    _jv_node_w,
    _jv_shape,
    _jv_flat_w,
    _jv_total_l,
    _jv_min_w,
    _jv_placement,
    _jv_exclusive,
) = slot_setters(JobVec)


class NodeArrays:
    """The static part of a node list, as arrays (rebuilt only when the node list changes)."""

    def __init__(self, nodes: Sequence[Node]) -> None:
        self.nodes = tuple(nodes)
        self.names = [n.name for n in nodes]
        self.names_arr = np.array(self.names, dtype=object)
        self.index = {n.name: i for i, n in enumerate(nodes)}
        if len(self.index) != len(self.names):
            raise ValueError("node names must be unique")
        self.capacity: IntArray = np.array(
            [n.capacity.as_tuple() for n in nodes], dtype=np.int64
        ).reshape(len(nodes), 4)
        self.usable: BoolArray = _usable(nodes)
        self.first_core_w: FloatArray = np.array([n.power.first_core_w for n in nodes], dtype=float)
        self.res_w: FloatArray = np.array(
            [(n.power.core_w, 0.0, n.power.gpu_w, n.power.mic_w) for n in nodes], dtype=float
        ).reshape(len(nodes), 4)
        self.static_w = _static_w(nodes)
        self.efficiency: FloatArray = np.array([n.efficiency for n in nodes], dtype=float)
        self.total_capacity: IntArray = self.capacity.sum(axis=0)
        self.has_first_core = bool(self.first_core_w.any())
        self.uniform_power = bool(len(nodes) == 0 or (self.res_w == self.res_w[0]).all())
        self.listed_order: IntArray = np.arange(len(nodes), dtype=np.int64)
        self.listed_order.flags.writeable = False

    def restated(self, nodes: tuple[Node, ...]) -> NodeArrays | None:
        """The arrays of ``nodes`` when they differ from these only in power state,
        availability or power-failure time (a node switched, drained or resumed): the static
        arrays are shared, the usable mask and the static draw updated for the changed nodes
        only. None when anything else differs (then build anew)."""
        old = self.nodes
        if len(nodes) != len(old):
            return None
        # The positions whose object differs (most nodes are the same), kept for the pair.
        changed = changed_positions(old, nodes)
        for i in changed:
            a, b = old[i], nodes[i]
            if (
                a.name != b.name
                or (a.capacity is not b.capacity and a.capacity != b.capacity)
                or (a.power is not b.power and a.power != b.power)
                or a.efficiency != b.efficiency
            ):
                return None
        other = NodeArrays.__new__(NodeArrays)
        for name in _SHARED:
            setattr(other, name, getattr(self, name))
        other.nodes = nodes
        usable = other.usable = self.usable.copy()
        static_w = self.static_w
        on = PowerState.ON
        for i in changed:
            b = nodes[i]
            usable[i] = b.available and b.state is on
            static_w += _node_static_w(b) - _node_static_w(old[i])
        other.static_w = static_w
        return other


_SHARED = (
    "names",
    "names_arr",
    "index",
    "capacity",
    "first_core_w",
    "res_w",
    "efficiency",
    "total_capacity",
    "has_first_core",
    "uniform_power",
    "listed_order",
)
"""What :meth:`NodeArrays.restated` shares: everything but the nodes, usable and static_w."""


def _usable(nodes: Sequence[Node]) -> BoolArray:
    return np.array([n.available and n.state is PowerState.ON for n in nodes], dtype=bool)


def _node_static_w(n: Node) -> float:
    """One node's term of :func:`_static_w` (the same float: ``sum`` of one term is it)."""
    if n.state is PowerState.BOOTING:
        return float(max(n.power.transition_w, n.power.idle_w))
    return float(n.power.state_watts(n.state))


def _static_w(nodes: Sequence[Node]) -> float:
    # A booting node will draw its idle power once up: hold room for the larger of the two,
    # so that a job started during a boot cannot push the draw over the cap at its end.
    return float(
        sum(
            max(n.power.transition_w, n.power.idle_w)
            if n.state is PowerState.BOOTING
            else n.power.state_watts(n.state)
            for n in nodes
        )
    )
