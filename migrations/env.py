"""Alembic environment: database URL from the app settings (or the caller), batch mode for SQLite."""

from __future__ import annotations

from logging.config import fileConfig
from pathlib import Path

from alembic import context
from sqlalchemy import text
from sqlalchemy.engine import Connection

from app import models  # noqa: F401  (registers every table on Base.metadata)
from app.admin import models as admin_models  # noqa: F401  (back-office tables)
from app.db import Base, make_engine
from app.settings import Settings

config = context.config
if config.config_file_name is not None and Path(config.config_file_name).is_file():
    fileConfig(config.config_file_name)

target_metadata = Base.metadata


def _settings() -> Settings:
    """Settings from the environment, overridden by what a caller put in ``config.attributes``."""
    settings: Settings | None = config.attributes.get("settings")
    return settings if settings is not None else Settings()


def _configure(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=True,  # SQLite cannot ALTER most things; batch mode copies the table instead
        compare_type=True,
    )


def run_migrations_offline() -> None:
    context.configure(
        url=_settings().database_url,
        target_metadata=target_metadata,
        literal_binds=True,
        dialect_opts={"paramstyle": "named"},
        render_as_batch=True,
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    settings = _settings()
    engine = make_engine(settings)
    try:
        with engine.connect() as connection:
            if settings.database_schema and connection.dialect.name == "postgresql":
                connection.execute(text(f'CREATE SCHEMA IF NOT EXISTS "{settings.database_schema}"'))
                connection.commit()
            _configure(connection)
            with context.begin_transaction():
                context.run_migrations()
    finally:
        engine.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
