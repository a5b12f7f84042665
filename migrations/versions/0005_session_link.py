"""more than one personal link per session

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-26 08:50:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | Sequence[str] | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "session_link",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("session_id", sa.Uuid(), nullable=False),
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["session_id"],
            ["elicitation_session.id"],
            name=op.f("fk_session_link_session_id_elicitation_session"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_session_link")),
        sa.UniqueConstraint("token_hash", name=op.f("uq_session_link_token_hash")),
    )
    with op.batch_alter_table("session_link", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_session_link_session_id"), ["session_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("session_link", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_session_link_session_id"))

    op.drop_table("session_link")
