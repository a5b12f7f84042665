"""HTML pages of the participant's path: join/consent, instructions, questions, thank-you."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Any, Literal
from urllib.parse import urlencode

from fastapi import APIRouter, Form, Request
from fastapi.responses import RedirectResponse, Response
from pydantic import BaseModel, BeforeValidator, Field
from sqlalchemy.orm import Session

from .. import sessions
from ..charts.comparison import comparison_view
from ..deps import CacheDep, DbSessionDep
from ..embedding import allow_framing, cookie_in_frames, set_partitioned_cookie
from ..errors import AppError, ConflictError
from ..explain import MetricWords
from ..i18n import N_, Catalogues, Translator, negotiate
from ..metric_views import participant_figures
from ..models import AnswerChannel, SessionStatus
from ..panels import PanelValues, panel_values
from ..planning import StudyEstimate, study_estimate
from ..study_config import StudyConfig

__all__ = ["router"]

router = APIRouter(include_in_schema=False)

#: The consent form sent without its box ticked (translated where the form is rendered).
_CONSENT_MISSING = N_("Please tick the box to confirm that you agree to take part.")


def _blank_to_none(value: Any) -> Any:
    return None if value == "" else value


OptionalMs = Annotated[int | None, BeforeValidator(_blank_to_none), Field(default=None, ge=0)]


class AnswerForm(BaseModel):
    seq: int = Field(ge=0)
    preferred: Literal["first", "second", "tie"]
    time_on_page_ms: OptionalMs = None
    hidden_ms: OptionalMs = None


class UndoForm(BaseModel):
    seq: int | None = Field(default=None, ge=0)


class JoinForm(BaseModel):
    consent: Literal["yes"] | None = None
    participant_code: Annotated[str | None, BeforeValidator(_blank_to_none), Field(max_length=200)] = None


def use_language(request: Request, config: StudyConfig) -> None:
    """Pages of this request (and its error page) speak one of the study's languages: the one chosen with
    the page's switcher (``?lang=``, then remembered in a cookie), else the browser's preferred one among
    those the study offers, else the study's own."""
    offered = config.offered_languages
    chosen = request.query_params.get(LANGUAGE_PARAMETER)
    if chosen in offered:
        request.state.remember_language = chosen
    else:
        chosen = request.cookies.get(LANGUAGE_COOKIE)
        if chosen not in offered:
            chosen = negotiate(request.headers.get("accept-language"), offered, default=config.language)
    request.state.language = chosen
    request.state.languages = offered if len(offered) > 1 else []
    request.state.frames = _in_frames(request, config)


def _translator(request: Request) -> Translator:
    """The translations of the language `use_language` chose for this request."""
    catalogues: Catalogues = request.app.state.catalogues
    return catalogues.translations(getattr(request.state, "language", None) or "")


def _render(request: Request, template: str, context: dict[str, Any], status_code: int = 200) -> Response:
    templates = request.app.state.templates
    response: Response = templates.TemplateResponse(request, template, context, status_code=status_code)
    chosen = getattr(request.state, "remember_language", None)
    if chosen is not None:
        # The language picked with the switcher stays on the next pages (after an answer, on return).
        if getattr(request.state, "frames", False):
            set_partitioned_cookie(
                response, LANGUAGE_COOKIE, chosen, max_age=LANGUAGE_COOKIE_MAX_AGE, path="/"
            )
        else:
            response.set_cookie(
                LANGUAGE_COOKIE,
                chosen,
                max_age=LANGUAGE_COOKIE_MAX_AGE,
                path="/",
                secure=request.url.scheme == "https",
                httponly=True,
                samesite="lax",
            )
    return response


def _see_other(url: str) -> RedirectResponse:
    return RedirectResponse(url, status_code=303)


#: The cookie that remembers a participant's session in this browser, one per study (scoped to the
#: study's own join path, so that no other page and no other study ever receives it).
#: The page language a participant picked with the switcher (``?lang=<code>``), remembered for a year.
LANGUAGE_PARAMETER = "lang"
LANGUAGE_COOKIE = "participant_language"
LANGUAGE_COOKIE_MAX_AGE = 365 * 24 * 3600
PARTICIPANT_COOKIE = "participant_session"
#: How long a browser remembers its session (seconds): long enough for a study's fieldwork.
PARTICIPANT_COOKIE_MAX_AGE = 90 * 24 * 3600


def _study_path(study_id: uuid.UUID) -> str:
    return f"/studies/{study_id}"


def _in_frames(request: Request, config: StudyConfig) -> bool:
    """Whether the study's cookie must work inside another site's frame (and can: https or loopback)."""
    return bool(config.frame_ancestors) and cookie_in_frames(request)


def _remember(
    response: Response, request: Request, study_id: uuid.UUID, token: str, config: StudyConfig
) -> Response:
    """Let the study's join link in this browser continue this session (HttpOnly).

    SameSite=Lax, or for a study that other sites may frame, SameSite=None; Secure; Partitioned (a Lax
    cookie is never sent inside a cross-site frame).
    """
    path = _study_path(study_id)
    if _in_frames(request, config):
        set_partitioned_cookie(
            response, PARTICIPANT_COOKIE, token, max_age=PARTICIPANT_COOKIE_MAX_AGE, path=path
        )
    else:
        response.set_cookie(
            PARTICIPANT_COOKIE,
            token,
            max_age=PARTICIPANT_COOKIE_MAX_AGE,
            path=path,
            secure=request.url.scheme == "https",
            httponly=True,
            samesite="lax",
        )
    return allow_framing(response, config.frame_ancestors)


def _page(
    request: Request, template: str, context: dict[str, Any], config: StudyConfig, status_code: int = 200
) -> Response:
    """A participant page of a study: framed only by the origins the study allows."""
    return allow_framing(_render(request, template, context, status_code), config.frame_ancestors)


@contextmanager
def _framed_errors(config: StudyConfig) -> Iterator[None]:
    """An error page raised inside this block may be framed like the study's pages (e.g. "paused")."""
    try:
        yield
    except AppError as exc:
        exc.frame_ancestors = tuple(config.frame_ancestors)
        raise


def _join_action(study_id: uuid.UUID, arrived: PanelValues) -> str:
    """The consent form's address: the join path with the panel parameters the link carried."""
    query = urlencode(arrived.values)
    return f"{_study_path(study_id)}/join" + (f"?{query}" if query else "")


def _panel_problem(config: StudyConfig, arrived: PanelValues, tr: Translator) -> str | None:
    """Why this link cannot start a session (a malformed or missing panel ID), or None."""
    panel = config.panel
    if panel is None:
        return None
    if arrived.problems:
        text = tr.gettext("This link's %(fields)s is not valid. Please open the study again from %(panel)s.")
        return text % {"fields": ", ".join(arrived.problems), "panel": panel.name}
    if panel.require_id and arrived.participant_code is None:
        text = tr.gettext(
            "To take part, please open this study from %(panel)s: this link does not say who you are."
        )
        return text % {"panel": panel.name}
    return None


def _personal_link(request: Request, token: str) -> str:
    """The absolute address of the participant's own pages (the configured public address if any)."""
    base = request.app.state.settings.public_base_url or str(request.base_url).rstrip("/")
    return f"{base}/sessions/{token}"


def _estimate(request: Request, db: DbSessionDep, study: Any) -> StudyEstimate:
    return study_estimate(db, request.app.state.session_cache, study)


@router.get("/")
def home(request: Request) -> Response:
    """Landing page (in the browser's language, when it is one the studies can use)."""
    request.state.language = negotiate(request.headers.get("accept-language"))
    return _render(request, "home.html", {})


@router.get("/studies/{study_id}/join")
def show_join(study_id: str, request: Request, db: DbSessionDep, cache: CacheDep) -> Response:
    """Consent page of an open-enrolment study, or "welcome back" to the session this browser has.

    Showing it creates nothing (link previews are harmless). A draft, paused or closed study (or an
    expired link) says so to a newcomer, instead of a consent form that cannot be sent.
    """
    study = sessions.open_study(db, study_id)
    config = StudyConfig.model_validate(study.config)
    use_language(request, config)
    arrived = panel_values(config.panel, request.query_params)
    token = request.cookies.get(PARTICIPANT_COOKIE)
    returning = sessions.returning_view(db, cache, study.id, token, arrived.participant_code)
    if returning is not None and token is not None:
        context = {
            "study": study,
            "config": config,
            "token": token,
            "answered": returning.answered,
            "finished": returning.status is SessionStatus.DONE,
        }
        return _page(request, "studies/welcome_back.html", context, config)
    by_code = sessions.returning_by_code(db, cache, study, arrived.participant_code)
    if by_code is not None:
        # A panel ID that started a session in another browser: one click continues it (a POST, as a
        # further personal link is made; showing this page creates nothing).
        context = {
            "study": study,
            "config": config,
            "token": None,
            "action": _join_action(study.id, arrived),
            "finished": by_code.status == SessionStatus.DONE.value,
        }
        return _page(request, "studies/welcome_back.html", context, config)
    with _framed_errors(config):
        sessions.check_enrolment(db, study)
    problem = _panel_problem(config, arrived, _translator(request))
    context = {
        "study": study,
        "config": config,
        "errors": [problem] if problem else [],
        "blocked": problem is not None,
        "estimate": _estimate(request, db, study),
        "action": _join_action(study.id, arrived),
        "panel_id": arrived.participant_code,
    }
    return _page(request, "studies/join.html", context, config)


@router.post("/studies/{study_id}/join/forget")
def forget_session(study_id: str, request: Request, db: DbSessionDep) -> Response:
    """ "Not you?": this browser forgets its session of the study, and the consent page starts afresh."""
    study = sessions.open_study(db, study_id)
    config = StudyConfig.model_validate(study.config)
    response = _see_other(f"{_study_path(study.id)}/join")
    if _in_frames(request, config):
        set_partitioned_cookie(response, PARTICIPANT_COOKIE, "", max_age=0, path=_study_path(study.id))
    else:
        response.delete_cookie(PARTICIPANT_COOKIE, path=_study_path(study.id))
    return response


@router.post("/studies/{study_id}/join")
def join_study(
    study_id: str,
    request: Request,
    form: Annotated[JoinForm, Form()],
    db: DbSessionDep,
    cache: CacheDep,
) -> Response:
    """Create a consented session and continue with the instructions (or continue the returning one)."""
    study = sessions.open_study(db, study_id)
    config = StudyConfig.model_validate(study.config)
    use_language(request, config)
    arrived = panel_values(config.panel, request.query_params)
    problem = _panel_problem(config, arrived, _translator(request))
    if form.consent != "yes" or problem is not None:
        errors = [problem or _translator(request).gettext(_CONSENT_MISSING)]
        context = {
            "study": study,
            "config": config,
            "errors": errors,
            "blocked": problem is not None,
            "estimate": _estimate(request, db, study),
            "action": _join_action(study.id, arrived),
            "panel_id": arrived.participant_code,
        }
        return _page(request, "studies/join.html", context, config, 422)
    with _framed_errors(config):
        joined = sessions.join_study(
            db,
            cache,
            study.id,
            participant_code=arrived.participant_code or form.participant_code,
            known_token=request.cookies.get(PARTICIPANT_COOKIE),
            panel=arrived.values,
            panel_id=arrived.participant_code,
            # The back office answers (app.admin.studies.coordinator_of): a coordinator's own run is a pilot.
            pilot=request.app.state.coordinator_of(request, db, study),
        )
    target = f"/sessions/{joined.token}" if joined.continued else f"/sessions/{joined.token}/instructions"
    return _remember(_see_other(target), request, study.id, joined.token, config)


@router.get("/sessions/{token}")
def show_session(token: str, request: Request, db: DbSessionDep, cache: CacheDep) -> Response:
    """The current question (or the consent page, or a redirect to the thank-you page)."""
    view = sessions.get_view(db, cache, token)
    use_language(request, view.config)
    if view.status is SessionStatus.DONE:
        return _see_other(f"/sessions/{token}/result")
    if view.status is SessionStatus.INVITED:
        context = {"view": view, "token": token, "errors": [], "estimate": _estimate(request, db, view.study)}
        return _page(request, "sessions/consent.html", context, view.config)
    context = {
        "view": view,
        "token": token,
        "question": comparison_view(view.comparison, _translator(request))
        if view.comparison is not None
        else None,
        "personal_link": _personal_link(request, token),
    }
    response = _render(request, "sessions/show.html", context)
    return _remember(response, request, view.session.study_id, token, view.config)


@router.post("/sessions/{token}/consent")
def give_consent(
    token: str,
    request: Request,
    db: DbSessionDep,
    cache: CacheDep,
    consent: Annotated[str | None, Form()] = None,
) -> Response:
    """Record consent and continue with the instructions."""
    if consent != "yes":
        view = sessions.get_view(db, cache, token)
        use_language(request, view.config)
        errors = [_translator(request).gettext(_CONSENT_MISSING)]
        context = {
            "view": view,
            "token": token,
            "errors": errors,
            "estimate": _estimate(request, db, view.study),
        }
        return _page(request, "sessions/consent.html", context, view.config, 422)
    sessions.consent(db, cache, token)
    return _see_other(f"/sessions/{token}/instructions")


@router.get("/sessions/{token}/instructions")
def show_instructions(token: str, request: Request, db: DbSessionDep, cache: CacheDep) -> Response:
    """How to read the charts, with a worked example."""
    view, example = sessions.get_instructions(db, cache, token)
    use_language(request, view.config)
    if view.status is SessionStatus.INVITED:
        return _see_other(f"/sessions/{token}")
    context = {
        "view": view,
        "token": token,
        "question": comparison_view(example, _translator(request)),
        "personal_link": _personal_link(request, token),
        "estimate": _estimate(request, db, view.study),
    }
    response = _render(request, "sessions/instructions.html", context)
    return _remember(response, request, view.session.study_id, token, view.config)


@router.post("/sessions/{token}/answers")
def submit_answer(
    token: str,
    request: Request,
    form: Annotated[AnswerForm, Form()],
    db: DbSessionDep,
    cache: CacheDep,
) -> Response:
    """Record an answer, then show the next question (Post/Redirect/Get)."""
    try:
        view = sessions.submit_answer(
            db,
            cache,
            token,
            seq=form.seq,
            preferred=form.preferred,
            channel=AnswerChannel.PAGE,
            time_on_page_ms=form.time_on_page_ms,
            hidden_ms=form.hidden_ms,
        )
    except ConflictError as exc:
        if exc.code in {"stale_seq", "consent_required"}:
            return _see_other(f"/sessions/{token}")
        raise
    if view.status is SessionStatus.DONE:
        return _see_other(f"/sessions/{token}/result")
    return _see_other(f"/sessions/{token}")


@router.post("/sessions/{token}/undo")
def undo_answer(
    token: str,
    request: Request,
    form: Annotated[UndoForm, Form()],
    db: DbSessionDep,
    cache: CacheDep,
) -> Response:
    """Undo the last answer and show that question again."""
    try:
        sessions.undo(db, cache, token, seq=form.seq)
    except ConflictError as exc:
        if exc.code in {"stale_seq", "nothing_to_undo"}:
            return _see_other(f"/sessions/{token}")
        raise
    return _see_other(f"/sessions/{token}")


@router.get("/sessions/{token}/result")
def show_result(token: str, request: Request, db: DbSessionDep, cache: CacheDep) -> Response:
    """Thank-you page: completion code, optional redirect and a plain-language summary."""
    view = sessions.get_view(db, cache, token)
    use_language(request, view.config)
    if view.status is not SessionStatus.DONE or view.result is None:
        return _see_other(f"/sessions/{token}")
    tr = _translator(request)
    words = _result_words(view, db, cache, tr)
    figures = participant_figures(view.result.metric, words, tr)
    # Without words (a failed session) the page shows the stored summary, a catalogue message.
    summary = tr.gettext(view.result.summary) if view.result.summary else ""
    context = {"view": view, "token": token, "figures": figures, "words": words, "summary": summary}
    return _page(request, "sessions/result.html", context, view.config)


def _result_words(
    view: sessions.SessionView, db: Session, cache: sessions.SessionCache, tr: Translator
) -> MetricWords | None:
    """The revealed metric in plain words, read in the study's own query space."""
    result = view.result
    if result is None:
        return None
    return cache.runtime_of(db, view.session.study_id).words(result.metric, result.details, tr)
