"""The API's dependencies: the service, one DB session per request, the bearer-token check.

The dependencies never block: they are ``async`` (no thread hop); the (synchronous) routes
run their queries in the thread pool.
"""

from __future__ import annotations

import hmac
from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import Depends, HTTPException, Request, status
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy.orm import Session

from wattsched.daemon.loop import Service

_bearer = HTTPBearer(auto_error=False, description="the token of api.token_file")


async def get_service(request: Request) -> Service:
    """The running service."""
    service: Service = request.app.state.service
    return service


async def get_session(request: Request) -> AsyncIterator[Session]:
    """One database session for the request, closed after it.

    Opening a session does no I/O (it connects lazily, in the route's thread); closing it
    returns the connection to the pool. Both run on the event loop: two thread hops less per
    request.
    """
    service: Service = request.app.state.service
    with service.store.sessions() as session:
        yield session


async def require_token(
    request: Request,
    creds: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> None:
    """Refuse a mutation without the bearer token: 401 when missing, 403 when wrong or when
    no token is configured (mutations disabled)."""
    token: str | None = request.app.state.tokens.current()
    if creds is None or creds.scheme.lower() != "bearer":
        raise HTTPException(
            status.HTTP_401_UNAUTHORIZED,
            "a bearer token is required",
            headers={"WWW-Authenticate": "Bearer"},
        )
    if token is None:
        raise HTTPException(status.HTTP_403_FORBIDDEN, "mutations are disabled: no api.token_file")
    if not hmac.compare_digest(creds.credentials.encode(), token.encode()):
        raise HTTPException(status.HTTP_403_FORBIDDEN, "invalid token")
    service: Service = request.app.state.service
    if service.role != "leader":
        raise HTTPException(
            status.HTTP_503_SERVICE_UNAVAILABLE,
            "standby: this daemon does not act; send commands to the leader",
        )


ServiceDep = Annotated[Service, Depends(get_service)]
SessionDep = Annotated[Session, Depends(get_session)]
Authorized = Depends(require_token)
