"""Fixtures of the daemon tests: a small simulated cluster, a migrated SQLite store."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from daemon_services import ServiceUnavailable, postgres_server
from sqlalchemy import Engine, create_engine, text

from wattsched.connectors.simulated import SimulatedCluster
from wattsched.daemon.loop import Service
from wattsched.daemon.store import Store
from wattsched.daemon.store_schema import make_engine, migrate
from wattsched.scheduler import dispatcher as dispatchers
from wattsched.scheduler.model import Job, Node, PowerCap, Resources

REPO = Path(__file__).resolve().parents[2]


def small_cluster(
    n_nodes: int = 4, n_jobs: int = 20, cls: type[SimulatedCluster] = SimulatedCluster
) -> SimulatedCluster:
    """4 nodes of 16 cores; 20 jobs of 8 cores arriving every 10 s, 300 s long."""
    nodes = [Node(f"n{i}", Resources(cores=16, mem_mb=32000)) for i in range(n_nodes)]
    jobs = [
        Job(
            str(100 + i),
            submit=i * 10,
            walltime=600,
            units=1,
            unit=Resources(cores=8, mem_mb=1000),
            runtime=300,
        )
        for i in range(n_jobs)
    ]
    return cls(nodes, jobs)


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A real PostgreSQL server for the session (skips with the reason when it cannot run)."""
    try:
        with postgres_server() as url:
            yield url
    except ServiceUnavailable as exc:
        pytest.skip(f"PostgreSQL unavailable: {exc}")


_db_counter = iter(range(1_000_000))


@pytest.fixture(scope="session")
def postgres_template(postgres_url: str) -> str:
    """A migrated template database; each test copies it (much faster than migrating)."""
    admin = create_engine(postgres_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text("CREATE DATABASE wattsched_template"))
    admin.dispose()
    engine = make_engine(postgres_url.rsplit("/", 1)[0] + "/wattsched_template")
    migrate(engine)
    engine.dispose()
    return "wattsched_template"


@pytest.fixture
def postgres_engine(postgres_url: str, postgres_template: str) -> Iterator[Engine]:
    """A fresh, migrated database on the session's PostgreSQL server."""
    name = f"wattsched_t{next(_db_counter)}"
    admin = create_engine(postgres_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f"CREATE DATABASE {name} TEMPLATE {postgres_template}"))
    engine = make_engine(postgres_url.rsplit("/", 1)[0] + "/" + name)
    yield engine
    engine.dispose()
    with admin.connect() as conn:
        conn.execute(text(f"DROP DATABASE {name} WITH (FORCE)"))
    admin.dispose()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def any_engine(request: pytest.FixtureRequest) -> Engine:
    """A migrated database: SQLite, then PostgreSQL."""
    name = "sqlite_engine" if request.param == "sqlite" else "postgres_engine"
    engine: Engine = request.getfixturevalue(name)
    return engine


@pytest.fixture
def sqlite_engine(tmp_path: Path) -> Iterator[Engine]:
    """A migrated SQLite database in a temp dir."""
    engine = make_engine(f"sqlite:///{tmp_path / 'var' / 'w.db'}")
    migrate(engine)
    yield engine
    engine.dispose()


def make_service(
    engine: Engine, cluster: SimulatedCluster, *, mode: str = "enforce", cap_w: float = 600.0
) -> Service:
    """A service on ``cluster`` with PRB (full plan) under a binding cap."""
    return Service(
        cluster,
        dispatchers.create("prb", full_plan=True),
        Store(engine),
        mode=mode,
        cap=PowerCap.constant(cap_w),
        cycle_seconds=1.0,
    )


@pytest.fixture
def cluster_factory() -> type[_Factories]:
    """``small_cluster`` and ``make_service`` for the tests (no cross-module imports)."""
    return _Factories


class _Factories:
    small_cluster = staticmethod(small_cluster)
    make_service = staticmethod(make_service)
