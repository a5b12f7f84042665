"""resuming a session by participant code becomes opt-in

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-27 21:45:00.000000

Anyone who knew a participant code or panel ID could continue that person's session from another
browser, so `resume_by_participant_code` is now off unless a study turns it on. A study that no one has
answered yet takes the new default (its configuration can still be edited, so its coordinator may turn
the option back on knowingly). A study with answers keeps its setting: its configuration is frozen, and
participants part-way through may be counting on it.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | Sequence[str] | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_KEY = "resume_by_participant_code"
_study = sa.table("study", sa.column("id", sa.Uuid()), sa.column("config", sa.JSON()))
_session = sa.table("elicitation_session", sa.column("id", sa.Uuid()), sa.column("study_id", sa.Uuid()))
_answer = sa.table("answer", sa.column("session_id", sa.Uuid()))


def upgrade() -> None:
    connection = op.get_bind()
    answered = (
        sa.select(_session.c.study_id)
        .join(_answer, _answer.c.session_id == _session.c.id)
        .where(_session.c.study_id == _study.c.id)
        .exists()
    )
    rows = connection.execute(sa.select(_study.c.id, _study.c.config).where(~answered)).all()
    for study_id, config in rows:
        if isinstance(config, dict) and config.get(_KEY) is True:
            changed = {**config, _KEY: False}
            connection.execute(sa.update(_study).where(_study.c.id == study_id).values(config=changed))


def downgrade() -> None:
    # The studies switched off cannot be told from those whose coordinator chose "off": leave them.
    pass
