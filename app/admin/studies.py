"""Back-office use cases on studies: access, create, edit, status, duplicate, invitations, exclusions.

Each function owns its transaction. Access is decided in one place (`visible_study`): admins see every
study, coordinators only those they own; anything else is "not found" (404), never "forbidden", so that
a coordinator cannot even learn that another coordinator's study exists.
"""

from __future__ import annotations

import csv
import io
import re
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TextIO

from fastapi import Request
from sqlalchemy import exists, func, select, update
from sqlalchemy.orm import Session
from sqlalchemy.orm.attributes import set_committed_value

from elicitation import ElicitationError

from .. import sessions
from ..algorithms import get_algorithm
from ..errors import ConflictError, NotFoundError
from ..models import (
    Answer,
    ElicitationSession,
    Invitation,
    LogAction,
    SessionStatus,
    Study,
    StudyControl,
    StudyStatus,
    utcnow,
)
from ..planning import PLAUSIBLE_SECONDS
from ..sessions import SessionCache, status_of
from ..sessions.displayed import session_version
from ..study_config import StudyConfig, StudyConfigError, build_space, parse_study_config
from .auth import AdminError, Principal, cookie_principal
from .models import Exclusion, StudySnapshot, User
from .snapshots import keep_closing_snapshot

__all__ = [
    "INVITATION_COLUMNS",
    "MAX_CSV_BYTES",
    "MAX_INVITATIONS",
    "StudyEntry",
    "answered_count",
    "control_of",
    "coordinator_of",
    "create_invitations",
    "create_study_for",
    "csv_dataset_space",
    "duplicate_study",
    "edit_study",
    "exclude_session",
    "give_study",
    "lift_exclusion",
    "list_visible_studies",
    "pilot_count",
    "set_status",
    "start_pilot",
    "status_of",
    "visible_session",
    "visible_study",
    "write_invitations_csv",
]

#: Personal links created in one request (a CSV of this many rows is still small).
MAX_INVITATIONS = 5000
#: Page title of a back-office action the study's state refuses (the message says why).
REFUSED_TITLE = "This cannot be done now"
#: Largest uploaded dataset CSV (bytes).
MAX_CSV_BYTES = 10_000_000
_DATASET_NAME = re.compile(r"[^A-Za-z0-9_-]+")
#: Allowed status changes; closing is final (data is never dropped, so there is nothing to undo).
TRANSITIONS: dict[StudyStatus, set[StudyStatus]] = {
    StudyStatus.DRAFT: {StudyStatus.OPEN, StudyStatus.CLOSED},
    StudyStatus.OPEN: {StudyStatus.PAUSED, StudyStatus.CLOSED},
    StudyStatus.PAUSED: {StudyStatus.OPEN, StudyStatus.CLOSED},
    StudyStatus.CLOSED: set(),
}


def csv_dataset_space(
    raw: bytes, label_column: str, group_column: str | None = None, *, name: str = "", seed: int = 0
) -> dict[str, Any]:
    """The full query-space description (``DatasetSpace.to_dict``) of an uploaded CSV dataset.

    The CSV is parsed in memory (`elicitation.lab.datasets.load_csv`), ``eta_hat`` is fitted on a seeded
    train split and the feasible space built on the rest (`elicitation.lab.feasible.fit_feasible_model`); the
    returned description holds every plug-in classifier, so the study rebuilds its space without the file.
    ``name`` (e.g. the upload's file name) is only a label: it is reduced to letters, digits, ``-`` and ``_``
    and never used as a path. Every problem is an `AdminError` (422) whose message starts with the field.
    """
    from elicitation.lab.datasets import load_csv
    from elicitation.lab.feasible import fit_feasible_model

    label = label_column.strip()
    group = (group_column or "").strip() or None
    if not label:
        raise AdminError(
            "label column: give the name of the CSV column that holds the true class", status_code=422
        )
    if len(raw) > MAX_CSV_BYTES:
        raise AdminError(
            f"CSV file: {len(raw):,} bytes is larger than the limit of {MAX_CSV_BYTES // 1_000_000} MB",
            status_code=422,
        )
    if not raw.strip():
        raise AdminError("CSV file: the file is empty", status_code=422)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise AdminError(
            f"CSV file: not UTF-8 text (byte 0x{raw[exc.start]:02x} at position {exc.start}); "
            "save or export it as UTF-8 CSV",
            status_code=422,
        ) from None
    stem = name.rsplit("/", 1)[-1].rsplit("\\", 1)[-1].removesuffix(".csv")
    label_name = _DATASET_NAME.sub("-", stem).strip("-")[:60] or "uploaded-csv"
    try:
        dataset = load_csv(io.StringIO(text), label, group_column=group, name=label_name)
        space = fit_feasible_model(dataset, seed=seed).space
    except ElicitationError as exc:
        raise AdminError(f"CSV file: {exc}", status_code=422) from None
    description: dict[str, Any] = space.to_dict()
    return description


@dataclass
class StudyEntry:
    """A study as the back office lists it."""

    study: Study
    control: StudyControl | None
    status: StudyStatus
    counts: dict[str, int]
    owner_email: str | None = None


def _may_see(principal: Principal, control: StudyControl | None) -> bool:
    if principal.is_admin:
        return True
    return control is not None and control.owner_id == principal.user.id


def control_of(db: Session, study: Study) -> StudyControl | None:
    """The study's back-office control row as stored now (None for studies made before the back office)."""
    return db.get(StudyControl, study.id)


def visible_study(
    db: Session, principal: Principal, study_id: str | uuid.UUID
) -> tuple[Study, StudyControl | None]:
    """The study if ``principal`` may see it, else `NotFoundError` (also for malformed ids)."""
    try:
        key = study_id if isinstance(study_id, uuid.UUID) else uuid.UUID(str(study_id))
    except ValueError:
        raise NotFoundError("There is no study at this address.") from None
    study = db.get(Study, key)
    control = db.get(StudyControl, key) if study is not None else None
    if study is None or not _may_see(principal, control):
        raise NotFoundError("There is no study at this address.")
    return study, control


def visible_session(
    db: Session, principal: Principal, study_id: str | uuid.UUID, session_id: str | uuid.UUID
) -> tuple[Study, StudyControl | None, ElicitationSession]:
    study, control = visible_study(db, principal, study_id)
    try:
        key = session_id if isinstance(session_id, uuid.UUID) else uuid.UUID(str(session_id))
    except ValueError:
        raise NotFoundError("There is no session at this address.") from None
    session = db.get(ElicitationSession, key)
    if session is None or session.study_id != study.id:
        raise NotFoundError("There is no session at this address.")
    return study, control, session


def _counts(db: Session) -> dict[tuple[uuid.UUID, str], int]:
    rows = db.execute(
        select(ElicitationSession.study_id, ElicitationSession.status, func.count()).group_by(
            ElicitationSession.study_id, ElicitationSession.status
        )
    ).all()
    return {(study_id, status): count for study_id, status, count in rows}


def list_visible_studies(db: Session, principal: Principal) -> list[StudyEntry]:
    controls = {control.study_id: control for control in db.scalars(select(StudyControl))}
    emails = dict(db.execute(select(User.id, User.email)).all())
    counts = _counts(db)
    entries = []
    for study in db.scalars(select(Study).order_by(Study.created_at.desc())):
        control = controls.get(study.id)
        if not _may_see(principal, control):
            continue
        entries.append(
            StudyEntry(
                study=study,
                control=control,
                status=status_of(control),
                counts={status.value: counts.get((study.id, status.value), 0) for status in SessionStatus},
                owner_email=emails.get(control.owner_id) if control and control.owner_id else None,
            )
        )
    return entries


def pilot_count(db: Session, study_id: uuid.UUID) -> int:
    """Pilot sessions of the study (coordinators' trial runs, left out of the analysis)."""
    return int(
        db.scalar(
            select(func.count())
            .select_from(ElicitationSession)
            .where(ElicitationSession.study_id == study_id, ElicitationSession.pilot.is_(True))
        )
        or 0
    )


def answered_count(db: Session, study_id: uuid.UUID) -> int:
    """Answers recorded in the study (any phase, undone ones included: they were given)."""
    return int(
        db.scalar(
            select(func.count())
            .select_from(Answer)
            .join(ElicitationSession, Answer.session_id == ElicitationSession.id)
            .where(ElicitationSession.study_id == study_id, Answer.action == LogAction.ANSWER.value)
        )
        or 0
    )


def _parse(config: StudyConfig | dict[str, Any]) -> StudyConfig:
    if isinstance(config, StudyConfig):
        return config
    try:
        return parse_study_config(config)
    except StudyConfigError as exc:
        raise AdminError(str(exc), status_code=422, code="invalid_config") from None


def _config_columns(config: StudyConfig) -> dict[str, Any]:
    """The study's columns that follow from its configuration."""
    spec = get_algorithm(config.algorithm)
    space = build_space(config)
    params = spec.parse_params(config.algorithm_params)
    return {
        "name": config.name,
        "config": config.model_dump(mode="json"),
        "algorithm": config.algorithm,
        # The same simulated run the participant app uses to place the interleaved checks.
        "expected_queries": sessions.typical_queries(spec, space, params),
        "open_enrolment": config.open_enrolment,
    }


def _fill(study: Study, config: StudyConfig) -> None:
    for name, value in _config_columns(config).items():
        setattr(study, name, value)


def create_study_for(
    db: Session,
    principal: Principal,
    config: StudyConfig | dict[str, Any],
    *,
    seconds_per_query: float | None = None,
) -> tuple[Study, StudyControl]:
    """A new draft study owned by ``principal`` (nobody can join until it is opened)."""
    parsed = _parse(config)
    _check_seconds(seconds_per_query)
    study = Study(id=uuid.uuid4(), created_at=utcnow())
    _fill(study, parsed)
    control = StudyControl(
        study_id=study.id,
        owner_id=principal.user.id,
        status=StudyStatus.DRAFT.value,
        seconds_per_query=seconds_per_query,
        updated_at=utcnow(),
    )
    db.add(study)
    db.flush()
    db.add(control)
    db.commit()
    return study, control


def _check_seconds(seconds: float | None) -> None:
    low, high = PLAUSIBLE_SECONDS
    if seconds is not None and not low <= seconds <= high:
        raise AdminError(
            f"seconds_per_query must lie between {low:g} and {high:g}", status_code=422, code="invalid"
        )


def _ensure_control(db: Session, study: Study, control: StudyControl | None) -> StudyControl:
    if control is None:
        control = StudyControl(
            study_id=study.id, owner_id=None, status=StudyStatus.OPEN.value, updated_at=utcnow()
        )
        db.add(control)
    return control


def give_study(db: Session, study: Study, control: StudyControl | None, owner: User) -> StudyControl:
    """Make ``owner`` the study's owner, so a coordinator sees it (commits; status unchanged)."""
    control = _ensure_control(db, study, control)
    control.owner_id = owner.id
    control.updated_at = utcnow()
    db.commit()
    return control


def edit_study(
    db: Session,
    cache: SessionCache,
    study: Study,
    control: StudyControl | None,
    config: StudyConfig | dict[str, Any] | None = None,
    *,
    seconds_per_query: float | None = None,
    enrolment_expires_at: datetime | None = None,
    clear_expiry: bool = False,
) -> Study:
    """Change the configuration (only while nobody has answered) and/or the planner and expiry settings."""
    if config is not None:
        parsed = _parse(config)
        if not _replace_config(db, study, parsed):
            db.rollback()
            raise ConflictError(
                "This study has answers already, so its configuration can no longer change. "
                "Duplicate it to run a changed version.",
                code="has_answers",
                title=REFUSED_TITLE,
            )
        # Sessions without answers start over under the new configuration, as a new session would.
        version = session_version(get_algorithm(parsed.algorithm))
        for session in db.scalars(select(ElicitationSession).where(ElicitationSession.study_id == study.id)):
            session.algorithm = parsed.algorithm
            session.algorithm_version = version
    _check_seconds(seconds_per_query)
    if seconds_per_query is not None or enrolment_expires_at is not None or clear_expiry:
        control = _ensure_control(db, study, control)
        if seconds_per_query is not None:
            control.seconds_per_query = seconds_per_query
        if enrolment_expires_at is not None:
            control.enrolment_expires_at = enrolment_expires_at
        elif clear_expiry:
            control.enrolment_expires_at = None
        control.updated_at = utcnow()
    db.commit()
    # This process's runtime of the study is stale now (other workers only ever saw a study without answers).
    cache.clear()
    return study


def _replace_config(db: Session, study: Study, config: StudyConfig) -> bool:
    """Store ``config`` and bump the study's configuration version, unless anyone has answered.

    The "nobody has answered" condition is part of the UPDATE itself (on SQLite one statement under the
    write lock); on PostgreSQL the study row is locked first, so the check sees every committed answer,
    and a session's first answer holds a share lock on that row until it commits (`sessions.service`).
    Either the change or the first answer wins; the loser is refused, never both stored.
    """
    columns = _config_columns(config)  # before the lock: the row stays locked only for the UPDATE
    db.execute(select(Study.id).where(Study.id == study.id).with_for_update())
    answered = exists().where(
        Answer.session_id == ElicitationSession.id,
        ElicitationSession.study_id == study.id,
        Answer.action == LogAction.ANSWER.value,
    )
    changed = db.execute(
        update(Study)
        .where(Study.id == study.id, ~answered)
        .values(**columns, config_version=Study.config_version + 1)
        .execution_options(synchronize_session=False)
    )
    if changed.rowcount != 1:
        return False
    for name, value in columns.items():
        set_committed_value(study, name, value)
    return True


def set_status(
    db: Session,
    study: Study,
    control: StudyControl | None,
    target: str,
    *,
    confirm: bool = False,
    by: int | None = None,
) -> StudyControl:
    """Open, pause or close; closing needs ``confirm``, keeps every row and stores a snapshot archive."""
    try:
        wanted = StudyStatus(target)
    except ValueError:
        raise AdminError(
            f"status must be one of open, paused, closed; got {target!r}", status_code=422
        ) from None
    current = status_of(control)
    if wanted == current:
        return _ensure_control(db, study, control)
    if wanted not in TRANSITIONS[current]:
        raise ConflictError(
            f"a {current.value} study cannot become {wanted.value}",
            code="bad_transition",
            title=REFUSED_TITLE,
        )
    if wanted is StudyStatus.CLOSED and not confirm:
        raise AdminError(
            "Closing a study stops all enrolment for good; confirm to close it. Its data stays and can "
            "be exported at any time.",
            status_code=409,
            code="confirmation_required",
        )
    control = _ensure_control(db, study, control)
    control.status = wanted.value
    control.updated_at = utcnow()
    if wanted is StudyStatus.CLOSED:
        control.closed_at = control.updated_at
    db.commit()
    if wanted is StudyStatus.CLOSED:
        keep_closing_snapshot(db, study, by)
    return control


def duplicate_study(db: Session, principal: Principal, study: Study, control: StudyControl | None) -> Study:
    """A draft copy of the configuration (no sessions), owned by the caller."""
    data = dict(study.config)
    data["name"] = f"Copy of {study.name}"[:200]
    copy, _control = create_study_for(
        db, principal, data, seconds_per_query=control.seconds_per_query if control else None
    )
    return copy


def create_invitations(
    db: Session,
    cache: SessionCache,
    principal: Principal,
    study: Study,
    control: StudyControl | None,
    count: int,
    *,
    expires_at: datetime | None = None,
    labels: list[str] | None = None,
) -> list[tuple[Invitation, str]]:
    """``count`` personal links (invited sessions: nothing counts until the person consents), one commit.

    Refused for a draft or closed study: nobody could take part through the link.
    """
    if not 1 <= count <= MAX_INVITATIONS:
        raise AdminError(f"count must lie between 1 and {MAX_INVITATIONS}", status_code=422, code="invalid")
    status = status_of(control)
    if status is StudyStatus.CLOSED:
        raise ConflictError(
            "the study is closed; it takes no new participants", code="study_closed", title=REFUSED_TITLE
        )
    if status is StudyStatus.DRAFT:
        # A link made now would greet its person with "not started yet": refuse rather than let it go out.
        raise ConflictError(
            "the study is still a draft: open it first, then create personal links "
            "(until it opens, a link only tells its person that the study has not started)",
            code="study_draft",
            title="Open the study first",
        )
    if expires_at is not None and expires_at <= utcnow():
        raise AdminError("the expiry must lie in the future", status_code=422, code="invalid")
    invited = [
        sessions.create_session(db, cache, study.id, consented=False, require_open=False, commit=False)
        for _ in range(count)
    ]
    db.flush()  # the sessions' rows first: the invitations' foreign keys point at them
    created = []
    for index, (session, token) in enumerate(invited):
        label = labels[index] if labels and index < len(labels) else None
        invitation = Invitation(
            study_id=study.id,
            session_id=session.id,
            label=label,
            expires_at=expires_at,
            created_by=principal.user.id,
            created_at=utcnow(),
        )
        db.add(invitation)
        created.append((invitation, token))
    db.commit()
    return created


def coordinator_of(request: Request, db: Session, study: Study) -> bool:
    """Whether ``request`` comes from a browser signed in to the back office as someone who may see
    ``study``: their session through its open link is a pilot, like one started from the study page."""
    principal = cookie_principal(request, db)
    return principal is not None and _may_see(principal, db.get(StudyControl, study.id))


def start_pilot(db: Session, cache: SessionCache, study: Study, control: StudyControl | None) -> str:
    """A pilot session of ``study`` for its coordinator to take as a participant; returns its token.

    It starts at the consent page like anyone's, also in a draft or paused study (so the study can be
    tried before people see it), and the analysis leaves it out (`ElicitationSession.pilot`). Refused
    for a closed study, which takes nobody.
    """
    if status_of(control) is StudyStatus.CLOSED:
        raise ConflictError(
            "the study is closed; it takes nobody, pilots included", code="study_closed", title=REFUSED_TITLE
        )
    _session, token = sessions.create_session(db, cache, study.id, require_open=False, pilot=True)
    return token


def exclude_session(db: Session, principal: Principal, session: ElicitationSession, reason: str) -> Exclusion:
    """Exclude a session from the analysis with a reason (kept and exported; answers untouched)."""
    reason = reason.strip()
    if not reason or len(reason) > 2000:
        raise AdminError("give a reason of 1 to 2000 characters", status_code=422, code="invalid")
    if active_exclusion(db, session.id) is not None:
        raise ConflictError("this session is excluded already", code="already_excluded", title=REFUSED_TITLE)
    exclusion = Exclusion(
        session_id=session.id, reason=reason, created_by=principal.user.id, created_at=utcnow()
    )
    db.add(exclusion)
    db.commit()
    return exclusion


def lift_exclusion(db: Session, principal: Principal, session: ElicitationSession) -> Exclusion:
    """Take a session back into the analysis; the exclusion row stays, marked as lifted."""
    exclusion = active_exclusion(db, session.id)
    if exclusion is None:
        raise ConflictError("this session is not excluded", code="not_excluded", title=REFUSED_TITLE)
    exclusion.lifted_at = utcnow()
    exclusion.lifted_by = principal.user.id
    db.commit()
    return exclusion


def active_exclusion(db: Session, session_id: uuid.UUID) -> Exclusion | None:
    return db.scalars(
        select(Exclusion).where(Exclusion.session_id == session_id, Exclusion.lifted_at.is_(None))
    ).first()


def snapshots(db: Session, study_id: uuid.UUID) -> list[StudySnapshot]:
    """The study's kept archives, oldest first (without loading them is not worth it: they are few)."""
    statement = select(StudySnapshot).where(StudySnapshot.study_id == study_id).order_by(StudySnapshot.id)
    return list(db.scalars(statement))


def snapshot(db: Session, study_id: uuid.UUID, snapshot_id: int) -> StudySnapshot:
    item = db.get(StudySnapshot, snapshot_id)
    if item is None or item.study_id != study_id:
        raise NotFoundError("There is no snapshot at this address.")
    return item


#: Columns of an invitation-links file (the back office's download and `elicit study invite`).
INVITATION_COLUMNS = ("invitation_id", "url", "expires_at")


def write_invitations_csv(
    out: TextIO, links: Iterable[tuple[int, str, str | None]], *, lineterminator: str = "\r\n"
) -> None:
    """Write personal invitation links as CSV: id, absolute URL, ISO expiry (empty when none)."""
    writer = csv.writer(out, lineterminator=lineterminator)
    writer.writerow(INVITATION_COLUMNS)
    for invitation_id, url, expires_at in links:
        writer.writerow([invitation_id, url, expires_at or ""])
