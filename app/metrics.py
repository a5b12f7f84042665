"""Prometheus metrics: requests and latencies per route, answers stored, sessions by status.

Request counts and latencies are measured around every request in each process
(`app.server.RequestEnvelope`) and labelled with the route's *template*
(``/api/v1/sessions/{token}/answers``), never the raw path: paths carry secret participant tokens, and a
scanner's random paths would otherwise grow the label set without bound. The study-level numbers (answers
stored, sessions by status) are read from the database at scrape time, so every worker and every host
reports the same, durable figures. With several worker processes on one host, set
``PROMETHEUS_MULTIPROC_DIR`` to an empty folder before starting them and the request metrics of all
workers are summed (prometheus_client's multiprocess mode); docs/operations.md has the recipe.
"""

from __future__ import annotations

import hmac
import os
from collections.abc import Callable, Iterator

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector
from sqlalchemy.orm import Session
from starlette.types import Scope

from . import repository as repo
from .models import SessionStatus

__all__ = [
    "CONTENT_TYPE",
    "RequestMetrics",
    "StudyCollector",
    "metrics_authorised",
    "render_metrics",
    "resume_counter",
]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
#: Latency buckets (seconds) around the participant's answer round trip, a few milliseconds.
LATENCY_BUCKETS = (0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
#: Label of requests no route matched (404s from scanners), so they cannot grow the label set.
UNMATCHED_ROUTE = "<unmatched>"


class RequestMetrics:
    """Requests counted and timed per (method, route template, status), recorded by
    `app.server.RequestEnvelope` after each response."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.requests = Counter(
            "elicit_http_requests",
            "HTTP requests answered, by method, route template and status code",
            ["method", "route", "status"],
            registry=registry,
        )
        self.latency = Histogram(
            "elicit_http_request_duration_seconds",
            "Time from the request's arrival to the end of its response, by method and route template",
            ["method", "route"],
            buckets=LATENCY_BUCKETS,
            registry=registry,
        )
        # The labelled children by (method, route template, status): the same objects ``labels`` returns,
        # looked up without its argument checks and lock.
        self._children: dict[tuple[str, str, int], tuple[Counter, Histogram]] = {}

    def record(self, scope: Scope, status: int, seconds: float) -> None:
        """Count the request of ``scope``, answered with ``status``, and note that it took ``seconds``."""
        route = scope.get("route")
        template = getattr(route, "path", None) or UNMATCHED_ROUTE
        method: str = scope["method"]
        key = (method, template, status)
        children = self._children.get(key)
        if children is None:
            children = self._children[key] = (
                self.requests.labels(method, template, str(status)),
                self.latency.labels(method, template),
            )
        children[0].inc()
        children[1].observe(seconds)


def resume_counter(registry: CollectorRegistry) -> Callable[[str], None]:
    """A callback counting how participant requests got their elicitor state, by source.

    ``cache`` (this process held it), ``checkpoint`` (continued from the session's saved state) or
    ``replay`` (the whole log replayed): a worker pool whose ``replay`` count grows with its answers is
    not finding checkpoints.
    """
    counter = Counter(
        "elicit_elicitor_resumes",
        "Elicitor states obtained for participant requests, by source (cache, checkpoint, replay)",
        ["source"],
        registry=registry,
    )
    return lambda source: counter.labels(source).inc()


def active_answer_counter(registry: CollectorRegistry) -> Callable[[str], None]:
    """A callback counting how active elicitors' answers got their next state: ``ahead`` (computed while
    the participant thought) or ``in_request`` (no state computed ahead was ready: the answer came too soon,
    or the server was never idle long enough). A growing ``in_request`` share means the participants wait
    for the elicitor's step."""
    counter = Counter(
        "elicit_active_answers",
        "Active elicitors' answers by where their next state was computed (ahead, in_request)",
        ["computed"],
        registry=registry,
    )
    return lambda computed: counter.labels(computed).inc()


class StudyCollector(Collector):
    """Answers stored and sessions by status, counted in the database when Prometheus scrapes."""

    def __init__(self, open_session: Callable[[], Session]) -> None:
        self.open_session = open_session

    def collect(self) -> Iterator[Metric]:
        with self.open_session() as db:
            answers = repo.count_answers(db)
            per_status: dict[str, int] = {status.value: 0 for status in SessionStatus}
            for (_study, status), count in repo.session_counts(db).items():
                per_status[status] = per_status.get(status, 0) + count
        yield CounterMetricFamily(
            "elicit_answers_stored", "Answers durably stored in the answer log, all studies", value=answers
        )
        sessions = GaugeMetricFamily(
            "elicit_sessions", "Participant sessions by status, all studies", labels=["status"]
        )
        for status, count in sorted(per_status.items()):
            sessions.add_metric([status], count)
        yield sessions


def metrics_authorised(expected_token: str, authorization: str | None) -> bool:
    """Whether the ``Authorization`` header carries the configured bearer token (constant-time compare)."""
    scheme, _, presented = (authorization or "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(presented.strip(), expected_token)


def render_metrics(registry: CollectorRegistry, studies: StudyCollector) -> bytes:
    """The exposition text: this process's (or, in multiprocess mode, every worker's) request metrics and
    the database's study figures."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry()
        MultiProcessCollector(registry)
    scrape = CollectorRegistry()
    scrape.register(studies)
    return generate_latest(registry) + generate_latest(scrape)
