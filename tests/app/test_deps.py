"""The request's DB session: one per request, closed after the response, rolled back unless committed."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends
from fastapi.testclient import TestClient
from sqlalchemy import select, update
from sqlalchemy.orm import Session

from app.deps import DbSessionDep, connection_slots
from app.models import Study


def _free(app: Any) -> tuple[int, int | None]:
    """(connections checked out of the pool, connection slots free)."""
    pool = app.state.engine.pool
    slots = connection_slots(app)
    checked_out = pool.checkedout() if hasattr(pool, "checkedout") else 0
    return checked_out, None if slots is None else slots.value


def _the_session(db: DbSessionDep) -> Session:
    """A second dependency on the request's session (module level: FastAPI resolves its annotations)."""
    return db


def test_a_failing_request_rolls_back_and_gives_its_connection_back(app: Any, study: Any) -> None:
    @app.post("/test/fail/{study_id}")
    def fail(study_id: str, db: DbSessionDep) -> None:
        db.execute(update(Study).where(Study.id == study.id).values(name="changed"))
        raise RuntimeError("the handler fails after writing")

    before = _free(app)
    with TestClient(app, raise_server_exceptions=False) as client:
        response = client.post(f"/test/fail/{study.id}")
    assert response.status_code == 500
    assert _free(app) == (0, before[1])
    with app.state.sessionmaker() as db:
        assert db.scalars(select(Study.name).where(Study.id == study.id)).one() == study.name


def test_a_request_shares_one_session_and_closes_it_after_the_response(app: Any, study: Any) -> None:
    seen: list[Session] = []

    @app.get("/test/read")
    def read(db: DbSessionDep, again: Annotated[Session, Depends(_the_session)]) -> dict[str, bool]:
        seen.extend([db, again])
        db.scalars(select(Study.id)).all()  # leaves a transaction open: closed in a thread afterwards
        return {"same": db is again}

    before = _free(app)
    with TestClient(app) as client:
        response = client.get("/test/read")
        assert response.status_code == 200, (response.status_code, response.text[-300:])
        assert response.json() == {"same": True}
        assert client.get("/test/read").status_code == 200
    assert len(seen) == 4 and seen[0] is not seen[2]
    assert not any(db.in_transaction() for db in seen)
    assert _free(app) == (0, before[1])
