"""Speculative next questions: an active elicitor's two possible next states, computed while its participant
thinks, so that the answer request only takes the one the answer chose.

A participant looks at a question for seconds; the server is idle for that session meanwhile, and the
active elicitor's step after the answer (the posterior update, a rejuvenation now and then, the next
question's search) was most of an answer request. After a request leaves an active elicitor waiting for an
answer, it hands `Speculator` the elicitor's checkpoint (`elicitation.active.ActiveElicitor.checkpoint`,
bit-exact); one background thread saves that checkpoint beside the log (`checkpoints.save_blob`: it is never
the truth, only a shortcut, so a crash may lose it) and restores it twice, feeding one copy the answer
"first" and the other "second". The two states go to the `SessionCache`, keyed by where the live elicitor
stood (elicitor answers, seq of the last one, the study's configuration version) and the answer. An answer
request whose answer row is committed takes the matching branch instead of computing it; anything that does
not match exactly (another worker, an undo, a configuration change, an evicted entry, a branch not finished
yet) takes the ordinary path. A branch is the very state the ordinary path would compute from the same
checkpointed state, so a session asks the same questions and ends with the same result either way.

The background stays out of the way of the requests it serves: it starts a branch only when this process has
served no request for `QUIET_S` (`app.server.RequestCounter`; a checkpoint's save waits at most
`SAVE_PATIENCE_S` for none in flight, and a branch waiting for quiet steps aside for any save queued
meanwhile, so a server that is never idle still keeps every session's checkpoint current), and a request
never waits for a branch to finish (one that arrives
while a branch runs shares the interpreter with it until the branch ends). At most one job per session is
queued (a newer one replaces it), so the queue never holds more work than sessions waiting for their
participant.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from sqlalchemy.orm import Session

from elicitation import ElicitationError, Pending
from elicitation.active import ActiveElicitor

from ..codec import encode_query
from . import checkpoints
from .replay import replay_verified
from .runtime import Branch, ElicitorState, Failed, SessionCache, StudyRuntime

__all__ = ["ANSWERS", "IDLE_POLL_S", "QUIET_S", "SAVE_PATIENCE_S", "SessionCopy", "Speculator"]

logger = logging.getLogger("app.sessions.speculation")

#: The two answers a pending question can get, in the order their branches are computed.
ANSWERS = (True, False)
#: How often the background looks again whether the requests in flight have finished.
IDLE_POLL_S = 0.002
#: How long the server must have served no request before a branch starts: a branch cannot be interrupted,
#: and requests that follow each other closely (a client answering at once, a page and its next request)
#: would wait for the interpreter while it runs; a person thinks for seconds, so starting later costs
#: nothing.
QUIET_S = 0.02
#: Longest a checkpoint's save waits for the requests in flight to end: a server that is never idle still
#: saves them (they spare a session's last answer, a restart or another worker the replay of its log), at
#: the cost they had in the requests before (the checkpoint is already encoded, only its write is left).
SAVE_PATIENCE_S = 0.05
#: A background thread with nothing queued for this long ends; the next job starts another.
THREAD_IDLE_EXIT_S = 30.0


@dataclass(frozen=True)
class SessionCopy:
    """What a session's checkpoint and elicitor are bound to, copied from its row in the request (the ORM
    row stays in the request's thread and transaction)."""

    id: uuid.UUID
    seed: int
    algorithm: str
    algorithm_version: str | None

    @classmethod
    def of(cls, session: checkpoints.RecordedSession) -> SessionCopy:
        return cls(session.id, session.seed, session.algorithm, session.algorithm_version)


@dataclass(frozen=True)
class _Job:
    """A live active elicitor's checkpoint after ``rows``, to save (``save``) and to branch from."""

    session: SessionCopy
    runtime: StudyRuntime
    rows: tuple[Any, ...]
    checkpoint: bytes
    save: bool

    @property
    def key(self) -> tuple[int, int]:
        return len(self.rows), (self.rows[-1].seq if self.rows else -1)


class Speculator:
    """One background thread that saves checkpoints and computes the branches of waiting sessions."""

    def __init__(
        self,
        cache: SessionCache,
        sessionmaker: Callable[[], Session],
        busy: Callable[[float], bool],
    ) -> None:
        self.cache = cache
        self.sessionmaker = sessionmaker
        self.busy = busy
        self._jobs: OrderedDict[uuid.UUID, _Job] = OrderedDict()
        self._condition = threading.Condition()
        self._thread: threading.Thread | None = None
        self._working = False
        self._stopped = False
        #: Branches computed, and the background's own CPU seconds (`time.thread_time`).
        self.branches_computed = 0
        self.cpu_seconds = 0.0

    # -- the request's side ---------------------------------------------------------------------------------

    def schedule(
        self,
        session: checkpoints.RecordedSession,
        runtime: StudyRuntime,
        rows: Sequence[Any],
        state: ElicitorState,
        *,
        checkpoint: bytes | None = None,
        save: bool = True,
    ) -> bool:
        """Queue ``state`` (after the elicitation ``rows``) for a checkpoint's save and its two branches.

        Only an active elicitor waiting for an answer has them; ``checkpoint`` is its checkpoint when the
        caller has it already (a taken branch's), else it is taken here, in the request: the live state is
        the request's until it returns. True if a job was queued.
        """
        if checkpoint is None:
            checkpoint = checkpoints.encoded(state)
            if checkpoint is None:
                return False
        job = _Job(SessionCopy.of(session), runtime, tuple(rows), checkpoint, save)
        with self._condition:
            if self._stopped:
                return False
            self._jobs[job.session.id] = job
            self._jobs.move_to_end(job.session.id)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="speculation", daemon=True)
                self._thread.start()
            self._condition.notify()
        return True

    def wait_until_idle(self, timeout: float = 30.0) -> bool:
        """Block until every queued job is done (tests and benchmarks: a participant's think time); False
        if ``timeout`` seconds passed first."""
        deadline = time.monotonic() + timeout
        with self._condition:
            while self._jobs or self._working:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._condition.wait(remaining)
        return True

    def stop(self, timeout: float = 5.0) -> None:
        """Drop the queued jobs and end the thread (the app's shutdown)."""
        with self._condition:
            self._stopped = True
            self._jobs.clear()
            thread = self._thread
            self._condition.notify_all()
        if thread is not None:
            thread.join(timeout)

    # -- the background -------------------------------------------------------------------------------------

    def _run(self) -> None:
        started = time.thread_time()
        try:
            while True:
                with self._condition:
                    self._working = False
                    self._condition.notify_all()
                    if not self._jobs and not self._stopped:
                        self._condition.wait(THREAD_IDLE_EXIT_S)
                    if self._stopped or not self._jobs:
                        self._thread = None
                        return
                    _, job = self._jobs.popitem(last=False)
                    self._working = True
                try:
                    self._work(job)
                except Exception:  # background work may cost time, never a request
                    logger.exception("session %s: speculation failed", job.session.id)
                finally:
                    now = time.thread_time()
                    self.cpu_seconds += now - started
                    started = now
        finally:
            with self._condition:
                self._working = False
                self._condition.notify_all()

    def _wait_for_no_request_in_flight(self) -> None:
        """Return once no request is in flight, or after `SAVE_PATIENCE_S` anyway."""
        deadline = time.monotonic() + SAVE_PATIENCE_S
        while self.busy(0.0) and not self._stopped and time.monotonic() < deadline:
            time.sleep(IDLE_POLL_S)

    def _wait_for_quiet_unless_saves_wait(self) -> bool:
        """Wait until no request has been in flight for `QUIET_S`; False as soon as a queued job has a
        checkpoint to save (saves do not wait for a quiet server, so they must not wait behind a branch)."""
        while self.busy(QUIET_S) and not self._stopped:
            with self._condition:
                if any(queued.save for queued in self._jobs.values()):
                    return False
            time.sleep(IDLE_POLL_S)
        return True

    def _requeue_branches(self, job: _Job) -> None:
        """Put ``job``'s branches back at the end of the queue (its checkpoint is saved), unless a newer job
        for its session replaced it meanwhile."""
        with self._condition:
            if job.session.id not in self._jobs and not self._stopped:
                self._jobs[job.session.id] = dataclasses.replace(job, save=False)

    def _current(self, job: _Job) -> bool:
        """Whether the job still stands: no newer one queued, and the session's live state where it was."""
        with self._condition:
            if job.session.id in self._jobs or self._stopped:
                return False
        return self.cache.live_at(job.session.id, *job.key)

    def _work(self, job: _Job) -> None:
        if job.save:
            self._wait_for_no_request_in_flight()
            with self.sessionmaker() as db:
                checkpoints.save_blob(db, job.runtime, job.session, list(job.rows), job.checkpoint)
        for answer in ANSWERS:
            if not self._wait_for_quiet_unless_saves_wait():
                self._requeue_branches(job)
                return
            if not self._current(job):
                return
            branch = self._branch(job, answer)
            self.branches_computed += 1
            self.cache.put_branch(job.session.id, *job.key, job.runtime.config_version, answer, branch)

    def _restored(self, job: _Job) -> ActiveElicitor[Any]:
        fresh = job.runtime.elicitor(job.session.seed, job.session.algorithm_version)
        restored: ActiveElicitor[Any] = fresh.restore(job.checkpoint)
        return restored

    def _branch(self, job: _Job, answer: bool) -> Branch:
        """The state after ``answer``, as `service._Context.advance` computes it from the live state (when the
        answer finishes the elicitation: as its rebuild from a checkpoint at this point does)."""
        elicitor = self._restored(job)
        pending = next(elicitor)  # a restored elicitor first asks the question it was waiting on
        try:
            query = elicitor.send(answer)
        except StopIteration:
            answered = _AnsweredRow(job.key[1] + 1, answer, encode_query(pending))
            rows = [*job.rows, answered]
            done = replay_verified(lambda: self._restored(job), rows, after=len(job.rows))
            return Branch(done, None, answered_query=answered.query)
        except ElicitationError as exc:
            return Branch(Failed.of(exc), None)
        n = len(job.rows) + 1
        return Branch(Pending(elicitor=elicitor, query=query, n_answered=n, log=()), elicitor.checkpoint())


class _AnsweredRow(NamedTuple):
    """The elicitation row an answer to the pending question will be logged as (what the replay reads)."""

    seq: int
    elicitor_answer: bool
    query: dict[str, Any]
