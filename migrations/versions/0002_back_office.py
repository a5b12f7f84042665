"""back office: accounts, tokens, study control, invitations, exclusions

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-25 23:17:25.859910
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | Sequence[str] | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:

    op.create_table(
        "app_user",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("email", sa.String(length=254), nullable=False),
        sa.Column("password_hash", sa.String(length=255), nullable=False),
        sa.Column("role", sa.String(length=20), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("session_epoch", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_app_user")),
        sa.UniqueConstraint("email", name=op.f("uq_app_user_email")),
    )
    op.create_table(
        "login_attempt",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("email", sa.String(length=254), nullable=False),
        sa.Column("client", sa.String(length=100), nullable=False),
        sa.Column("succeeded", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_login_attempt")),
    )
    with op.batch_alter_table("login_attempt", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_login_attempt_created_at"), ["created_at"], unique=False)
        batch_op.create_index(batch_op.f("ix_login_attempt_email"), ["email"], unique=False)

    op.create_table(
        "api_token",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_used_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["user_id"], ["app_user.id"], name=op.f("fk_api_token_user_id_app_user")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_api_token")),
        sa.UniqueConstraint("token_hash", name=op.f("uq_api_token_token_hash")),
    )
    with op.batch_alter_table("api_token", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_api_token_user_id"), ["user_id"], unique=False)

    op.create_table(
        "study_control",
        sa.Column("study_id", sa.Uuid(), nullable=False),
        sa.Column("owner_id", sa.Integer(), nullable=True),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("seconds_per_query", sa.Float(), nullable=True),
        sa.Column("enrolment_expires_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["owner_id"], ["app_user.id"], name=op.f("fk_study_control_owner_id_app_user")
        ),
        sa.ForeignKeyConstraint(["study_id"], ["study.id"], name=op.f("fk_study_control_study_id_study")),
        sa.PrimaryKeyConstraint("study_id", name=op.f("pk_study_control")),
    )
    with op.batch_alter_table("study_control", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_study_control_owner_id"), ["owner_id"], unique=False)

    op.create_table(
        "exclusion",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("session_id", sa.Uuid(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("created_by", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("lifted_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("lifted_by", sa.Integer(), nullable=True),
        sa.ForeignKeyConstraint(
            ["created_by"], ["app_user.id"], name=op.f("fk_exclusion_created_by_app_user")
        ),
        sa.ForeignKeyConstraint(["lifted_by"], ["app_user.id"], name=op.f("fk_exclusion_lifted_by_app_user")),
        sa.ForeignKeyConstraint(
            ["session_id"],
            ["elicitation_session.id"],
            name=op.f("fk_exclusion_session_id_elicitation_session"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_exclusion")),
    )
    with op.batch_alter_table("exclusion", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_exclusion_session_id"), ["session_id"], unique=False)

    op.create_table(
        "invitation",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("study_id", sa.Uuid(), nullable=False),
        sa.Column("session_id", sa.Uuid(), nullable=False),
        sa.Column("label", sa.String(length=200), nullable=True),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_by", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["created_by"], ["app_user.id"], name=op.f("fk_invitation_created_by_app_user")
        ),
        sa.ForeignKeyConstraint(
            ["session_id"],
            ["elicitation_session.id"],
            name=op.f("fk_invitation_session_id_elicitation_session"),
        ),
        sa.ForeignKeyConstraint(["study_id"], ["study.id"], name=op.f("fk_invitation_study_id_study")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_invitation")),
        sa.UniqueConstraint("session_id", name=op.f("uq_invitation_session_id")),
    )
    with op.batch_alter_table("invitation", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_invitation_study_id"), ["study_id"], unique=False)


def downgrade() -> None:

    with op.batch_alter_table("invitation", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_invitation_study_id"))

    op.drop_table("invitation")
    with op.batch_alter_table("exclusion", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_exclusion_session_id"))

    op.drop_table("exclusion")
    with op.batch_alter_table("study_control", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_study_control_owner_id"))

    op.drop_table("study_control")
    with op.batch_alter_table("api_token", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_api_token_user_id"))

    op.drop_table("api_token")
    with op.batch_alter_table("login_attempt", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_login_attempt_email"))
        batch_op.drop_index(batch_op.f("ix_login_attempt_created_at"))

    op.drop_table("login_attempt")
    op.drop_table("app_user")
