"""The database schema's migrations: the Alembic configuration, upgrading, and whether a database is at head.

Alembic is the only way the schema changes (`elicit db upgrade`); `/healthz` asks `schema_status` whether
the database a server talks to has every migration this installation ships.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Connection
from sqlalchemy.exc import OperationalError, ProgrammingError

from .resources import resource_dir
from .settings import Settings

__all__ = ["SchemaStatus", "alembic_config", "head_revision", "schema_status", "upgrade_database"]


def _migrations_config() -> Any:
    """Alembic configuration that knows where this installation's migrations are (no database yet)."""
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(resource_dir("migrations")))
    return config


def alembic_config(settings: Settings) -> Any:
    """Alembic configuration for the project's migrations, bound to ``settings``' database."""
    config = _migrations_config()
    config.attributes["settings"] = settings
    return config


def upgrade_database(settings: Settings, revision: str = "head") -> None:
    """Apply migrations up to ``revision``."""
    from alembic import command

    command.upgrade(alembic_config(settings), revision)


@cache
def head_revision() -> str:
    """The newest migration this installation ships (read once per process)."""
    from alembic.script import ScriptDirectory

    head = ScriptDirectory.from_config(_migrations_config()).get_current_head()
    if head is None:
        raise RuntimeError("the migrations folder has no revision")
    return head


@dataclass(frozen=True, slots=True)
class SchemaStatus:
    """The database's migration revision against the installation's head."""

    current: str | None
    head: str

    @property
    def at_head(self) -> bool:
        return self.current == self.head


def schema_status(connection: Connection) -> SchemaStatus:
    """Read the revision Alembic recorded in the database (None: never migrated)."""
    try:
        current = connection.execute(text("SELECT version_num FROM alembic_version")).scalar_one_or_none()
    except (OperationalError, ProgrammingError):  # no alembic_version table: never migrated
        connection.rollback()
        current = None
    return SchemaStatus(current=current, head=head_revision())
