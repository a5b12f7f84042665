"""Per-process state of the participant app: each study's runtime, and recently active sessions' elicitors.

A session's state is the replay of its answer log; `SessionCache` may hold the live elicitor for
``(session, number of elicitor answers, seq of the last one)`` and the light log rows last read, but an entry
is used only when it matches the log, so correctness never depends on it.
"""

from __future__ import annotations

import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
from pydantic import BaseModel
from sqlalchemy.orm import Session

from elicitation import Done, ElicitationError, Pending

from .. import repository as repo
from ..algorithms import AlgorithmSpec, get_algorithm
from ..charts.comparison import displayed_numbers
from ..errors import NotFoundError
from ..explain import MetricWords
from ..i18n import ENGLISH, Translator
from ..metric_views import stored_metric_words
from ..models import Study
from ..plan import Screens, SessionPlan, Step
from ..study_config import StudyConfig, build_space
from .displayed import build_session_elicitor, session_screens

__all__ = [
    "AHEAD",
    "CONFUSION_MEMO_SIZE",
    "IN_REQUEST",
    "RESUME_SOURCES",
    "WARM_STUDIES",
    "Branch",
    "ElicitorState",
    "Failed",
    "SessionCache",
    "Speculation",
    "StudyRuntime",
    "study_runtime",
]

#: Where a request's elicitor state comes from: the live elicitor in this process, the session's checkpoint
#: (continued by the answers after it), or a replay of the whole log.
RESUME_SOURCES = ("cache", "checkpoint", "replay")
#: How an active elicitor's answer got its next state in a process that held its live state: computed ahead
#: while the participant thought (`app.sessions.speculation`), or in the answer's own request.
AHEAD = "ahead"
IN_REQUEST = "in_request"
#: Confusion matrices remembered per study (two per query; a session has a few hundred queries), and as many
#: questions' displayed counts.
CONFUSION_MEMO_SIZE = 4096
#: Open studies whose runtimes a process builds when it starts (`SessionCache.warm_up`), newest first.
WARM_STUDIES = 32


@dataclass(frozen=True)
class Failed:
    """The elicitor could not go on (an `ElicitationError`: e.g. a singular system from contradictory
    answers); the session ends early with the answers it has, and ``message`` is the reason recorded."""

    message: str

    @classmethod
    def of(cls, error: ElicitationError) -> Failed:
        """The failure ``error`` stands for, its kind named for the coordinator."""
        return cls(f"{type(error).__name__}: {error}")


ElicitorState = Pending[Any] | Done[Any] | Failed


@dataclass(frozen=True)
class Branch:
    """An elicitor state after one more answer, computed ahead (`app.sessions.speculation`), and its
    checkpoint when it is an active elicitor waiting for the next (taken with it, so that nobody touches the
    state once a request owns it)."""

    state: ElicitorState
    checkpoint: bytes | None
    #: For a state that finished the elicitation: the stored query (JSON) its answer must have answered (the
    #: result was checked against it, as the replay checks a log).
    answered_query: dict[str, Any] | None = None


class Speculation(Protocol):
    """What a request hands a state it computed to (`app.sessions.speculation.Speculator`)."""

    def schedule(
        self,
        session: Any,
        runtime: StudyRuntime,
        rows: Sequence[Any],
        state: ElicitorState,
        *,
        checkpoint: bytes | None = None,
        save: bool = True,
    ) -> bool: ...


@dataclass(frozen=True)
class StudyRuntime:
    """What serving a study needs, built once per process from its stored configuration."""

    study_id: uuid.UUID
    config: StudyConfig
    space: Any
    spec: AlgorithmSpec
    params: BaseModel
    expected_queries: int
    #: The study's configuration version this runtime was built from (see `SessionCache.forget_study`).
    config_version: int = 0
    _confusions: dict[bytes, list[Any]] = field(default_factory=dict, repr=False, compare=False)
    _plans: dict[tuple[int, Screens], SessionPlan] = field(default_factory=dict, repr=False, compare=False)
    _shown: dict[bytes, tuple[list[Any], list[Any], int]] = field(
        default_factory=dict, repr=False, compare=False
    )

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

    def displayed(self, left: np.ndarray, right: np.ndarray) -> tuple[list[Any], list[Any], int]:
        """A question's two classifiers' counts as it shows them, as JSON numbers, and their decimals
        (`displayed_numbers` of their `confusion` matrices), memoised like them.

        Participants of a study are asked many of the same pairs (the elicitor's early questions, and a
        grid's few points later), and rounding a pair together costs more than the rest of its view.
        """
        key = left.tobytes() + right.tobytes() + bytes(str(left.shape), "ascii")
        cached = self._shown.get(key)
        if cached is None:
            cached = displayed_numbers(self.confusion(left), self.confusion(right))
            if len(self._shown) >= CONFUSION_MEMO_SIZE:
                self._shown.clear()
            self._shown[key] = cached
        return cached

    def elicitor(self, seed: int, version: str | None) -> Any:
        """A fresh elicitor for a session of this study recorded with ``seed`` and algorithm ``version``."""
        return build_session_elicitor(self.spec, self.space, self.params, seed=seed, version=version)

    def plan(self, seed: int, version: str | None = None) -> SessionPlan:
        """The session script for ``seed`` and the algorithm ``version`` the session recorded (None: a new
        session's), memoised: it holds no mutable state."""
        screens = session_screens(version)
        cached = self._plans.get((seed, screens))
        if cached is None:
            cached = self._new_plan(seed, screens)
            if len(self._plans) >= CONFUSION_MEMO_SIZE:
                self._plans.clear()
            self._plans[(seed, screens)] = cached
        return cached

    def _new_plan(self, seed: int, screens: Screens) -> SessionPlan:
        return SessionPlan(
            screens=screens,
            space=self.space,
            seed=seed,
            practice_queries=self.config.practice_queries,
            dominance_checks=self.config.dominance_checks if self.config.checks else 0,
            repeat_checks=self.config.repeat_checks if self.config.checks else 0,
            evaluation_queries=self.config.evaluation_queries,
            expected_queries=self.expected_queries,
            evaluation_precision=self.config.evaluation_precision,
            region=self.region,
        )

    @property
    def region(self) -> Any:
        """Where the study's questions sit: the common sphere, or one sphere per group."""
        return self.spec.algorithm.query_region(self.space)

    def words(
        self, metric: Mapping[str, Any], details: Mapping[str, Any] | None, tr: Translator = ENGLISH
    ) -> MetricWords | None:
        """A session's stored metric in plain words, read in this study's space (None for a failed one).

        The result page, the API, the exports and the back office all read a result's words (and the
        intervals of the numbers they state) here.
        """
        group_shares = getattr(self.params, "group_shares", None)
        population = self.config.population
        return stored_metric_words(metric, details, self.space, population, group_shares, tr)


def study_runtime(study: Study) -> StudyRuntime:
    """A study's runtime built from its stored configuration (`SessionCache.runtime` keeps one per study)."""
    config = StudyConfig.model_validate(study.config)
    spec = get_algorithm(study.algorithm)
    return StudyRuntime(
        study_id=study.id,
        config=config,
        space=build_space(config),
        spec=spec,
        params=spec.parse_params(config.algorithm_params),
        expected_queries=study.expected_queries,
        config_version=study.config_version,
    )


class SessionCache:
    """In-process caches: study runtimes, the live elicitor state of recently active sessions, and the
    speculative next states of those waiting for an answer (`app.sessions.speculation`).

    Every per-session map is a least-recently-used one of at most ``max_sessions`` sessions.
    """

    def __init__(self, max_sessions: int = 512) -> None:
        self.max_sessions = max_sessions
        self._studies: dict[uuid.UUID, StudyRuntime] = {}
        self._live: OrderedDict[uuid.UUID, tuple[int, int, ElicitorState]] = OrderedDict()
        self._logs: OrderedDict[uuid.UUID, list[Any]] = OrderedDict()
        # Per session: (elicitor answers, seq of the last one) -> (elicitor questions expected, finished).
        self._progress: OrderedDict[uuid.UUID, tuple[int, int, int, bool]] = OrderedDict()
        # Per session: (runtime, log rows) -> the step the plan shows next (`step_at`).
        self._steps: OrderedDict[uuid.UUID, tuple[StudyRuntime, int, Step | None]] = OrderedDict()
        # Per session: (elicitor answers, seq of the last one, configuration version) -> answer -> branch.
        self._branches: OrderedDict[uuid.UUID, tuple[int, int, int, dict[bool, Branch]]] = OrderedDict()
        self._lock = threading.Lock()
        #: Computes the branches in the background (None: every answer computes its own next state).
        self.speculator: Speculation | None = None
        #: Active elicitors' answers whose next state was a branch computed ahead, and those that computed
        #: their own (no branch ready; counted while a speculator runs).
        self.branches_taken = 0
        self.branches_missed = 0
        #: Called with `AHEAD` or `IN_REQUEST` for each of them (the app counts them for Prometheus).
        self.on_active_answer: Callable[[str], None] | None = None
        self.hits = 0
        self.misses = 0
        #: How request states were obtained: from this cache, from a checkpoint, or by a full replay.
        self.resumes: dict[str, int] = dict.fromkeys(RESUME_SOURCES, 0)
        #: Called with the source of each resume (the app counts them for Prometheus).
        self.on_resume: Callable[[str], None] | None = None

    def _remember(self, recent: OrderedDict[uuid.UUID, Any], session_id: uuid.UUID, value: Any) -> None:
        """Put ``value`` last in ``recent``, one of the per-session maps, and drop its least recently used
        sessions beyond ``max_sessions`` (the caller holds the lock)."""
        recent[session_id] = value
        recent.move_to_end(session_id)
        while len(recent) > self.max_sessions:
            recent.popitem(last=False)

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
        runtime = study_runtime(study)
        with self._lock:
            self._studies[study.id] = runtime
        return runtime

    def warm_up(self, db: Session) -> None:
        """Build the runtimes of the open studies (at most `WARM_STUDIES`) and run a participant request's
        reads once (on no session), so that the first participant request after a start pays for neither.

        SQLAlchemy compiles a statement on its first use; with the study's runtime (its query space and
        algorithm) that was about half of the first request for a session after a restart.
        """
        for study in repo.open_studies(db, WARM_STUDIES):
            self.runtime(study)
        nobody = uuid.UUID(int=0)
        repo.session_by_token_hash(db, "")
        repo.log_entries(db, nobody)
        repo.get_checkpoint(db, nobody)

    def take(self, session_id: uuid.UUID, n_answers: int, last_seq: int) -> ElicitorState | None:
        """Remove and return the live state if it was left at exactly this point of the log."""
        with self._lock:
            entry = self._live.pop(session_id, None)
        if entry is None or entry[0] != n_answers or entry[1] != last_seq:
            self.misses += 1
            return None
        self.hits += 1
        return entry[2]

    def live_at(self, session_id: uuid.UUID, n_answers: int, last_seq: int) -> bool:
        """Whether the session's live state stands at exactly this point of its log (no request has it)."""
        with self._lock:
            entry = self._live.get(session_id)
        return entry is not None and entry[0] == n_answers and entry[1] == last_seq

    def put_branch(
        self,
        session_id: uuid.UUID,
        n_answers: int,
        last_seq: int,
        config_version: int,
        answer: bool,
        branch: Branch,
    ) -> bool:
        """Keep ``branch``, the state after ``answer`` to the question the live state waits on at this point
        of the log, if the live state still stands there; True if kept."""
        if self.max_sessions <= 0:
            return False
        with self._lock:
            live = self._live.get(session_id)
            if live is None or live[0] != n_answers or live[1] != last_seq:
                return False
            entry = self._branches.get(session_id)
            if entry is None or entry[:3] != (n_answers, last_seq, config_version):
                entry = (n_answers, last_seq, config_version, {})
            entry[3][answer] = branch
            self._remember(self._branches, session_id, entry)
        return True

    def take_branch(
        self, session_id: uuid.UUID, n_answers: int, last_seq: int, config_version: int, answer: bool
    ) -> Branch | None:
        """Remove the session's branches and return the one for ``answer`` if they were computed from the
        state at exactly this point of the log, under this configuration version."""
        with self._lock:
            entry = self._branches.pop(session_id, None)
        if entry is not None and entry[:3] == (n_answers, last_seq, config_version):
            return entry[3].get(answer)
        return None

    def count_active_answer(self, ahead: bool) -> None:
        """Note whether an active elicitor's answer took a state computed ahead, or computed its own."""
        with self._lock:
            if ahead:
                self.branches_taken += 1
            else:
                self.branches_missed += 1
        if self.on_active_answer is not None:
            self.on_active_answer(AHEAD if ahead else IN_REQUEST)

    def count_resume(self, source: str) -> None:
        """Note how a request's elicitor state was obtained (one of `RESUME_SOURCES`)."""
        with self._lock:
            self.resumes[source] += 1
        if self.on_resume is not None:
            self.on_resume(source)

    def put(self, session_id: uuid.UUID, n_answers: int, last_seq: int, state: ElicitorState) -> None:
        if self.max_sessions <= 0:
            return
        with self._lock:
            self._remember(self._live, session_id, (n_answers, last_seq, state))

    def offer(self, session_id: uuid.UUID, n_answers: int, last_seq: int, state: ElicitorState) -> None:
        """Keep a state rebuilt outside the participant's requests, unless the session already has one
        (which may be newer: the participant's own request never waits for, or loses to, an onlooker)."""
        if self.max_sessions <= 0:
            return
        with self._lock:
            if session_id in self._live:
                return
        self.put(session_id, n_answers, last_seq, state)

    def note_progress(
        self, session_id: uuid.UUID, n_answers: int, last_seq: int, elicitor_total: int, finished: bool
    ) -> None:
        """Remember how many elicitor questions the session is expected to take at this point of its log
        (plain numbers: the dashboard reads them without touching a live elicitor another request uses)."""
        if self.max_sessions <= 0:
            return
        with self._lock:
            self._remember(self._progress, session_id, (n_answers, last_seq, elicitor_total, finished))

    def progress(self, session_id: uuid.UUID, n_answers: int, last_seq: int) -> tuple[int, bool] | None:
        """(elicitor questions expected, finished) noted at exactly this point of the log, else None."""
        with self._lock:
            entry = self._progress.get(session_id)
        if entry is None or entry[0] != n_answers or entry[1] != last_seq:
            return None
        return entry[2], entry[3]

    def note_step(self, session_id: uuid.UUID, runtime: StudyRuntime, n_rows: int, step: Step | None) -> None:
        """Remember the step the session's plan shows after its first ``n_rows`` log rows under ``runtime``.

        A step is a function of the study's configuration (its runtime), the session's seed and its log,
        which only ever grows: a session's answer request shows the step its previous request computed,
        so remembering it saves computing it twice.
        """
        if self.max_sessions <= 0:
            return
        with self._lock:
            self._remember(self._steps, session_id, (runtime, n_rows, step))

    def step_at(self, session_id: uuid.UUID, runtime: StudyRuntime, n_rows: int) -> tuple[Step | None] | None:
        """The step noted for exactly this runtime and number of log rows, as a 1-tuple (None: not noted)."""
        with self._lock:
            entry = self._steps.get(session_id)
        if entry is None or entry[0] is not runtime or entry[1] != n_rows:
            return None
        return (entry[2],)

    def take_log(self, session_id: uuid.UUID) -> list[Any] | None:
        """Remove and return the log rows last seen for this session (the caller checks for newer ones)."""
        with self._lock:
            return self._logs.pop(session_id, None)

    def put_log(self, session_id: uuid.UUID, rows: list[Any]) -> None:
        if self.max_sessions <= 0:
            return
        with self._lock:
            self._remember(self._logs, session_id, rows)

    def forget_study(self, study_id: uuid.UUID) -> None:
        """Drop the study's runtime: its configuration changed (the next request builds the new one)."""
        with self._lock:
            self._studies.pop(study_id, None)

    def clear(self) -> None:
        with self._lock:
            self._live.clear()
            self._logs.clear()
            self._progress.clear()
            self._steps.clear()
            self._branches.clear()
            self._studies.clear()
