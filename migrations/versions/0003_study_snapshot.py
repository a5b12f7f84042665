"""study snapshot taken at closing

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-26 00:08:18.096331
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | Sequence[str] | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "study_snapshot",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("study_id", sa.Uuid(), nullable=False),
        sa.Column("reason", sa.String(length=50), nullable=False),
        sa.Column("created_by", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("archive", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(
            ["created_by"], ["app_user.id"], name=op.f("fk_study_snapshot_created_by_app_user")
        ),
        sa.ForeignKeyConstraint(["study_id"], ["study.id"], name=op.f("fk_study_snapshot_study_id_study")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_study_snapshot")),
    )
    with op.batch_alter_table("study_snapshot", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_study_snapshot_study_id"), ["study_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("study_snapshot", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_study_snapshot_study_id"))

    op.drop_table("study_snapshot")
