"""initial schema: studies, sessions, answer log, results

Revision ID: 0001
Revises:
Create Date: 2026-11-25 22:34:57.545501
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | Sequence[str] | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "study",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("config", sa.JSON(), nullable=False),
        sa.Column("algorithm", sa.String(length=50), nullable=False),
        sa.Column("expected_queries", sa.Integer(), nullable=False),
        sa.Column("open_enrolment", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_study")),
    )
    op.create_table(
        "elicitation_session",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("study_id", sa.Uuid(), nullable=False),
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("participant_code", sa.String(length=200), nullable=True),
        sa.Column("seed", sa.BigInteger(), nullable=False),
        sa.Column("algorithm", sa.String(length=50), nullable=False),
        sa.Column("algorithm_version", sa.String(length=50), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("completion_code", sa.String(length=32), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("consented_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["study_id"], ["study.id"], name=op.f("fk_elicitation_session_study_id_study")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_elicitation_session")),
        sa.UniqueConstraint("token_hash", name=op.f("uq_elicitation_session_token_hash")),
    )
    with op.batch_alter_table("elicitation_session", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_elicitation_session_study_id"), ["study_id"], unique=False)

    op.create_table(
        "answer",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("session_id", sa.Uuid(), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("action", sa.String(length=10), nullable=False),
        sa.Column("phase", sa.String(length=20), nullable=True),
        sa.Column("phase_index", sa.Integer(), nullable=True),
        sa.Column("query", sa.JSON(), nullable=True),
        sa.Column("shown", sa.JSON(), nullable=True),
        sa.Column("swapped", sa.Boolean(), nullable=True),
        sa.Column("preferred", sa.String(length=10), nullable=True),
        sa.Column("elicitor_answer", sa.Boolean(), nullable=True),
        sa.Column("tie_break", sa.Boolean(), nullable=True),
        sa.Column("check", sa.JSON(), nullable=True),
        sa.Column("time_on_page_ms", sa.Integer(), nullable=True),
        sa.Column("hidden_ms", sa.Integer(), nullable=True),
        sa.Column("server_elapsed_ms", sa.Integer(), nullable=True),
        sa.Column("undoes_seq", sa.Integer(), nullable=True),
        sa.Column("undone_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["session_id"], ["elicitation_session.id"], name=op.f("fk_answer_session_id_elicitation_session")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_answer")),
        sa.UniqueConstraint("session_id", "seq", name=op.f("uq_answer_session_id_seq")),
    )
    with op.batch_alter_table("answer", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_answer_session_id"), ["session_id"], unique=False)

    op.create_table(
        "result",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("session_id", sa.Uuid(), nullable=False),
        sa.Column("metric", sa.JSON(), nullable=False),
        sa.Column("num_queries", sa.Integer(), nullable=False),
        sa.Column("details", sa.JSON(), nullable=False),
        sa.Column("evaluation", sa.JSON(), nullable=False),
        sa.Column("checks", sa.JSON(), nullable=False),
        sa.Column("summary", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["session_id"], ["elicitation_session.id"], name=op.f("fk_result_session_id_elicitation_session")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_result")),
        sa.UniqueConstraint("session_id", name=op.f("uq_result_session_id")),
    )


def downgrade() -> None:
    op.drop_table("result")
    with op.batch_alter_table("answer", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_answer_session_id"))

    op.drop_table("answer")
    with op.batch_alter_table("elicitation_session", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_elicitation_session_study_id"))

    op.drop_table("elicitation_session")
    op.drop_table("study")
