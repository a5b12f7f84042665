"""Enrolment: whether a study takes a new participant (or an invited person's consent) right now.

Called by the participant service when a session is created from the open link and when an invited
person consents. Sessions already under way are never interrupted: pausing or closing a study only stops
new people from starting.
"""

from __future__ import annotations

import uuid

from sqlalchemy import select
from sqlalchemy.orm import Session

from .. import repository as repo
from ..errors import ConflictError, NotFoundError
from ..i18n import N_
from ..models import ElicitationSession, Invitation, Study, StudyControl, StudyStatus, as_utc, utcnow

__all__ = ["check_enrolment", "find_study", "open_study", "status_of"]

#: What a person sees when the study does not take them now: (page title, message), by study status
#: (English; the error page shows them in the study's language).
_MESSAGES = {
    StudyStatus.DRAFT: (
        N_("This study has not started yet"),
        N_("The study team has not opened this study yet. Please try this link again later."),
    ),
    StudyStatus.PAUSED: (
        N_("This study is paused"),
        N_("This study is paused at the moment: nobody can start. Please try this link again later."),
    ),
    StudyStatus.CLOSED: (
        N_("This study has closed"),
        N_("This study has closed and takes no new participants. Thank you for your interest."),
    ),
}


def status_of(control: StudyControl | None) -> StudyStatus:
    """A study's enrolment status; studies made before the back office (no control row) are open."""
    return StudyStatus.OPEN if control is None else StudyStatus(control.status)


def find_study(db: Session, study_id: str | uuid.UUID) -> Study:
    """The study with this id (as text from a URL, or a UUID); `NotFoundError` when there is none."""
    try:
        key = study_id if isinstance(study_id, uuid.UUID) else uuid.UUID(str(study_id))
    except ValueError:
        raise NotFoundError() from None
    study = repo.get_study(db, key)
    if study is None:
        raise NotFoundError()
    return study


def open_study(db: Session, study_id: str | uuid.UUID) -> Study:
    """The study behind an open-enrolment link; `NotFoundError` for a bad id or an invitation-only study."""
    study = find_study(db, study_id)
    if not study.open_enrolment:
        raise NotFoundError()
    return study


def check_enrolment(db: Session, study: Study, session: ElicitationSession | None = None) -> None:
    """Raise `ConflictError` unless the study is open and the link (open or personal) has not expired."""
    control = db.get(StudyControl, study.id)
    status = status_of(control)
    if status is not StudyStatus.OPEN:
        title, message = _MESSAGES[status]
        raise ConflictError(message, code=f"study_{status.value}", title=title, resumable=False)
    if control is None:
        return
    now = utcnow()
    if session is None:
        if control.enrolment_expires_at is not None and as_utc(control.enrolment_expires_at) <= now:
            raise ConflictError(
                N_("This link has expired. Thank you for your interest."),
                code="link_expired",
                title=N_("This link has expired"),
                resumable=False,
            )
        return
    invitation = db.scalars(select(Invitation).where(Invitation.session_id == session.id)).first()
    if invitation is not None and invitation.expires_at is not None and as_utc(invitation.expires_at) <= now:
        raise ConflictError(
            N_("This invitation has expired. Thank you for your interest."),
            code="link_expired",
            title=N_("This invitation has expired"),
            resumable=False,
        )
