"""``GET /nodes`` and ``GET /nodes/{name}``."""

from __future__ import annotations

from fastapi import APIRouter, HTTPException, Request, Response, status
from pydantic import TypeAdapter
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from wattsched.connectors.base import ConnectorError
from wattsched.daemon.api.deps import Authorized, ServiceDep, SessionDep
from wattsched.daemon.api.schemas import (
    MUTATION_ERRORS,
    ErrorOut,
    NodeDetail,
    NodeOut,
    NodePowerIn,
    NodePowerOut,
    NodeStateOut,
    PowerCommandOut,
    short,
)
from wattsched.daemon.node_power import NodePowerRefused, UnknownNode, power_node
from wattsched.daemon.store_models import ActionRow, NodeRow, NodeStateRow

router = APIRouter(tags=["nodes"])


_NODES: TypeAdapter[list[NodeOut]] = TypeAdapter(list[NodeOut])


@router.get("/nodes", response_model=list[NodeOut])
def list_nodes(session: SessionDep, service: ServiceDep) -> Response:
    """Every node as last seen, by name (with ``[thermal]``: its outlet temperature)."""
    # Plain rows, validated and serialized once (thousands of nodes on a real cluster).
    rows = session.execute(select(*NodeRow.__table__.columns).order_by(NodeRow.name))
    nodes = _NODES.validate_python(rows.mappings().all())
    last = last_power_commands(session)
    temps = node_temperatures(service)
    for n in nodes:
        n.last_power_command = last.get(n.name)
        if n.name in temps:
            n.outlet_celsius, n.outlet_source = temps[n.name]
    return Response(_NODES.dump_json(nodes), media_type="application/json")


def node_temperatures(service: object) -> dict[str, tuple[float, str]]:
    """Node -> (outlet celsius, source) when the dispatcher is behind the thermal guard."""
    temps = getattr(getattr(service, "dispatcher", None), "temps", None)
    return temps.by_node() if temps is not None else {}


def last_power_commands(session: Session, node: str | None = None) -> dict[str, PowerCommandOut]:
    """The last power action of each node (or of ``node``), from the journal."""
    q = select(func.max(ActionRow.id)).where(ActionRow.kind.in_(("power_on", "power_off")))
    if node is not None:
        q = q.where(ActionRow.nodes == node)
    ids = session.scalars(q.group_by(ActionRow.nodes)).all()
    if not ids:
        return {}
    rows = session.scalars(select(ActionRow).where(ActionRow.id.in_(ids)))
    return {
        str(a.nodes): PowerCommandOut(
            action_id=a.id,
            command=a.kind,
            state=a.state,
            time=a.time,
            result=a.result,
            error=a.error,
        )
        for a in rows
    }


@router.get(
    "/nodes/{name}",
    response_model=NodeDetail,
    responses={404: {"model": ErrorOut, "description": "no such node"}},
)
def get_node(name: str, session: SessionDep) -> NodeDetail:
    """One node and its last 100 state changes (404 when unknown)."""
    row = session.get(NodeRow, name)
    if row is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no node {short(name)!r}")
    hist = session.scalars(
        select(NodeStateRow)
        .where(NodeStateRow.node == name)
        .order_by(NodeStateRow.id.desc())
        .limit(100)
    )
    out = NodeOut.model_validate(row)
    out.last_power_command = last_power_commands(session, name).get(name)
    return NodeDetail(
        **out.model_dump(),
        history=[NodeStateOut.model_validate(h) for h in hist],
    )


@router.post(
    "/nodes/{name}/power",
    response_model=NodePowerOut,
    dependencies=[Authorized],
    responses={
        **MUTATION_ERRORS,
        404: {"model": ErrorOut, "description": "no such node"},
        409: {"model": ErrorOut, "description": "a safety rule forbids it now (named)"},
        502: {"model": ErrorOut, "description": "the RMS refused or failed the command"},
    },
)
def post_node_power(
    name: str, body: NodePowerIn, service: ServiceDep, request: Request
) -> NodePowerOut:
    """Switch one node on or off now (token), under the power policy's safety rules:
    409 naming the rule that forbids it (runs or is planned to run a job, drained or
    reserved, in back-off after a failed command, not off). Journaled in ``/actions``."""
    path = request.app.state.tokens.path
    by = f"token {path.name}" if path is not None else "token"
    try:
        res = power_node(service, name, body.on, by)
    except UnknownNode as exc:
        raise HTTPException(status.HTTP_404_NOT_FOUND, short(str(exc))) from None
    except NodePowerRefused as exc:
        raise HTTPException(status.HTTP_409_CONFLICT, str(exc)) from None
    except ConnectorError as exc:
        raise HTTPException(status.HTTP_502_BAD_GATEWAY, f"{type(exc).__name__}: {exc}") from None
    return NodePowerOut(node=res.node, on=res.on, action_id=res.action_id)
