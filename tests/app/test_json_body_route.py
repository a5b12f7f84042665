"""The answer route validates a plain JSON body once, from its bytes; every other request gets FastAPI's own
handling, byte for byte (`app.routes.api.JsonBodyRoute`)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi import APIRouter, FastAPI, Request, Response
from fastapi.testclient import TestClient

from app.main import MAX_REQUEST_BODY_BYTES
from app.routes.api import AnswerIn, JsonBodyRoute, router

calls: list[tuple[str, str, dict[str, Any]]] = []


async def echo(token: str, answer: AnswerIn, request: Request) -> Response:
    """What the endpoint received, as JSON (and noted in `calls`)."""
    calls.append((request.url.path.split("/")[1], token, answer.model_dump()))
    return Response(
        json.dumps({"token": token, "answer": answer.model_dump()}), media_type="application/json"
    )


def _app() -> FastAPI:
    """The same endpoint as a `JsonBodyRoute` (``/fast``) and as FastAPI's own route (``/standard``)."""
    app = FastAPI()
    for prefix, route_class in (("/fast", JsonBodyRoute), ("/standard", None)):
        router = APIRouter(prefix=prefix)
        options = {} if route_class is None else {"route_class_override": route_class}
        router.add_api_route("/{token}/answers", echo, methods=["POST"], **options)
        app.include_router(router, max_body_size=MAX_REQUEST_BODY_BYTES)
    return app


@pytest.fixture(scope="module")
def client() -> Iterator[TestClient]:
    with TestClient(_app(), raise_server_exceptions=False) as test_client:
        yield test_client


JSON = "application/json"
BODIES: list[tuple[bytes, str | None]] = [
    (b'{"seq": 3, "preferred": "first"}', JSON),
    (b'{"seq": 0, "preferred": "tie", "time_on_page_ms": 1200, "hidden_ms": null}', JSON),
    (b' \n{"preferred": "second", "seq": 7}\t', JSON),
    (b'{"seq": 3, "preferred": "\\u0066irst"}', JSON),
    (b'{"seq": 3, "seq": 4, "preferred": "first"}', JSON),
    (b'{"seq": 123456789012345678901234567890, "preferred": "first"}', JSON),
    (b'{"seq": 3, "preferred": "first", "extra": 1}', JSON),
    (b'{"seq": -1, "preferred": "first"}', JSON),
    (b'{"seq": 1.0, "preferred": "first"}', JSON),
    (b'{"seq": "1", "preferred": "first"}', JSON),
    (b'{"seq": true, "preferred": "first"}', JSON),
    (b'{"seq": NaN, "preferred": "first"}', JSON),
    (b'{"seq": 3, "preferred": "left"}', JSON),
    (b'{"seq": 3}', JSON),
    (b'{"seq": 3, "preferred": "first"} trailing', JSON),
    (b'{"seq": 3, "preferred": "first"', JSON),
    (b"[1, 2]", JSON),
    (b"null", JSON),
    (b"", JSON),
    (b'\xef\xbb\xbf{"seq": 3, "preferred": "first"}', JSON),
    ('{"seq": 3, "preferred": "first"}'.encode("utf-16"), JSON),
    (b'{"seq": 3, "preferred": "first"}', "application/json; charset=utf-8"),
    (b'{"seq": 3, "preferred": "first"}', "application/merge-patch+json"),
    (b'{"seq": 3, "preferred": "first"}', "text/plain"),
    (b'{"seq": 3, "preferred": "first"}', None),
]


@pytest.mark.parametrize(("body", "content_type"), BODIES)
def test_every_body_is_answered_as_fastapi_answers_it(
    client: TestClient, body: bytes, content_type: str | None
) -> None:
    headers = {} if content_type is None else {"content-type": content_type}
    calls.clear()
    fast = client.post("/fast/t0k3n/answers", content=body, headers=headers)
    standard = client.post("/standard/t0k3n/answers", content=body, headers=headers)
    assert (fast.status_code, fast.headers, fast.content) == (
        standard.status_code,
        standard.headers,
        standard.content,
    )
    # The endpoint ran on both routes with the same arguments, or on neither.
    assert [call[1:] for call in calls if call[0] == "fast"] == [
        call[1:] for call in calls if call[0] == "standard"
    ]


def test_a_plain_body_skips_fastapis_parameter_solving(client: TestClient, monkeypatch: Any) -> None:
    """The point of the route: a plain answer never reaches FastAPI's decode-then-solve path."""
    import fastapi.routing

    solved: list[str] = []
    real = fastapi.routing.solve_dependencies

    async def counting(*args: Any, **kwargs: Any) -> Any:
        solved.append(kwargs["request"].url.path)
        return await real(*args, **kwargs)

    monkeypatch.setattr(fastapi.routing, "solve_dependencies", counting)
    body = b'{"seq": 3, "preferred": "first"}'
    for prefix in ("fast", "standard"):
        assert (
            client.post(f"/{prefix}/t/answers", content=body, headers={"content-type": JSON}).status_code
            == 200
        )
    assert solved == ["/standard/t/answers"]


def test_a_body_over_the_limit_is_refused_as_fastapi_refuses_it(client: TestClient) -> None:
    """Sent in chunks without a length, the body fails while it is read: FastAPI's own 413 on both."""

    def chunks() -> Iterator[bytes]:
        for _ in range(MAX_REQUEST_BODY_BYTES // 1024 + 2):
            yield b" " * 1024

    answers = [
        client.post(f"/{prefix}/t/answers", content=chunks(), headers={"content-type": JSON})
        for prefix in ("fast", "standard")
    ]
    assert [answer.status_code for answer in answers] == [413, 413]
    assert answers[0].content == answers[1].content


def test_only_a_fitting_endpoint_gets_the_plain_path() -> None:
    def blocking(token: str, answer: AnswerIn, request: Request) -> Response:
        raise AssertionError("never called")

    async def without_request(token: str, answer: AnswerIn) -> Response:
        raise AssertionError("never called")

    for endpoint in (blocking, without_request):
        with pytest.raises(TypeError, match="does not fit a JsonBodyRoute"):
            JsonBodyRoute("/{token}/answers", endpoint, methods=["POST"])


def test_the_apps_answer_route_is_a_json_body_route() -> None:
    (route,) = [route for route in router.routes if route.path == "/api/v1/sessions/{token}/answers"]
    assert isinstance(route, JsonBodyRoute)
