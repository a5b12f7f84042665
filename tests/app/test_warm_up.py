"""A starting server prepares the open studies' runtimes beside the start, so that the first participant
request after a restart does not build them (a database it cannot read only leaves that to the requests),
and runs requests on the configured number of threads."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import anyio.to_thread
import pytest
from app_support import make_study, new_session
from fastapi.testclient import TestClient

import app.sessions.runtime as runtime_module
from app.main import create_app
from app.models import StudyControl, StudyStatus
from app.settings import Settings


def _built_studies(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The ids of the studies whose runtimes this process builds from now on, in order."""
    built: list[Any] = []
    original = runtime_module.study_runtime

    def recording(study: Any) -> Any:
        built.append(study.id)
        return original(study)

    monkeypatch.setattr(runtime_module, "study_runtime", recording)
    return built


def _warmed() -> None:
    for thread in threading.enumerate():
        if thread.name == "warm-up":
            thread.join(timeout=60)


def test_the_open_studies_runtimes_are_built_at_the_start_and_not_again_by_a_request(
    app: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    open_study = make_study(app)
    paused = make_study(app, name="paused study")
    with app.state.sessionmaker() as db:
        db.add(StudyControl(study_id=paused.id, status=StudyStatus.PAUSED.value))
        db.commit()
    built = _built_studies(monkeypatch)
    with TestClient(app) as client:
        _warmed()
        assert built == [open_study.id]
        token = new_session(client, open_study)
        assert client.get(f"/api/v1/sessions/{token}").json()["query"] is not None
        assert built == [open_study.id]


def test_a_server_on_a_database_without_tables_still_starts(tmp_path: Path) -> None:
    application = create_app(Settings(database_url=f"sqlite:///{tmp_path / 'empty.db'}"))
    with TestClient(application) as client:
        _warmed()
        assert client.get("/healthz").status_code == 503
    application.state.engine.dispose()


def test_requests_run_on_the_configured_number_of_threads(settings: Settings) -> None:
    application = create_app(settings.model_copy(update={"request_threads": 3}))
    with TestClient(application) as client:
        limiter = client.portal.call(anyio.to_thread.current_default_thread_limiter)
        assert limiter.total_tokens == 3
    application.state.engine.dispose()
