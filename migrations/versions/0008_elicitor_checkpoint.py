"""elicitor checkpoints beside the answer log

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-26 11:30:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | Sequence[str] | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "elicitor_checkpoint",
        sa.Column("session_id", sa.Uuid(), nullable=False),
        sa.Column("n_answers", sa.Integer(), nullable=False),
        sa.Column("last_seq", sa.Integer(), nullable=False),
        sa.Column("log_digest", sa.String(length=64), nullable=False),
        sa.Column("state", sa.LargeBinary(), nullable=False),
        sa.Column("saved_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["session_id"],
            ["elicitation_session.id"],
            name=op.f("fk_elicitor_checkpoint_session_id_elicitation_session"),
        ),
        sa.PrimaryKeyConstraint("session_id", name=op.f("pk_elicitor_checkpoint")),
    )


def downgrade() -> None:
    op.drop_table("elicitor_checkpoint")
