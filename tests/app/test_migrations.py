"""Alembic is the only way the schema changes: upgrade, downgrade to base, upgrade again, no drift."""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from db_support import POSTGRES_URL
from sqlalchemy import create_engine, inspect, select, text, type_coerce

from app.cli.web import alembic_config
from app.db import Base, load_json, make_engine
from app.settings import Settings

TABLES = {"study", "elicitation_session", "answer", "result"}


@pytest.fixture(params=["sqlite"] + (["postgres"] if POSTGRES_URL else []))
def empty_settings(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Settings]:
    if request.param == "sqlite":
        yield Settings(database_url=f"sqlite:///{tmp_path / 'migrate.db'}")
        return
    schema = f"migrate_test_{uuid.uuid4().hex[:12]}"
    yield Settings(database_url=POSTGRES_URL or "", database_schema=schema)
    engine = create_engine(POSTGRES_URL or "")
    with engine.begin() as connection:
        connection.execute(text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
    engine.dispose()


def tables(settings: Settings) -> set[str]:
    engine = make_engine(settings)
    try:
        return set(inspect(engine).get_table_names()) - {"alembic_version"}
    finally:
        engine.dispose()


def drift(settings: Settings) -> list[object]:
    engine = make_engine(settings)
    try:
        with engine.connect() as connection:
            context = MigrationContext.configure(connection, opts={"compare_type": True})
            return list(compare_metadata(context, Base.metadata))
    finally:
        engine.dispose()


def test_upgrade_downgrade_upgrade_and_no_drift(empty_settings: Settings) -> None:
    config = alembic_config(empty_settings)
    command.upgrade(config, "head")
    assert tables(empty_settings) >= TABLES
    command.downgrade(config, "base")
    assert tables(empty_settings) & TABLES == set()
    command.upgrade(config, "head")
    assert tables(empty_settings) >= TABLES
    assert drift(empty_settings) == []


def test_sqlite_connections_are_durable(tmp_path: Path) -> None:
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'pragmas.db'}")
    engine = make_engine(settings)
    try:
        with engine.connect() as connection:
            assert connection.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
            assert connection.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
            assert connection.exec_driver_sql("PRAGMA synchronous").scalar() == 2  # FULL
    finally:
        engine.dispose()


def test_stored_json_reads_back_exactly_and_tolerates_nan(tmp_path: Path) -> None:
    engine = make_engine(Settings(database_url=f"sqlite:///{tmp_path / 'json.db'}"))
    values = [0.1 + 0.2, 1 / 3, 1e-300, 0.11800000000000001, float("nan")]
    try:
        with engine.begin() as connection:
            connection.execute(text("CREATE TABLE t (v JSON)"))
        table = Base.metadata.tables["answer"].c.query.type
        with engine.begin() as connection:
            connection.execute(text("INSERT INTO t VALUES (:v)"), {"v": json.dumps(values)})
            stored = connection.execute(
                select(type_coerce(text("v"), table)).select_from(text("t"))
            ).scalar_one()
    finally:
        engine.dispose()
    assert stored[:4] == values[:4]  # bit-identical floats
    assert math.isnan(stored[4])  # the standard serializer writes NaN; orjson alone would refuse it
    assert load_json(b'{"a": [1.5]}') == {"a": [1.5]}


def test_resuming_by_participant_code_becomes_opt_in_for_studies_nobody_answered(settings: Settings) -> None:
    from app_support import make_study
    from fastapi.testclient import TestClient

    from app.main import create_app
    from app.models import Study

    application = create_app(settings)
    answered = make_study(application, name="answered", resume_by_participant_code=True)
    make_study(application, name="fresh", resume_by_participant_code=True)
    make_study(application, name="off", resume_by_participant_code=False)
    with TestClient(application) as client:
        created = client.post(f"/api/v1/studies/{answered.id}/sessions", json={"consent": True})
        token = created.json()["token"]
        assert (
            client.post(
                f"/api/v1/sessions/{token}/answers", json={"seq": 0, "preferred": "first"}
            ).status_code
            == 200
        )
    application.state.engine.dispose()
    config = alembic_config(settings)
    command.downgrade(config, "0009")
    command.upgrade(config, "head")
    engine = make_engine(settings)
    try:
        with engine.connect() as connection:
            stored = dict(connection.execute(select(Study.name, Study.config)).all())
    finally:
        engine.dispose()
    # The study with answers keeps what its participants may rely on (its configuration is frozen);
    # the one nobody answered takes the new default; a study that chose "off" stays off.
    assert stored["answered"]["resume_by_participant_code"] is True
    assert stored["fresh"]["resume_by_participant_code"] is False
    assert stored["off"]["resume_by_participant_code"] is False
