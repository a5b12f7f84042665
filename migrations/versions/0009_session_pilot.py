"""pilot sessions: a coordinator's own trial runs, kept out of the analysis

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-27 21:50:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | Sequence[str] | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("elicitation_session", schema=None) as batch_op:
        batch_op.add_column(sa.Column("pilot", sa.Boolean(), server_default=sa.false(), nullable=False))


def downgrade() -> None:
    with op.batch_alter_table("elicitation_session", schema=None) as batch_op:
        batch_op.drop_column("pilot")
