"""``GET /nodes`` and ``GET /nodes/{name}``."""

from __future__ import annotations

from fastapi import APIRouter, HTTPException, Response, status
from pydantic import TypeAdapter
from sqlalchemy import select

from wattsched.daemon.api.deps import SessionDep
from wattsched.daemon.api.schemas import ErrorOut, NodeDetail, NodeOut, NodeStateOut, short
from wattsched.daemon.store_models import NodeRow, NodeStateRow

router = APIRouter(tags=["nodes"])


_NODES: TypeAdapter[list[NodeOut]] = TypeAdapter(list[NodeOut])


@router.get("/nodes", response_model=list[NodeOut])
def list_nodes(session: SessionDep) -> Response:
    """Every node as last seen, by name."""
    # Plain rows, validated and serialized once (thousands of nodes on a real cluster).
    rows = session.execute(select(*NodeRow.__table__.columns).order_by(NodeRow.name))
    nodes = _NODES.validate_python(rows.mappings().all())
    return Response(_NODES.dump_json(nodes), media_type="application/json")


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
    return NodeDetail(
        **NodeOut.model_validate(row).model_dump(),
        history=[NodeStateOut.model_validate(h) for h in hist],
    )
