"""The coordinator's whole loop in Chromium: a fairness study on Adult made in the form with the dataset
picker, planned, saved as a draft and opened; a pilot from the study page; a Prolific participant through
the open link; the approval file with that participant's code (and not the pilot); every export clicked on
the results page, written by the local command line and fetched by the remote one, byte for byte alike."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest
from conftest import watch
from e2e_support import sign_in
from playwright.sync_api import Page, expect

from app.admin.auth import create_api_token, create_user
from app.admin.downloads import DOWNLOADS
from app.admin.models import Role
from app.cli import main

pytestmark = pytest.mark.e2e

PASSWORD = "whole loop password for a throw-away database"
EMAIL = "loop@example.org"
#: Training Adult's classifiers and simulating the plan take seconds of CPU, minutes on a loaded machine.
SLOW_PAGE_MS = 300_000
#: More screens than the study can show (a loop bound, not an expectation).
MAX_CLICKS = 120


def _answer_to_the_end(page: Page) -> str:
    """Consent, begin, always choose the left classifier until the thank-you page; the code it shows."""
    page.get_by_test_id("consent-checkbox").check()
    with page.expect_navigation():
        page.get_by_test_id("consent-submit").click()
    with page.expect_navigation():
        page.get_by_test_id("begin").click()
    for _ in range(MAX_CLICKS):
        if "/result" in page.url:
            code = page.get_by_test_id("completion-code").text_content() or ""
            return code.strip()
        with page.expect_navigation():
            page.get_by_test_id("choose-left").click()
    raise AssertionError(f"no thank-you page after {MAX_CLICKS} answers")


def test_form_publish_pilot_participant_approval_and_every_export(
    page: Page, live_server: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    health = watch(page)
    with live_server.app.state.sessionmaker() as db:
        user = create_user(db, EMAIL, PASSWORD, Role.COORDINATOR.value)
        _token, secret = create_api_token(db, user, "laptop")
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(f"{live_server.url}/admin/studies/new")
    sign_in(page, EMAIL, PASSWORD)

    # The form: Adult with its groups from the picker, the recommended elicitor left as is, Prolific.
    page.get_by_test_id("field-name").fill("Loan decisions on Adult")
    page.get_by_test_id("field-task").fill("A classifier decides whether a person's income is above 50K.")
    picker = page.get_by_test_id("field-dataset")
    expect(picker).to_contain_text("Adult census income: classes income <=50K, income >50K")
    picker.select_option("adult")
    page.get_by_test_id("field-algorithm").select_option("fair_qpme")
    page.get_by_test_id("field-epsilon").fill("0.3")
    page.locator('input[name="practice_queries"]').fill("0")
    page.locator('input[name="checks"]').uncheck()
    page.get_by_test_id("field-evaluation").fill("0")
    page.get_by_test_id("field-panel").select_option("prolific")
    with page.expect_navigation(timeout=SLOW_PAGE_MS):
        page.get_by_test_id("run-planner").click(timeout=SLOW_PAGE_MS)
    expect(page.get_by_test_id("planner")).to_be_visible()
    expect(page.get_by_test_id("plan-minutes")).to_contain_text("on average")
    with page.expect_navigation(timeout=SLOW_PAGE_MS):
        page.get_by_test_id("save-study").click(timeout=SLOW_PAGE_MS)
    expect(page.get_by_test_id("study-status")).to_have_text("draft")
    study_id = page.url.rstrip("/").rsplit("/", 1)[1]
    with page.expect_navigation(timeout=SLOW_PAGE_MS):
        page.get_by_test_id("open-study").click(timeout=SLOW_PAGE_MS)
    expect(page.get_by_test_id("study-status")).to_have_text("open")
    study_page = page.url

    # A pilot from the study page: it runs like a participant's session, and counts as none.
    with page.expect_navigation(timeout=SLOW_PAGE_MS):
        page.get_by_test_id("start-pilot").click(timeout=SLOW_PAGE_MS)
    pilot_code = _answer_to_the_end(page)

    # A Prolific participant through the open link, in a browser of their own.
    participant = page.context.browser.new_page()
    link = f"{live_server.url}/studies/{study_id}/join?PROLIFIC_PID=PID-5f3a&STUDY_ID=S-1&SESSION_ID=X-9"
    participant.goto(link)
    expect(participant.get_by_test_id("consent")).to_contain_text("PID-5f3a")
    code = _answer_to_the_end(participant)
    participant.close()

    # The approval file lists the participant with the code they were shown, and not the pilot.
    page.goto(study_page.replace(f"/studies/{study_id}", f"/studies/{study_id}/results"))
    expect(page.get_by_test_id("row-completion-code")).to_have_text([code])
    downloaded: dict[str, bytes] = {}
    for item in DOWNLOADS:
        link_ = page.get_by_test_id(f"download-{item.command}")
        if not link_.count():
            continue  # linked from the panel page
        with page.expect_download() as download:
            link_.click()
        downloaded[item.command] = Path(download.value.path()).read_bytes()
    assert {"results", "results-json", "results-parquet", "approval", "answers", "archive"} <= set(downloaded)
    rows = list(csv.DictReader(io.StringIO(downloaded["approval"].decode("utf-8"))))
    assert [(row["PROLIFIC_PID"], row["completion_code"]) for row in rows] == [("PID-5f3a", code)]
    assert pilot_code != code and pilot_code not in downloaded["approval"].decode("utf-8")

    # Every export, written by the local command line and fetched by the remote one, is the same file.
    monkeypatch.setenv("DATABASE_URL", live_server.app.state.settings.database_url)
    monkeypatch.setenv("ELICIT_TOKEN", secret)
    for item in DOWNLOADS:
        local, remote = tmp_path / f"local-{item.filename}", tmp_path / f"remote-{item.filename}"
        assert main(["study", "export", study_id, item.command, "--output", str(local)]) == 0
        command = [
            "--url",
            live_server.url,
            "study",
            "export",
            study_id,
            item.command,
            "--output",
            str(remote),
        ]
        assert main(command) == 0
        files = [
            local.read_bytes(),
            remote.read_bytes(),
            *([downloaded[item.command]] if item.command in downloaded else []),
        ]
        if item.command == "archive":  # the moment each archive was written is its one difference
            documents = [json.loads(body) for body in files]
            for document in documents:
                document.pop("exported_at")
            assert all(document == documents[0] for document in documents)
        else:
            assert all(body == files[0] for body in files), item.command

    # Nothing failed on any page (no style the CSP blocks, either) and nothing left 127.0.0.1.
    health.assert_clean()
