"""the channel each answer came through

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-26 11:40:00.000000

Answers recorded before this revision keep a null channel: whether a person or a script gave them cannot
be told afterwards, so they are never counted as people's time (docs/admin.md, "Seconds per comparison").
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | Sequence[str] | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("answer", schema=None) as batch_op:
        batch_op.add_column(sa.Column("channel", sa.String(length=10), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("answer", schema=None) as batch_op:
        batch_op.drop_column("channel")
