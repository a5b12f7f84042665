"""closing time, compressed snapshots, configuration version

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-26 09:05:00.000000
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | Sequence[str] | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_snapshot = sa.table(
    "study_snapshot",
    sa.column("id", sa.Integer()),
    sa.column("study_id", sa.Uuid()),
    sa.column("reason", sa.String()),
    sa.column("created_at", sa.DateTime(timezone=True)),
    sa.column("archive", sa.JSON()),
    sa.column("archive_gz", sa.LargeBinary()),
)
_control = sa.table(
    "study_control",
    sa.column("study_id", sa.Uuid()),
    sa.column("status", sa.String()),
    sa.column("closed_at", sa.DateTime(timezone=True)),
)


def upgrade() -> None:
    with op.batch_alter_table("study", schema=None) as batch_op:
        batch_op.add_column(sa.Column("config_version", sa.Integer(), server_default="0", nullable=False))
    with op.batch_alter_table("study_control", schema=None) as batch_op:
        batch_op.add_column(sa.Column("closed_at", sa.DateTime(timezone=True), nullable=True))
    with op.batch_alter_table("study_snapshot", schema=None) as batch_op:
        batch_op.add_column(sa.Column("archive_gz", sa.LargeBinary(), nullable=True))
    connection = op.get_bind()
    # One snapshot at a time: each is compressed on its own, never all of them in memory together.
    ids = [row.id for row in connection.execute(sa.select(_snapshot.c.id))]
    for snapshot_id in ids:
        archive = connection.execute(
            sa.select(_snapshot.c.archive).where(_snapshot.c.id == snapshot_id)
        ).scalar()
        packed = gzip.compress(json.dumps(archive, separators=(",", ":")).encode("utf-8"))
        connection.execute(
            sa.update(_snapshot).where(_snapshot.c.id == snapshot_id).values(archive_gz=packed)
        )
    closing = (
        sa.select(sa.func.min(_snapshot.c.created_at))
        .where(_snapshot.c.study_id == _control.c.study_id, _snapshot.c.reason == "closed")
        .scalar_subquery()
    )
    connection.execute(sa.update(_control).where(_control.c.status == "closed").values(closed_at=closing))
    with op.batch_alter_table("study_snapshot", schema=None) as batch_op:
        batch_op.alter_column("archive_gz", existing_type=sa.LargeBinary(), nullable=False)
        batch_op.drop_column("archive")


def downgrade() -> None:
    with op.batch_alter_table("study_snapshot", schema=None) as batch_op:
        batch_op.add_column(sa.Column("archive", sa.JSON(), nullable=True))
    connection = op.get_bind()
    ids = [row.id for row in connection.execute(sa.select(_snapshot.c.id))]
    for snapshot_id in ids:
        packed = connection.execute(
            sa.select(_snapshot.c.archive_gz).where(_snapshot.c.id == snapshot_id)
        ).scalar()
        archive = json.loads(gzip.decompress(packed))
        connection.execute(sa.update(_snapshot).where(_snapshot.c.id == snapshot_id).values(archive=archive))
    with op.batch_alter_table("study_snapshot", schema=None) as batch_op:
        batch_op.alter_column("archive", existing_type=sa.JSON(), nullable=False)
        batch_op.drop_column("archive_gz")
    with op.batch_alter_table("study_control", schema=None) as batch_op:
        batch_op.drop_column("closed_at")
    with op.batch_alter_table("study", schema=None) as batch_op:
        batch_op.drop_column("config_version")
