"""Use cases of the participant app; each owns its transaction and commits before it returns.

The answer log is the truth: a session's state is the replay of its effective answers (answers minus
undone ones) through a fresh elicitor (`elicitation.replay`, stored queries checked to ``REPLAY_ATOL``).
`SessionCache` may hold the live elicitor for ``(session, number of elicitor answers)``; an entry is used
only when its count and the sequence number of the last elicitor answer match the log, so correctness
never depends on it.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import logging
import secrets
import threading
import uuid
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from pydantic import BaseModel
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from elicitation import (
    Done,
    ElicitationError,
    NumericalError,
    Pending,
    Query,
    ReplayMismatchError,
    first_mismatch,
    replay,
    run,
)

from . import repository as repo
from .admin.gate import check_enrolment
from .algorithms import AlgorithmSpec, get_algorithm
from .codec import decode_metric, decode_query, encode_metric, encode_query, to_jsonable
from .displayed import build_session_elicitor, session_version
from .errors import ConflictError, NotFoundError
from .models import Answer, ElicitationSession, LogAction, Phase, Result, SessionStatus, Study, utcnow
from .outcome import check_summary, evaluation_summary, plain_summary
from .plan import Section, SessionPlan, Step, elicitor_choice
from .study_config import StudyConfig, build_space, parse_study_config

__all__ = [
    "TOKEN_BYTES",
    "Failed",
    "SessionCache",
    "SessionView",
    "StudyRuntime",
    "consent",
    "create_session",
    "create_study",
    "get_view",
    "hash_token",
    "submit_answer",
    "undo",
]

logger = logging.getLogger("app.services")

#: Entropy of a participant token (``secrets.token_urlsafe``): 256 bits.
TOKEN_BYTES = 32
_TOKEN_LENGTH = 43
_TOKEN_ALPHABET = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
#: Confusion matrices remembered per study (two per query; a session has a few hundred queries).
CONFUSION_MEMO_SIZE = 4096
#: Largest accepted client-side timing (a day); larger values are clamped, not rejected.
MAX_TIMING_MS = 86_400_000


def hash_token(token: str) -> str:
    """SHA-256 hex digest of a token; only digests are stored."""
    return hashlib.sha256(token.encode("ascii")).hexdigest()


def new_token() -> str:
    return secrets.token_urlsafe(TOKEN_BYTES)


def _well_formed(token: str) -> bool:
    return len(token) == _TOKEN_LENGTH and set(token) <= _TOKEN_ALPHABET


@dataclass(frozen=True)
class Failed:
    """The elicitor could not produce a metric (e.g. a singular system from contradictory answers)."""

    message: str


ElicitorState = Pending[Any] | Done[Any] | Failed


@dataclass(frozen=True)
class StudyRuntime:
    """What serving a study needs, built once per process from its stored configuration."""

    study_id: uuid.UUID
    config: StudyConfig
    space: Any
    spec: AlgorithmSpec
    params: BaseModel
    expected_queries: int
    _confusions: dict[bytes, list[Any]] = field(default_factory=dict, repr=False, compare=False)
    _plans: dict[int, SessionPlan] = field(default_factory=dict, repr=False, compare=False)

    def confusion(self, rates: np.ndarray) -> list[Any]:
        """The space's confusion matrix for ``rates`` as nested lists, memoised.

        Every query is converted twice (shown as the next query, then logged with its answer), and the
        space validates its inputs on every call; the memo is bounded and keyed by the exact rates.
        """
        key = rates.tobytes() + bytes(str(rates.shape), "ascii")
        cached = self._confusions.get(key)
        if cached is None:
            cached = np.asarray(self.space.confusion(rates)).tolist()
            if len(self._confusions) >= CONFUSION_MEMO_SIZE:
                self._confusions.clear()
            self._confusions[key] = cached
        return cached

    def plan(self, seed: int) -> SessionPlan:
        """The session script for ``seed`` (memoised: it holds no mutable state)."""
        cached = self._plans.get(seed)
        if cached is None:
            cached = self._new_plan(seed)
            if len(self._plans) >= CONFUSION_MEMO_SIZE:
                self._plans.clear()
            self._plans[seed] = cached
        return cached

    def _new_plan(self, seed: int) -> SessionPlan:
        return SessionPlan(
            space=self.space,
            seed=seed,
            practice_queries=self.config.practice_queries,
            dominance_checks=self.config.dominance_checks if self.config.checks else 0,
            repeat_checks=self.config.repeat_checks if self.config.checks else 0,
            evaluation_queries=self.config.evaluation_queries,
            expected_queries=self.expected_queries,
            evaluation_precision=self.config.evaluation_precision,
        )


class SessionCache:
    """In-process caches: study runtimes, and the live elicitor state of recently active sessions."""

    def __init__(self, max_sessions: int = 512) -> None:
        self.max_sessions = max_sessions
        self._studies: dict[uuid.UUID, StudyRuntime] = {}
        self._live: OrderedDict[uuid.UUID, tuple[int, int, ElicitorState]] = OrderedDict()
        self._logs: OrderedDict[uuid.UUID, list[Any]] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def runtime(self, study: Study) -> StudyRuntime:
        with self._lock:
            cached = self._studies.get(study.id)
        if cached is not None:
            return cached
        return self._build_runtime(study)

    def runtime_of(self, db: Session, study_id: uuid.UUID) -> StudyRuntime:
        """The runtime of the study with this id, reading the study only when it is not cached."""
        with self._lock:
            cached = self._studies.get(study_id)
        if cached is not None:
            return cached
        study = repo.get_study(db, study_id)
        if study is None:
            raise NotFoundError()
        return self._build_runtime(study)

    def _build_runtime(self, study: Study) -> StudyRuntime:
        config = StudyConfig.model_validate(study.config)
        spec = get_algorithm(study.algorithm)
        runtime = StudyRuntime(
            study_id=study.id,
            config=config,
            space=build_space(config),
            spec=spec,
            params=spec.parse_params(config.algorithm_params),
            expected_queries=study.expected_queries,
        )
        with self._lock:
            self._studies[study.id] = runtime
        return runtime

    def take(self, session_id: uuid.UUID, n_answers: int, last_seq: int) -> ElicitorState | None:
        """Remove and return the live state if it was left at exactly this point of the log."""
        with self._lock:
            entry = self._live.pop(session_id, None)
        if entry is None or entry[0] != n_answers or entry[1] != last_seq:
            self.misses += 1
            return None
        self.hits += 1
        return entry[2]

    def put(self, session_id: uuid.UUID, n_answers: int, last_seq: int, state: ElicitorState) -> None:
        if self.max_sessions <= 0:
            return
        with self._lock:
            self._live[session_id] = (n_answers, last_seq, state)
            self._live.move_to_end(session_id)
            while len(self._live) > self.max_sessions:
                self._live.popitem(last=False)

    def take_log(self, session_id: uuid.UUID) -> list[Any] | None:
        """Remove and return the log rows last seen for this session (the caller checks for newer ones)."""
        with self._lock:
            return self._logs.pop(session_id, None)

    def put_log(self, session_id: uuid.UUID, rows: list[Any]) -> None:
        if self.max_sessions <= 0:
            return
        with self._lock:
            self._logs[session_id] = rows
            self._logs.move_to_end(session_id)
            while len(self._logs) > self.max_sessions:
                self._logs.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._live.clear()
            self._logs.clear()
            self._studies.clear()


# -- studies --------------------------------------------------------------------------------------------


def _typical_queries(spec: AlgorithmSpec, space: Any, params: BaseModel) -> int:
    """Queries a simulated participant who weighs every rate equally needs (places the checks)."""
    if spec.seeded:
        # Seeded (active) elicitors cost seconds to simulate and report their own expected_remaining live.
        return int(spec.build(space, params).max_queries)
    elicitor = build_session_elicitor(spec, space, params, seed=0)
    try:
        result = run(elicitor, lambda first, second: bool(np.sum(first) >= np.sum(second)))
    except ElicitationError:
        return int(spec.build(space, params).max_queries)
    return int(result.num_queries)


def create_study(db: Session, config: StudyConfig | dict[str, Any]) -> Study:
    """Validate ``config`` and store the study; `StudyConfigError` names any invalid field."""
    if not isinstance(config, StudyConfig):
        config = parse_study_config(config)
    spec = get_algorithm(config.algorithm)
    space = build_space(config)
    params = spec.parse_params(config.algorithm_params)
    study = Study(
        id=uuid.uuid4(),
        name=config.name,
        config=config.model_dump(mode="json"),
        algorithm=config.algorithm,
        expected_queries=_typical_queries(spec, space, params),
        open_enrolment=config.open_enrolment,
    )
    repo.add(db, study)
    db.commit()
    return study


# -- session views --------------------------------------------------------------------------------------


@dataclass
class SessionView:
    """Everything a page or the API shows about a session at one moment (after its last commit)."""

    session: ElicitationSession
    config: StudyConfig
    status: SessionStatus
    phase: str
    answered: int
    estimated_total: int
    next_seq: int
    step: Step | None
    comparison: dict[str, Any] | None
    result: Result | None
    can_undo: bool
    #: The session's parts (practice, questions, last comparisons) with how far each has got.
    sections: list[Section] = field(default_factory=list)

    @property
    def study(self) -> Study:
        """The session's study (read from the database on first use; the hot path never needs it)."""
        return self.session.study

    @property
    def redirect_url(self) -> str | None:
        if self.status is not SessionStatus.DONE or self.config.redirect_url is None:
            return None
        return str(self.config.redirect_url)

    def to_api(self) -> dict[str, Any]:
        """The JSON API shape: ``{status, phase, progress, query, result}``."""
        query = None
        if self.comparison is not None:
            query = {
                "seq": self.comparison["seq"],
                "practice": self.comparison["practice"],
                "first": self.comparison["left"],
                "second": self.comparison["right"],
            }
        result = None
        if self.result is not None:
            result = {
                "completion_code": self.session.completion_code,
                "redirect_url": self.redirect_url,
                "metric": self.result.metric,
                "num_queries": self.result.num_queries,
                "summary": self.result.summary,
                "evaluation": self.result.evaluation,
                "checks": self.result.checks,
            }
        return {
            "status": self.status.value,
            "phase": self.phase,
            "progress": {
                "answered": self.answered,
                "estimated_total": self.estimated_total,
                "sections": [asdict(section) for section in self.sections],
            },
            "query": query,
            "result": result,
        }


def _load_session(db: Session, token: str) -> ElicitationSession:
    if not _well_formed(token):
        raise NotFoundError()
    digest = hash_token(token)
    session = repo.get_session_by_token_hash(db, digest)
    if session is None or not hmac.compare_digest(session.token_hash, digest):
        raise NotFoundError()
    return session


def effective_rows(rows: Sequence[Any]) -> list[Any]:
    """The answers that stand: the log with every undone answer removed."""
    stack: list[Any] = []
    # The enum values are read once: this runs over the whole log on every request.
    answer, undo = LogAction.ANSWER.value, LogAction.UNDO.value
    for row in rows:
        if row.action == answer:
            stack.append(row)
        elif row.action == undo:
            if not stack or stack[-1].seq != row.undoes_seq:
                raise ConflictError(
                    f"log row {row.seq} undoes {row.undoes_seq}, which is not the last answer"
                )
            stack.pop()
    return stack


class _Context:
    """A session with its log loaded and its elicitor state resolved (within one request)."""

    def __init__(self, db: Session, cache: SessionCache, session: ElicitationSession) -> None:
        self.db = db
        self.cache = cache
        self.session = session
        self.runtime = cache.runtime_of(db, session.study_id)
        self.plan = self.runtime.plan(session.seed)
        self.rows = self._load_log()
        self.effective = effective_rows(self.rows)
        elicitation = Phase.ELICITATION.value
        self.elicitation = [row for row in self.effective if row.phase == elicitation]
        self.state = self._resolve()
        self._step: tuple[Step | None] | None = None

    def _load_log(self) -> list[Any]:
        """The log as light rows: cached rows plus any the database has beyond them (append-only log)."""
        rows = self.cache.take_log(self.session.id)
        if rows is None:
            return list(repo.log_entries(self.db, self.session.id))
        if len(rows) and rows[-1].seq != len(rows) - 1:
            return list(repo.log_entries(self.db, self.session.id))
        rows.extend(repo.log_entries(self.db, self.session.id, after_seq=len(rows) - 1))
        return rows

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

    def _key(self) -> tuple[int, int]:
        return len(self.elicitation), (self.elicitation[-1].seq if self.elicitation else -1)

    def _resolve(self) -> ElicitorState:
        n, last = self._key()
        state = self.cache.take(self.session.id, n, last)
        if state is None:
            state = self._replay()
        self.cache.put(self.session.id, n, last, state)
        return state

    def _replay(self) -> ElicitorState:
        """Rebuild the elicitor from the log; every regenerated query must equal its stored twin.

        The stored queries are compared after the replay, all at once (`elicitation.first_mismatch`), straight
        from their JSON (building `Query` objects for ``expected_queries`` would cost as much as the replay).
        If the elicitor fails numerically, the slow path (`replay` with ``expected_queries``) decides whether
        the log diverged first, so a mismatch is never reported as a numerical failure.
        """
        answers = [bool(row.elicitor_answer) for row in self.elicitation]
        try:
            outcome = replay(self._fresh_elicitor(), answers)
        except NumericalError as exc:
            expected = [decode_query(row.query or {}) for row in self.elicitation]
            with contextlib.suppress(NumericalError):
                replay(self._fresh_elicitor(), answers, expected_queries=expected)
            return Failed(str(exc))
        log = outcome.log if isinstance(outcome, Pending) else outcome.result.log
        _check_replayed(log, self.elicitation)
        return outcome

    def _fresh_elicitor(self) -> Any:
        runtime = self.runtime
        return build_session_elicitor(
            runtime.spec,
            runtime.space,
            runtime.params,
            seed=self.session.seed,
            version=self.session.algorithm_version,
        )

    def advance(self, row: repo.LogEntry) -> None:
        """Feed a just-committed elicitation answer to the live elicitor (or rebuild by replay)."""
        self.effective.append(row)
        self.elicitation.append(row)
        n, last = self._key()
        previous = self.cache.take(self.session.id, n - 1, self.elicitation[-2].seq if n > 1 else -1)
        state: ElicitorState | None = None
        if isinstance(previous, Pending):
            try:
                query = previous.elicitor.send(bool(row.elicitor_answer))
                state = Pending(elicitor=previous.elicitor, query=query, n_answered=n, log=())
            except StopIteration:
                state = None  # finished: replay once to get the driver's checked result with its log
            except NumericalError as exc:
                state = Failed(str(exc))
        self.state = state if state is not None else self._replay()
        self.cache.put(self.session.id, n, last, self.state)

    def step(self) -> Step | None:
        if self._step is None:
            query = self.state.query if isinstance(self.state, Pending) else None
            metric = self.state.result.metric if isinstance(self.state, Done) else None
            self._step = (self.plan.next_step(self.effective, query, metric),)
        return self._step[0]

    def view(self) -> SessionView:
        self.cache.put_log(self.session.id, self.rows)
        status = SessionStatus(self.session.status)
        step = self.step() if status is SessionStatus.ACTIVE else None
        result = repo.get_result(self.db, self.session.id) if status is SessionStatus.DONE else None
        finished = not isinstance(self.state, Pending)
        n_elicited = len(self.elicitation)
        elicitor_total = self.runtime.expected_queries
        remaining = None
        if isinstance(self.state, Pending):
            remaining = getattr(self.state.elicitor, "expected_remaining", None)
        if remaining is not None:
            # The elicitor's own stopping rule beats the study-wide estimate (active elicitors have one).
            elicitor_total = n_elicited + int(remaining)
        total = self.plan.estimated_total(n_elicited, elicitor_total, finished)
        if status is SessionStatus.INVITED:
            phase = "consent"
        elif status is SessionStatus.DONE:
            phase = "done"
        elif step is not None and step.phase is Phase.PRACTICE:
            phase = "practice"
        else:
            # Checks and evaluation pairs are deliberately not announced as different from the rest.
            phase = "questions"
        comparison = self._comparison(step) if step is not None else None
        return SessionView(
            session=self.session,
            config=self.runtime.config,
            status=status,
            phase=phase,
            answered=len(self.effective),
            estimated_total=max(total, len(self.effective)),
            next_seq=self.next_seq,
            step=step,
            comparison=comparison,
            result=result,
            can_undo=status is SessionStatus.ACTIVE and bool(self.effective),
            sections=self.plan.sections(self.effective, elicitor_total, finished, step),
        )

    def _side(self, rates: np.ndarray) -> dict[str, Any]:
        return {
            "rates": rates.tolist(),
            "confusion": self.runtime.confusion(np.asarray(rates, dtype=np.float64)),
        }

    def _comparison(self, step: Step) -> dict[str, Any]:
        return {
            "seq": self.next_seq,
            "left": self._side(step.left),
            "right": self._side(step.right),
            "class_names": list(self.runtime.space.class_names),
            "group_names": list(self.runtime.space.group_names),
            "population": self.runtime.config.population,
            "practice": step.phase is Phase.PRACTICE,
        }

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
            summary = plain_summary(metric, space.class_names, config.population)
        else:
            message = self.state.message if isinstance(self.state, Failed) else "elicitation did not finish"
            metric_json = {"type": "failed", "reason": message}
            num_queries = len(self.elicitation)
            details = {}
            evaluation = {"pairs": len(pairs), "elicited": None}
            summary = (
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
        self.session.status = SessionStatus.DONE.value
        self.session.finished_at = utcnow()
        self.session.completion_code = _completion_code()
        self.db.add(result)
        try:
            self.db.commit()
        except IntegrityError:
            # Another request finished the same session first; its committed result stands.
            self.db.rollback()
            self.db.refresh(self.session)


def _flat(first: Any, second: Any) -> np.ndarray:
    return np.concatenate(
        [np.ravel(np.asarray(first, dtype=np.float64)), np.ravel(np.asarray(second, dtype=np.float64))]
    )


def _check_replayed(log: Sequence[tuple[Query, bool]], rows: Sequence[Any]) -> None:
    """Raise `ReplayMismatchError` unless each regenerated query matches its stored one (``REPLAY_ATOL``)."""
    if len(log) != len(rows):
        raise ReplayMismatchError(f"replay produced {len(log)} queries but the log holds {len(rows)} answers")
    if not rows:
        return
    try:
        index = first_mismatch(
            [query for query, _answer in log],
            [row.query["first"] for row in rows],
            [row.query["second"] for row in rows],
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ReplayMismatchError(f"the stored queries do not have the regenerated shape: {exc}") from None
    if index is not None:
        raise ReplayMismatchError(
            f"replayed query {index} (log seq {rows[index].seq}) differs from the logged one; the session "
            "was recorded with a different configuration or algorithm version"
        )


def _completion_code() -> str:
    raw = secrets.token_hex(5).upper()
    return f"{raw[:5]}-{raw[5:]}"


def _context(db: Session, cache: SessionCache, token: str) -> _Context:
    return _Context(db, cache, _load_session(db, token))


# -- use cases ------------------------------------------------------------------------------------------


def create_session(
    db: Session,
    cache: SessionCache,
    study_id: str | uuid.UUID,
    *,
    participant_code: str | None = None,
    consented: bool = False,
    require_open: bool = True,
    commit: bool = True,
) -> tuple[ElicitationSession, str]:
    """Create a session of an (open-enrolment) study; returns it and its secret token (shown once).

    ``commit=False`` leaves the new row in the caller's transaction (a batch of invitations is one commit).
    """
    try:
        key = study_id if isinstance(study_id, uuid.UUID) else uuid.UUID(str(study_id))
    except ValueError:
        raise NotFoundError() from None
    study = repo.get_study(db, key)
    if study is None or (require_open and not study.open_enrolment):
        raise NotFoundError()
    if require_open:
        check_enrolment(db, study)
    runtime = cache.runtime(study)
    token = new_token()
    now = utcnow()
    session = ElicitationSession(
        id=uuid.uuid4(),
        study_id=study.id,
        token_hash=hash_token(token),
        participant_code=participant_code,
        seed=secrets.randbits(63),
        algorithm=study.algorithm,
        algorithm_version=session_version(runtime.spec),
        status=(SessionStatus.ACTIVE if consented else SessionStatus.INVITED).value,
        created_at=now,
        consented_at=now if consented else None,
    )
    repo.add(db, session)
    if commit:
        db.commit()
    return session, token


def get_view(db: Session, cache: SessionCache, token: str) -> SessionView:
    """The session's current state; finishes it first if its last answer completed it."""
    context = _context(db, cache, token)
    context.finalize_if_complete()
    return context.view()


def consent(db: Session, cache: SessionCache, token: str) -> SessionView:
    """Record consent (idempotent): from now on the session counts and its questions start."""
    context = _context(db, cache, token)
    if context.session.status == SessionStatus.INVITED.value:
        check_enrolment(db, context.session.study, context.session)
        context.session.status = SessionStatus.ACTIVE.value
        context.session.consented_at = utcnow()
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
    time_on_page_ms: int | None = None,
    hidden_ms: int | None = None,
) -> SessionView:
    """Record the answer to the query shown at ``seq`` and return the state with the next query.

    A repeat of an already recorded answer (double click, retry, second tab) changes nothing; a different
    answer to an answered ``seq``, or a ``seq`` that was never shown, raises `ConflictError` with the
    current state. The answer is committed before the next query is computed.
    """
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
    try:
        repo.insert_answer(db, values)
        db.commit()
    except IntegrityError:
        # A concurrent request recorded this seq first: answer as if this were the repeat it is.
        db.rollback()
        return submit_answer(
            db,
            cache,
            token,
            seq=seq,
            preferred=preferred,
            time_on_page_ms=time_on_page_ms,
            hidden_ms=hidden_ms,
        )
    context.append(repo.LogEntry.of(values))
    context.finalize_if_complete()
    return context.view()


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
        "shown": {"left": context._side(step.left), "right": context._side(step.right)},
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
        db.rollback()
        return undo(db, cache, token, seq=seq)
    # Hand the log back so the fresh context only reads the undo row, then recompute from the shorter log.
    cache.put_log(context.session.id, context.rows)
    return _context(db, cache, token).view()


def decode_result_metric(result: Result) -> Any:
    """The stored metric object of a result (None when elicitation failed)."""
    if result.metric.get("type") == "failed":
        return None
    return decode_metric(result.metric)


def query_of(row: Answer) -> Query | None:
    """The stored query (elicitor order) of a log row."""
    return None if row.query is None else decode_query(row.query)
