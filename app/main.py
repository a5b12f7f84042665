"""The application factory: settings, database, templates, static files, routers and error pages."""

from __future__ import annotations

import gc
import logging
import threading
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from pathlib import Path

import anyio.to_thread
from fastapi import FastAPI, Request
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from prometheus_client import CollectorRegistry
from sqlalchemy.orm import configure_mappers
from starlette.types import ASGIApp
from threadpoolctl import threadpool_limits  # type: ignore[import-untyped]

from . import __version__, access_log
from .admin import web as admin_web
from .admin.monitor import STATUS_WORDS, STOPPED_AFTER_MIN
from .algorithms import algorithm_label
from .charts.inert import figure_json
from .db import make_engine, make_sessionmaker
from .embedding import CONTENT_SECURITY_POLICY
from .errors import NotFoundError, install_error_handlers
from .explain import SETTLED_LAM_WIDTH
from .i18n import LANGUAGES, Catalogues, configure_templates, shipped_catalogues
from .metrics import RequestMetrics, StudyCollector, active_answer_counter, resume_counter
from .resources import resource_dir
from .routes import api, docs, operations, pages
from .server import RequestCounter, RequestEnvelope
from .sessions import SessionCache
from .sessions.speculation import Speculator
from .settings import Settings

__all__ = ["CONTENT_SECURITY_POLICY", "create_app"]

logger = logging.getLogger("app.main")

#: The OpenAPI pages (assets served from the installed fastapi-offline package, started by a local script):
#: ReDoc injects its styles as <style> elements and renders in a worker made from a blob.
DOCS_CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "font-src 'self'; connect-src 'self'; worker-src 'self' blob:; object-src 'none'; base-uri 'none'; "
    "frame-ancestors 'none'"
)
_DOCS_PATHS = frozenset({"/docs", "/redoc"})
#: The vendored plotly.js never changes for an installed version: cache it for a year.
LONG_CACHE = "public, max-age=31536000, immutable"
#: Largest body a participant route accepts (an answer is ~100 bytes); bigger ones get 413 unread.
MAX_REQUEST_BODY_BYTES = 64 * 1024
#: Backstop for every other route (the back office's archive upload allows 50 MB plus form overhead).
MAX_UPLOAD_BODY_BYTES = 64 * 1024 * 1024


def _plotly_js_path() -> Path:
    import plotly

    return Path(plotly.__file__).resolve().parent / "package_data" / "plotly.min.js"


class SecurityHeaders:
    """CSP without inline script, no framing, no MIME sniffing, no referrer (links carry secret tokens).

    Called by `app.server.RequestEnvelope` on every response's headers; the headers are encoded once, here.
    A response that brings its own policy (a study's pages that it allows to be framed, `app.embedding`)
    keeps it and gets no ``X-Frame-Options``.
    """

    def __init__(self) -> None:
        shared = (
            (b"x-content-type-options", b"nosniff"),
            (b"x-frame-options", b"DENY"),
            (b"referrer-policy", b"no-referrer"),
            (b"cross-origin-opener-policy", b"same-origin"),
        )
        # Session pages and API answers change with every answer and carry private data.
        no_store = ((b"cache-control", b"no-store"),)
        self._by_kind: dict[tuple[bool, bool], tuple[tuple[bytes, bytes], ...]] = {}
        for for_docs in (False, True):
            policy = DOCS_CONTENT_SECURITY_POLICY if for_docs else CONTENT_SECURITY_POLICY
            for static in (False, True):
                self._by_kind[for_docs, static] = (
                    (b"content-security-policy", policy.encode("latin-1")),
                    *shared,
                ) + (() if static else no_store)

    def __call__(self, path: str, headers: Iterable[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
        """``headers`` (a response's raw headers) and those of the policy for ``path`` it does not set."""
        headers = list(headers)
        present = {name for name, _ in headers}
        own_policy = b"content-security-policy" in present
        for name, value in self._by_kind[path in _DOCS_PATHS, path.startswith("/static/")]:
            if name not in present and not (own_policy and name == b"x-frame-options"):
                headers.append((name, value))
        return headers


class _StudioApp(FastAPI):
    """FastAPI inside the app's own envelope (`app.server.RequestEnvelope`: requests in flight, body
    deadline, security headers, request metrics, DB sessions closed), outside Starlette's outer
    ``ServerErrorMiddleware``, so that the 500 page and 413 answers get their headers and are counted too."""

    def build_middleware_stack(self) -> ASGIApp:
        return RequestEnvelope(
            super().build_middleware_stack(),
            counter=self.state.requests_in_flight,
            body_timeout_s=self.state.settings.body_timeout_s,
            secure=SecurityHeaders(),
            metrics=RequestMetrics(self.state.metrics_registry),
        )


@asynccontextmanager
async def _lifespan(_app: FastAPI) -> AsyncIterator[None]:
    """Exempt everything loaded at start-up (modules, the app) from the garbage collector's full passes,
    and run the numerical libraries on one thread.

    Start-up objects live as long as the process; left in the collected heap, every full pass walks them
    again. Resuming a long session allocates enough to trigger such passes, which cost a 2,000-answer
    resume about 30 ms of its 50-80 ms; frozen, the passes only walk what requests allocated.

    A worker process computes one request at a time on one core, and the elicitors' matrices are small:
    BLAS threads only fight the other workers and requests for the cores (the active elicitor's question
    took several times longer with them on a busy machine, docs/app.md), and one thread gives the same
    numbers. For the same reason requests run on `Settings.request_threads` threads, not anyio's 40.
    """
    threadpool_limits(limits=1)
    anyio.to_thread.current_default_thread_limiter().total_tokens = _app.state.settings.request_threads
    _prepare_requests(_app)
    gc.collect()
    gc.freeze()
    yield
    speculator: Speculator | None = _app.state.session_cache.speculator
    if speculator is not None:
        speculator.stop()


def _prepare_requests(app: FastAPI) -> None:
    """Do at start-up what the first participant request of every process would otherwise pay for.

    SQLAlchemy configures its mappers at the first ORM query, and the participant pages' translations
    are compiled from their ``.po`` catalogues when a language is first used (a study's configuration
    asks every language for its default texts): together most of the first request after a restart.
    Neither touches the database, so a server whose database is down still starts (and `/healthz` says so);
    the open studies' runtimes and the participant reads' statements are prepared beside the start, in a
    thread of their own (`_warm_sessions`).
    """
    configure_mappers()
    catalogues: Catalogues = app.state.catalogues
    for language in LANGUAGES:
        catalogues.translations(language)
    threading.Thread(target=_warm_sessions, args=(app,), name="warm-up", daemon=True).start()


def _warm_sessions(app: FastAPI) -> None:
    """`SessionCache.warm_up` beside the start (a database that is down or slow to connect never holds the
    start up); any failure only leaves the work to the first requests."""
    try:
        with app.state.sessionmaker() as db:
            app.state.session_cache.warm_up(db)
    except Exception as exc:  # a warm-up that fails costs time, never a request
        logger.info("warm-up skipped: %s", exc)


def _language(request: Request) -> dict[str, object]:
    """Every page's gettext callables, ``lang`` and ``dir``: the language a route chose (its study's,
    `app.routes.pages.use_language`), else English (the back office)."""
    catalogues: Catalogues = request.app.state.catalogues
    return catalogues.template_context(getattr(request.state, "language", None))


def create_app(settings: Settings | None = None) -> FastAPI:
    """Build the app for ``settings`` (default: from the environment). No import-time globals."""
    settings = settings or Settings()
    access_log.install()
    app = _StudioApp(
        lifespan=_lifespan,
        max_body_size=MAX_UPLOAD_BODY_BYTES,
        docs_url=None,
        redoc_url=None,
        title="Elicitation Studio",
        version=__version__,
        summary="Find out which classification metric a person wants, by pairwise comparisons (QPME).",
        openapi_tags=[
            {"name": "sessions", "description": "Participant sessions for scripts and automated participants"}
        ],
    )
    engine = make_engine(settings)
    app.state.settings = settings
    app.state.engine = engine
    app.state.sessionmaker = make_sessionmaker(engine)
    app.state.session_cache = SessionCache(settings.session_cache_size)
    app.state.requests_in_flight = RequestCounter()
    if settings.speculative_questions and settings.session_cache_size > 0:
        app.state.session_cache.speculator = Speculator(
            app.state.session_cache, app.state.sessionmaker, app.state.requests_in_flight.busy
        )
    app.state.metrics_registry = CollectorRegistry(auto_describe=True)
    app.state.session_cache.on_resume = resume_counter(app.state.metrics_registry)
    app.state.session_cache.on_active_answer = active_answer_counter(app.state.metrics_registry)
    app.state.study_collector = StudyCollector(app.state.sessionmaker)
    app.state.catalogues = shipped_catalogues()
    templates = Jinja2Templates(directory=str(resource_dir("templates")), context_processors=[_language])
    configure_templates(templates.env)
    templates.env.globals["app_name"] = "Elicitation Studio"
    templates.env.globals["languages"] = LANGUAGES
    templates.env.filters["figure_json"] = figure_json
    templates.env.filters["algorithm_label"] = algorithm_label
    templates.env.globals["status_words"] = STATUS_WORDS
    templates.env.globals["stopped_after_min"] = STOPPED_AFTER_MIN
    # A trade-off interval wider than this is "not settled" wherever a page shows one.
    templates.env.globals["settled_width"] = SETTLED_LAM_WIDTH
    app.state.templates = templates

    plotly_js = _plotly_js_path()

    @app.get("/static/vendor/plotly.min.js", include_in_schema=False)
    def plotly_bundle() -> FileResponse:
        if not plotly_js.is_file():
            raise NotFoundError("plotly.js is not installed")
        return FileResponse(plotly_js, media_type="text/javascript", headers={"Cache-Control": LONG_CACHE})

    app.mount("/static", StaticFiles(directory=str(resource_dir("static")), check_dir=False), name="static")
    # Routes are matched in order, one by one: the JSON API (every answer of a participant's session) first.
    app.include_router(api.router, max_body_size=MAX_REQUEST_BODY_BYTES)
    app.include_router(operations.router, max_body_size=MAX_REQUEST_BODY_BYTES)
    app.include_router(pages.router, max_body_size=MAX_REQUEST_BODY_BYTES)
    app.include_router(docs.router, max_body_size=MAX_REQUEST_BODY_BYTES)
    admin_web.install(app)
    install_error_handlers(app)
    return app
