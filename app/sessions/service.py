"""Use cases of a participant session: create, consent, answer, undo, view; each owns its transaction.

The answer log is the truth: a session's state is the replay of its effective answers (answers minus undone
ones) through a fresh elicitor (`replay.replay_verified`). `SessionCache` may hold the live elicitor for
``(session, number of elicitor answers)``; an entry is used only when its count and the sequence number of
the last elicitor answer match the log, so correctness never depends on it.
"""

from __future__ import annotations

import functools
import secrets
import uuid
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from elicitation import Done, ElicitationError, Pending

from .. import repository as repo
from ..codec import decode_query, encode_metric, encode_query, to_jsonable
from ..errors import ConflictError, InvalidInputError, NotFoundError
from ..explain import reading_for
from ..i18n import N_
from ..models import (
    Answer,
    AnswerChannel,
    ElicitationSession,
    LogAction,
    Phase,
    Result,
    SessionLink,
    SessionStatus,
    Study,
    utcnow,
)
from ..outcome import check_summary, evaluation_summary, plain_summary
from ..panels import checked_values
from ..plan import SessionPlan, Step, elicitor_choice, evaluation_progress
from . import checkpoints
from .displayed import session_version
from .enrolment import check_enrolment, find_study, open_study
from .log import effective_rows, elicitor_rows
from .replay import replay_verified
from .runtime import Branch, ElicitorState, Failed, SessionCache, StudyRuntime
from .tokens import completion_code, hash_token, load_session, new_token
from .views import SessionView, comparison_model, shown_side, worked_example

__all__ = [
    "MAX_TIMING_MS",
    "SessionProgress",
    "consent",
    "create_session",
    "get_instructions",
    "get_view",
    "join_study",
    "session_progress",
    "start_session",
    "submit_answer",
    "undo",
]

#: Largest accepted client-side timing (a day); larger values are clamped, not rejected.
MAX_TIMING_MS = 86_400_000


def _load_log(db: Session, cache: SessionCache, session: repo.SessionRecord) -> list[Any]:
    """The log as light rows: cached rows plus any the database has beyond them (append-only log, numbered
    from 0 without gaps); none are read when the session's record shows the log ends where the cache does."""
    rows = cache.take_log(session.id)
    if rows is None:
        return list(repo.log_entries(db, session.id))
    if len(rows) and rows[-1].seq != len(rows) - 1:
        return list(repo.log_entries(db, session.id))
    if session.last_seq == (rows[-1].seq if rows else None):
        return rows
    rows.extend(repo.log_entries(db, session.id, after_seq=len(rows) - 1))
    return rows


def _cache_key(elicitation: list[Any]) -> tuple[int, int]:
    """Where the elicitor stands in the log: (answers it received, seq of the last one)."""
    return len(elicitation), (elicitation[-1].seq if elicitation else -1)


def _replay_state(
    runtime: StudyRuntime, session: checkpoints.RecordedSession, elicitation: list[Any]
) -> ElicitorState:
    """The elicitor state rebuilt from the standing elicitation rows (every stored query checked)."""
    return replay_verified(lambda: runtime.elicitor(session.seed, session.algorithm_version), elicitation)


def _resolve_state(
    db: Session,
    cache: SessionCache,
    runtime: StudyRuntime,
    session: checkpoints.RecordedSession,
    elicitation: list[Any],
) -> tuple[ElicitorState, str]:
    """The live elicitor if the cache holds it at exactly this point of the log, else the session's
    checkpoint continued to this point, else a replay of the whole log; and which (`RESUME_SOURCES`).

    A state computed here is saved as the session's checkpoint (before the response) unless the checkpoint
    already stands here.
    """
    n, last = _cache_key(elicitation)
    state = cache.take(session.id, n, last)
    if state is not None:
        cache.count_resume("cache")
        cache.put(session.id, n, last, state)
        return state, "cache"
    state, save, source = _rebuild_state(db, cache, runtime, session, elicitation)
    cache.put(session.id, n, last, state)
    _hand_on(db, cache, runtime, session, elicitation, state, save=save, source=source)
    return state, source


def _rebuild_state(
    db: Session,
    cache: SessionCache,
    runtime: StudyRuntime,
    session: checkpoints.RecordedSession,
    elicitation: list[Any],
) -> tuple[ElicitorState, bool, str]:
    """The elicitor state after ``elicitation`` from the session's checkpoint, else by a full replay;
    whether it is to be saved as the new checkpoint (not when the one used already stands at this point);
    and which of the two it came from."""
    restored = checkpoints.restore_state(db, runtime, session, elicitation)
    if restored is not None:
        state, at = restored
        source = "checkpoint"
    else:
        state, at = _replay_state(runtime, session, elicitation), -1
        source = "replay"
    cache.count_resume(source)
    return state, at != len(elicitation), source


def _hand_on(
    db: Session,
    cache: SessionCache,
    runtime: StudyRuntime,
    session: checkpoints.RecordedSession,
    elicitation: list[Any],
    state: ElicitorState,
    *,
    save: bool,
    source: str = "cache",
    checkpoint: bytes | None = None,
) -> None:
    """What follows a state this request computed: its checkpoint's save (if ``save``) and, with a
    speculator, its two possible next states, both in the background; without one, the save now.

    ``source`` is where the request found the session's state before (`RESUME_SOURCES`). Not in this
    process's cache: the checkpoint is saved before the response even with a speculator, since the session
    may be moving between workers and the next one reads it at once. From another worker's checkpoint: no
    branches either, since the next answer may well go to another worker again (a replay, a new session's
    first state, does get them). ``checkpoint`` is the state's checkpoint when it came with it (a branch's).
    """
    speculator = cache.speculator if source != "checkpoint" else None
    if save and (speculator is None or source != "cache"):
        checkpoint = checkpoint if checkpoint is not None else checkpoints.encoded(state)
        if checkpoint is not None:
            checkpoints.save_blob(db, runtime, session, elicitation, checkpoint)
        save = False
    if speculator is not None:
        speculator.schedule(session, runtime, elicitation, state, checkpoint=checkpoint, save=save)


def _elicitor_progress(runtime: StudyRuntime, state: ElicitorState, n_elicited: int) -> tuple[int, bool]:
    """(elicitor questions the session is expected to take, whether its elicitor has finished)."""
    if not isinstance(state, Pending):
        return n_elicited, True
    # The study's typical session, not the active elicitors' own `expected_remaining`: in the demo and the
    # fairness study every simulated session ran to the question budget while the elicitor's own
    # expectation said 3 to 6 fewer (docs/realistic-queries.md), so the count would have grown as it went.
    return runtime.expected_queries, False


@dataclass(eq=False)
class _Context:
    """A session with its log loaded and its elicitor state resolved (within one request)."""

    db: Session
    cache: SessionCache
    #: The session's read-only record, or its ORM object once the request loaded it to change it (`stored`).
    session: repo.SessionRecord | ElicitationSession
    runtime: StudyRuntime
    #: The whole log as light rows, the answers that stand, and those of them the elicitor received.
    rows: list[Any]
    effective: list[Any]
    elicitation: list[Any]
    state: ElicitorState
    #: Where the request found the session's state (`RESUME_SOURCES`: this process's cache, a checkpoint
    #: another worker or an earlier process saved, or a replay).
    source: str = "cache"
    _step: tuple[Step | None] | None = field(default=None, init=False)

    @classmethod
    def of_token(cls, db: Session, cache: SessionCache, token: str) -> _Context:
        """The context of the session behind ``token`` (`NotFoundError` for an unknown token)."""
        session = load_session(db, token)
        runtime = cache.runtime_of(db, session.study_id)
        rows = _load_log(db, cache, session)
        effective = effective_rows(rows)
        elicitation = elicitor_rows(effective)
        state, source = _resolve_state(db, cache, runtime, session, elicitation)
        return cls(db, cache, session, runtime, rows, effective, elicitation, state, source)

    def stored(self) -> ElicitationSession:
        """The session's ORM object, to change it (loaded on first use: most requests only read the row)."""
        if not isinstance(self.session, ElicitationSession):
            stored = self.db.get(ElicitationSession, self.session.id)
            if stored is None:
                raise NotFoundError()
            self.session = stored
        return self.session

    @functools.cached_property
    def plan(self) -> SessionPlan:
        """The session's script (looked up in the runtime once per request: the view asks for it thrice)."""
        return self.runtime.plan(self.session.seed, self.session.algorithm_version)

    def append(self, row: repo.LogEntry) -> None:
        """Record a just-committed answer in this context (effective log and, if needed, the elicitor)."""
        self.rows.append(row)
        self._step = None
        if row.phase == Phase.ELICITATION.value:
            self.advance(row)
        else:
            self.effective.append(row)

    @property
    def next_seq(self) -> int:
        return len(self.rows)

    def advance(self, row: repo.LogEntry) -> None:
        """Feed a just-committed elicitation answer to the live elicitor (or take the state computed ahead
        for it, or rebuild by replay)."""
        self.effective.append(row)
        self.elicitation.append(row)
        n, last = _cache_key(self.elicitation)
        before = (n - 1, self.elicitation[-2].seq if n > 1 else -1)
        answer = bool(row.elicitor_answer)
        branch = self._branch(before, answer, row.query)
        state: ElicitorState | None = None
        save = True
        if branch is not None:
            state = branch.state
            self.cache.count_active_answer(ahead=True)
        else:
            previous = self.cache.take(self.session.id, *before)
            active = checkpoints.waiting_active_elicitor(previous) is not None
            if self.cache.speculator is not None and active:
                self.cache.count_active_answer(ahead=False)
            if isinstance(previous, Pending):
                try:
                    query = previous.elicitor.send(answer)
                    state = Pending(elicitor=previous.elicitor, query=query, n_answered=n, log=())
                except StopIteration:
                    state = None  # finished: rebuild once to get the driver's checked result with its log
                except ElicitationError as exc:
                    # The answer is committed; the session ends early with the answers it has.
                    state = Failed.of(exc)
        if state is None:
            state, save, _ = _rebuild_state(self.db, self.cache, self.runtime, self.session, self.elicitation)
        self.state = state
        self.cache.put(self.session.id, n, last, self.state)
        _hand_on(
            self.db,
            self.cache,
            self.runtime,
            self.session,
            self.elicitation,
            state,
            save=save,
            source=self.source,
            checkpoint=None if branch is None else branch.checkpoint,
        )

    def _branch(self, before: tuple[int, int], answer: bool, query: dict[str, Any] | None) -> Branch | None:
        """The state after ``answer`` to the stored ``query``, computed ahead from the live state at
        ``before`` (elicitor answers, seq of the last one), if the background has it
        (`app.sessions.speculation`)."""
        if self.cache.speculator is None:
            return None
        version = self.runtime.config_version
        branch = self.cache.take_branch(self.session.id, *before, version, answer)
        if branch is not None and branch.answered_query not in (None, query):
            return None  # a result checked against another query than the one answered
        return branch

    def step(self) -> Step | None:
        """The plan's next step after this log (the one the request before computed, if it was noted)."""
        if self._step is None:
            self._step = self.cache.step_at(self.session.id, self.runtime, len(self.rows))
        if self._step is None and isinstance(self.state, Failed):
            # An elicitor that could not go on ends the session: no checks or final comparisons follow.
            self._step = (None,)
        if self._step is None:
            query = self.state.query if isinstance(self.state, Pending) else None
            metric = self.state.result.metric if isinstance(self.state, Done) else None
            self._step = (self.plan.next_step(self.effective, query, metric),)
            self.cache.note_step(self.session.id, self.runtime, len(self.rows), self._step[0])
        return self._step[0]

    def view(self) -> SessionView:
        self.cache.put_log(self.session.id, self.rows)
        status = SessionStatus(self.session.status)
        step = self.step() if status is SessionStatus.ACTIVE else None
        result = repo.get_result(self.db, self.session.id) if status is SessionStatus.DONE else None
        n_elicited = len(self.elicitation)
        elicitor_total, finished = _elicitor_progress(self.runtime, self.state, n_elicited)
        self.cache.note_progress(self.session.id, *_cache_key(self.elicitation), elicitor_total, finished)
        evaluation = (0, 0, 0)  # read (by the sections) only while a step is left
        if status is SessionStatus.DONE or (status is SessionStatus.ACTIVE and step is None):
            total = len(self.effective)  # nothing is left: the count is what was asked
        else:
            metric = self.state.result.metric if isinstance(self.state, Done) else None
            evaluation = self.plan.evaluation_progress(self.effective, metric)
            total = max(
                self.plan.estimated_total(n_elicited, elicitor_total, finished, evaluation),
                len(self.effective) + 1,
            )
        if status is SessionStatus.INVITED:
            phase = "consent"
        elif status is SessionStatus.DONE:
            phase = "done"
        elif step is not None and step.phase is Phase.PRACTICE:
            phase = "practice"
        else:
            # Checks and evaluation pairs are deliberately not announced as different from the rest.
            phase = "questions"
        comparison = None
        if step is not None:
            comparison = comparison_model(
                self.runtime,
                seq=self.next_seq,
                left=step.left,
                right=step.right,
                practice=step.phase is Phase.PRACTICE,
            )
        return SessionView(
            session=self.session,
            config=self.runtime.config,
            status=status,
            phase=phase,
            answered=len(self.effective),
            estimated_total=total,
            next_seq=self.next_seq,
            step=step,
            comparison=comparison,
            result=result,
            can_undo=status is SessionStatus.ACTIVE and bool(self.effective),
            sections=self.plan.sections(self.effective, elicitor_total, finished, step, evaluation),
            words=None if result is None else self.runtime.words(result.metric, result.details),
        )

    # -- finishing ----------------------------------------------------------------------------------------

    def finalize_if_complete(self) -> None:
        """Commit the result and mark the session done once nothing is left to ask (idempotent)."""
        if self.session.status != SessionStatus.ACTIVE.value or self.step() is not None:
            return
        config = self.runtime.config
        space = self.runtime.space
        pairs = []
        checks = []
        standing = {row.seq for row in self.effective}
        for row in repo.log_rows(self.db, self.session.id):
            if row.seq not in standing:
                continue
            if row.phase == Phase.EVALUATION.value and row.query is not None:
                query = decode_query(row.query)
                pairs.append(
                    (query.first, query.second, elicitor_choice(row.preferred or "tie", bool(row.swapped)))
                )
            elif row.phase == Phase.CHECK.value and row.check is not None:
                checks.append(row.check)
        if isinstance(self.state, Done):
            elicited = self.state.result
            metric = elicited.metric
            metric_json = encode_metric(metric)
            num_queries = int(elicited.num_queries)
            details = to_jsonable(dict(elicited.details))
            evaluation = evaluation_summary([(f, s, c.value) for f, s, c in pairs], metric, space.priors)
            group_shares = getattr(self.runtime.params, "group_shares", None)
            reading = reading_for(space, config.population, group_shares=group_shares, details=details)
            summary = plain_summary(metric, reading)
        else:
            message = self.state.message if isinstance(self.state, Failed) else "elicitation did not finish"
            metric_json = {"type": "failed", "reason": message}
            num_queries = len(self.elicitation)
            details = {}
            evaluation = {"pairs": len(pairs), "elicited": None}
            summary = N_(
                "Thank you. Your answers did not add up to a single consistent metric, which happens; "
                "they are recorded and will still help the study."
            )
        result = Result(
            session_id=self.session.id,
            metric=metric_json,
            num_queries=num_queries,
            details=details,
            evaluation=to_jsonable(evaluation),
            checks=check_summary(checks),
            summary=summary,
        )
        session = self.stored()
        session.status = SessionStatus.DONE.value
        session.finished_at = utcnow()
        session.completion_code = config.completion_code or completion_code()
        self.db.add(result)
        try:
            self.db.commit()
        except IntegrityError:
            # Another request finished the same session first; its committed result stands.
            self.db.rollback()
            self.db.refresh(session)


@dataclass(frozen=True)
class SessionProgress:
    """Answers a session has given and how many comparisons it is expected to take in all.

    ``own`` says whether the total is the session's own (its elicitor's stopping rule or actual count, as
    its participant's progress bar shows it) or, when that was not at hand, the study's typical session.
    """

    answered: int
    estimated_total: int
    own: bool


def session_progress(
    db: Session, cache: SessionCache, session: ElicitationSession, rows: list[Any], *, may_replay: bool
) -> SessionProgress:
    """``session``'s progress as its participant sees it, from its log ``rows`` (light rows suffice).

    The expected total comes from what this process noted when it last served the session at exactly this
    point of its log; otherwise, if ``may_replay``, from its checkpoint or a replay of the log (the rebuilt
    elicitor is offered to the cache, so the participant's next answer does not replay again); otherwise
    the study's typical session stands in (``own`` False). A finished session's total is what it actually
    took.
    """
    runtime = cache.runtime(session.study)
    plan = runtime.plan(session.seed, session.algorithm_version)
    effective = effective_rows(rows)
    answered = len(effective)
    if session.status == SessionStatus.DONE.value:
        return SessionProgress(answered, answered, own=True)
    elicitation = elicitor_rows(effective)
    n, last = _cache_key(elicitation)
    noted = cache.progress(session.id, n, last)
    if noted is None and may_replay and session.status == SessionStatus.ACTIVE.value:
        full = elicitor_rows(effective_rows(repo.log_entries(db, session.id)))
        if _cache_key(full) == (n, last):  # else an answer arrived meanwhile: the next look sees it
            try:
                # Read-only here (a monitor page): the checkpoint is used if it fits, but none is saved.
                restored = checkpoints.restore_state(db, runtime, session, full)
                state = restored[0] if restored is not None else _replay_state(runtime, session, full)
            except ElicitationError:
                state = None  # a log this version cannot replay: its own pages say so
            if state is not None:
                cache.offer(session.id, n, last, state)
                noted = _elicitor_progress(runtime, state, n)
                cache.note_progress(session.id, n, last, *noted)
    elicitor_total, finished = noted if noted is not None else (runtime.expected_queries, False)
    total = max(
        plan.estimated_total(n, elicitor_total, finished, evaluation_progress(effective, None)), answered
    )
    return SessionProgress(answered, total, own=noted is not None)


def _context(db: Session, cache: SessionCache, token: str) -> _Context:
    return _Context.of_token(db, cache, token)


# -- use cases ------------------------------------------------------------------------------------------


def create_session(
    db: Session,
    cache: SessionCache,
    study_id: str | uuid.UUID,
    *,
    participant_code: str | None = None,
    panel: dict[str, str] | None = None,
    consented: bool = False,
    require_open: bool = True,
    commit: bool = True,
    pilot: bool = False,
) -> tuple[ElicitationSession, str]:
    """Create a session of an (open-enrolment) study; returns it and its secret token (shown once).

    ``panel`` holds the study's panel parameters as the link carried them (`app.panels.panel_values`).
    ``commit=False`` leaves the new row in the caller's transaction (a batch of invitations is one commit).
    A ``pilot`` session is a coordinator's own trial: it may run in a draft or paused study, and the
    analysis leaves it out.
    """
    if require_open:
        study = open_study(db, study_id)
        check_enrolment(db, study)
    else:
        study = find_study(db, study_id)
    runtime = cache.runtime(study)
    token = new_token()
    now = utcnow()
    session = ElicitationSession(
        id=uuid.uuid4(),
        study_id=study.id,
        token_hash=hash_token(token),
        participant_code=participant_code,
        panel=panel or None,
        seed=secrets.randbits(63),
        algorithm=study.algorithm,
        algorithm_version=session_version(runtime.spec),
        status=(SessionStatus.ACTIVE if consented else SessionStatus.INVITED).value,
        created_at=now,
        consented_at=now if consented else None,
        pilot=pilot,
    )
    repo.add(db, session)
    if commit:
        db.commit()
    return session, token


def returning_view(
    db: Session,
    cache: SessionCache,
    study_id: uuid.UUID,
    token: str | None,
    panel_id: str | None = None,
) -> SessionView | None:
    """The session this browser already has in ``study_id`` (its remembered token), or None.

    A token of another study, of a deleted session or a malformed one is simply not a returning
    participant: the join page then starts afresh. So is a session of another panel ID than the one the
    link carries (``panel_id``: someone else on a shared device).
    """
    if not token:
        return None
    try:
        view = get_view(db, cache, token)
    except NotFoundError:
        return None
    if view.session.study_id != study_id:
        return None
    if panel_id is not None and view.session.participant_code != panel_id:
        return None
    return view


def returning_by_code(
    db: Session, cache: SessionCache, study: Study, participant_code: str | None
) -> ElicitationSession | None:
    """The session a returning participant code started, when the study resumes by code, else None."""
    if participant_code is None or not cache.runtime(study).config.resume_by_participant_code:
        return None
    return repo.find_session_by_code(db, study.id, participant_code)


@dataclass(frozen=True)
class Joined:
    """Who came through a study's open link: their session, a token for it, and whether it already existed."""

    session: repo.SessionRecord | ElicitationSession
    token: str
    continued: bool


def join_study(
    db: Session,
    cache: SessionCache,
    study_id: uuid.UUID,
    *,
    participant_code: str | None,
    known_token: str | None,
    panel: dict[str, str] | None = None,
    panel_id: str | None = None,
    pilot: bool = False,
) -> Joined:
    """A participant consents on the study's open link; returns their session and a token for it.

    A new session is a ``pilot`` when a coordinator of the study joins (left out of the analysis).

    The session this browser already has (``known_token``) continues; so does the session a returning
    participant code started, when the study resumes by code (a further personal link is issued, the
    earlier links keep working); otherwise a new session starts, keeping the link's ``panel`` values. A
    returning session keeps the values it started with; the browser's session of another ``panel_id``
    than the link's is not continued.
    """
    returning = returning_view(db, cache, study_id, known_token, panel_id)
    if returning is not None and known_token is not None:
        if returning.status is SessionStatus.INVITED:
            consent(db, cache, known_token)
        return Joined(returning.session, known_token, continued=True)
    return start_session(
        db, cache, study_id, participant_code=participant_code, panel=panel, consented=True, pilot=pilot
    )


def start_session(
    db: Session,
    cache: SessionCache,
    study_id: str | uuid.UUID,
    *,
    participant_code: str | None,
    consented: bool,
    panel: dict[str, str] | None = None,
    pilot: bool = False,
) -> Joined:
    """A session through the study's open link (the join page, or the JSON API for scripts and panels).

    When the study resumes by participant code and ``participant_code`` already started a session, that
    session continues under a further personal link (consenting it, if ``consented`` and it was only
    invited; it keeps the ``panel`` values it started with); otherwise a new session starts, consented or
    not, with the link's ``panel`` values.
    """
    study = open_study(db, study_id)
    try:
        arrived = checked_values(cache.runtime(study).config.panel, panel or {})
    except ValueError as exc:
        raise InvalidInputError(str(exc)) from None
    participant_code = participant_code or arrived.participant_code
    session = returning_by_code(db, cache, study, participant_code)
    if session is not None:
        if consented and session.status == SessionStatus.INVITED.value:
            check_enrolment(db, study, session)
            session.status = SessionStatus.ACTIVE.value
            session.consented_at = utcnow()
        token = new_token()
        repo.add(db, SessionLink(session_id=session.id, token_hash=hash_token(token), created_at=utcnow()))
        db.commit()
        return Joined(session, token, continued=True)
    session, token = create_session(
        db,
        cache,
        study.id,
        participant_code=participant_code,
        panel=arrived.values,
        consented=consented,
        pilot=pilot,
    )
    return Joined(session, token, continued=False)


def get_view(db: Session, cache: SessionCache, token: str) -> SessionView:
    """The session's current state; finishes it first if its last answer completed it."""
    context = _context(db, cache, token)
    context.finalize_if_complete()
    return context.view()


def get_instructions(db: Session, cache: SessionCache, token: str) -> tuple[SessionView, dict[str, Any]]:
    """The session's current state and the study's worked example (a comparison model) to explain it."""
    context = _context(db, cache, token)
    context.finalize_if_complete()
    return context.view(), worked_example(context.runtime)


def consent(db: Session, cache: SessionCache, token: str) -> SessionView:
    """Record consent (idempotent): from now on the session counts and its questions start."""
    context = _context(db, cache, token)
    if context.session.status == SessionStatus.INVITED.value:
        session = context.stored()
        if not session.pilot:  # a coordinator tries a draft or paused study before people do
            check_enrolment(db, session.study, session)
        session.status = SessionStatus.ACTIVE.value
        session.consented_at = utcnow()
        db.commit()
    return context.view()


def _clamp(value: int | None) -> int | None:
    return None if value is None else max(0, min(int(value), MAX_TIMING_MS))


def submit_answer(
    db: Session,
    cache: SessionCache,
    token: str,
    *,
    seq: int,
    preferred: str,
    channel: AnswerChannel,
    time_on_page_ms: int | None = None,
    hidden_ms: int | None = None,
) -> SessionView:
    """Record the answer to the query shown at ``seq`` and return the state with the next query.

    ``channel`` says whether a person answered on the participant page or a client through the JSON API;
    only page answers count towards the study's measured time per comparison (`planning.pace`).

    A repeat of an already recorded answer (double click, retry, second tab) changes nothing; a different
    answer to an answered ``seq``, or a ``seq`` that was never shown, raises `ConflictError` with the
    current state. The answer is committed before the next query is computed.
    """
    while True:
        context = _context(db, cache, token)
        status = SessionStatus(context.session.status)
        if seq < context.next_seq:
            earlier = context.rows[seq]
            if earlier.action == LogAction.ANSWER.value and earlier.preferred == preferred:
                context.finalize_if_complete()
                return context.view()
            raise ConflictError(
                f"question {seq} was already answered differently; your recorded answer stands",
                context.view(),
                code="already_answered",
            )
        if status is SessionStatus.INVITED:
            raise ConflictError("please confirm your consent first", context.view(), code="consent_required")
        if status is SessionStatus.DONE:
            raise ConflictError("this session is finished", context.view(), code="session_finished")
        if seq > context.next_seq:
            raise ConflictError(f"question {seq} has not been shown yet", context.view(), code="stale_seq")
        step = context.step()
        if step is None:
            context.finalize_if_complete()
            raise ConflictError("this session is finished", context.view(), code="session_finished")
        values = _answer_values(context, step, preferred, time_on_page_ms, hidden_ms)
        values["channel"] = AnswerChannel(channel).value
        if not any(row.action == LogAction.ANSWER.value for row in context.rows):
            _check_config_unchanged(db, cache, context)
        try:
            repo.insert_answer(db, values)
            db.commit()
        except IntegrityError:
            # A concurrent request recorded this seq first: the next pass answers as the repeat it now is.
            db.rollback()
            continue
        context.append(repo.LogEntry.of(values))
        context.finalize_if_complete()
        return context.view()


def _check_config_unchanged(db: Session, cache: SessionCache, context: _Context) -> None:
    """Before a session's first answer: the study's configuration is still the one it was asked with.

    Until anyone answers, a coordinator may change the configuration; the version read here stays locked
    until the answer commits, so the change and the first answer cannot both succeed. If the change won,
    the answer is refused (nothing is stored) and the session continues under the new configuration.
    """
    study_id = context.session.study_id
    if repo.lock_config_version(db, study_id) != context.runtime.config_version:
        db.rollback()
        cache.forget_study(study_id)
        raise ConflictError(
            N_("This study was changed a moment ago. Please reload the page to see the current question."),
            code="study_changed",
        )


def _answer_values(
    context: _Context, step: Step, preferred: str, time_on_page_ms: int | None, hidden_ms: int | None
) -> dict[str, Any]:
    """The log row recording ``preferred`` as the answer to ``step`` (column name -> value)."""
    position = len(context.effective)
    choice = elicitor_choice(preferred, step.swapped)
    elicitor_answer: bool | None = None
    tie_break: bool | None = None
    if step.phase is Phase.ELICITATION:
        # The elicitors take booleans only: "about the same" is logged as such and decided by a seeded coin.
        if choice.value == "tie":
            tie_break = context.plan.tie_break(position)
            elicitor_answer = tie_break
        else:
            elicitor_answer = choice.value == "first"
    check = None
    if step.check is not None:
        check = {**step.check, "answer": choice.value, "passed": choice.value == step.check["expected"]}
    previous = context.rows[-1].created_at if context.rows else context.session.consented_at
    elapsed = None
    now = utcnow()
    if previous is not None:
        if previous.tzinfo is None:  # SQLite returns naive datetimes (stored as UTC)
            previous = previous.replace(tzinfo=now.tzinfo)
        elapsed = _clamp(int((now - previous).total_seconds() * 1000))
    return {
        "session_id": context.session.id,
        "seq": context.next_seq,
        "action": LogAction.ANSWER.value,
        "phase": step.phase.value,
        "phase_index": step.phase_index,
        "query": encode_query(step.query),
        "shown": {
            "left": shown_side(context.runtime, step.left),
            "right": shown_side(context.runtime, step.right),
        },
        "swapped": step.swapped,
        "preferred": preferred,
        "elicitor_answer": elicitor_answer,
        "tie_break": tie_break,
        "check": check,
        "time_on_page_ms": _clamp(time_on_page_ms),
        "hidden_ms": _clamp(hidden_ms),
        "server_elapsed_ms": elapsed,
        "undoes_seq": None,
        "created_at": now,
    }


def undo(db: Session, cache: SessionCache, token: str, *, seq: int | None = None) -> SessionView:
    """Undo the last effective answer (the log keeps it, marked); ``seq`` guards against stale clicks.

    With ``seq`` (the query the participant was looking at), a repeated click whose undo is already
    recorded changes nothing.
    """
    while True:
        context = _context(db, cache, token)
        status = SessionStatus(context.session.status)
        if seq is not None and seq < context.next_seq:
            if context.rows[seq].action == LogAction.UNDO.value:
                return context.view()
            raise ConflictError(
                "the session has moved on since this page was shown", context.view(), code="stale_seq"
            )
        if status is SessionStatus.DONE:
            raise ConflictError("this session is finished", context.view(), code="session_finished")
        if status is SessionStatus.INVITED:
            raise ConflictError("please confirm your consent first", context.view(), code="consent_required")
        if seq is not None and seq > context.next_seq:
            raise ConflictError(f"question {seq} has not been shown yet", context.view(), code="stale_seq")
        if not context.effective:
            raise ConflictError("there is no answer to undo", context.view(), code="nothing_to_undo")
        target = context.effective[-1]
        now = utcnow()
        row = Answer(
            session_id=context.session.id,
            seq=context.next_seq,
            action=LogAction.UNDO.value,
            undoes_seq=target.seq,
            created_at=now,
        )
        repo.mark_undone(db, context.session.id, target.seq, now)
        db.add(row)
        try:
            db.commit()
        except IntegrityError:
            # A concurrent request wrote this seq first: the next pass sees its row.
            db.rollback()
            continue
        break
    # Hand the log back so the fresh context only reads the undo row, then recompute from the shorter log.
    cache.put_log(context.session.id, context.rows)
    return _context(db, cache, token).view()
