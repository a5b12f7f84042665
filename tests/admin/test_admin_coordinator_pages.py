"""What a coordinator reads on the back-office pages: algorithms in words, empty states, charts that apply."""

from __future__ import annotations

import re
from typing import Any

from admin_support import METRIC, STUDY_CONFIG, Participant, bearer, login
from fastapi.testclient import TestClient

from app.algorithms import REGISTRY, algorithm_label
from app.charts.monitor import answer_rate_figure, coefficients_figures


def _open_study(client: TestClient, token: str, **overrides: Any) -> str:
    study_id: str = client.post(
        "/api/v1/studies", json={**STUDY_CONFIG, **overrides}, headers=bearer(token)
    ).json()["id"]
    opened = client.patch(f"/api/v1/studies/{study_id}", json={"status": "open"}, headers=bearer(token))
    assert opened.status_code == 200
    return study_id


def test_algorithm_labels_are_the_form_labels_without_their_recommendation() -> None:
    assert algorithm_label("active_quadratic") == "Active quadratic"
    assert algorithm_label("lpme") == "Linear (LPME, the paper's searches)"
    assert algorithm_label("no_such_algorithm") == "no_such_algorithm"
    for name, spec in REGISTRY.items():
        assert "_" not in spec.label and "recommended" not in spec.label and ":" not in spec.label, name


def test_studies_list_and_study_page_name_the_algorithm_in_words(
    client: TestClient, accounts: dict[str, Any]
) -> None:
    study_id = _open_study(client, accounts["alice"]["token"], algorithm="qpme", algorithm_params={})
    login(client, "alice@example.org")
    listing = client.get("/admin").text
    assert "<td>Quadratic (QPME, the paper&#39;s searches)</td>" in listing and "<td>qpme</td>" not in listing
    page = client.get(f"/admin/studies/{study_id}").text
    assert "Algorithm Quadratic (QPME" in page
    # A mean count of questions reads "34 on average" when whole, never "34.0".
    asked = re.search(r'data-testid="plan-queries">([^<]*)', page)
    assert asked is not None and re.match(r"\d+(\.[1-9])? on average", asked.group(1)), asked


def test_results_page_without_finished_participants_says_so(
    client: TestClient, accounts: dict[str, Any]
) -> None:
    study_id = _open_study(client, accounts["alice"]["token"])
    login(client, "alice@example.org")
    page = client.get(f"/admin/studies/{study_id}/results")
    assert page.status_code == 200
    assert 'data-testid="results-empty"' in page.text
    # No table of candidates "ranked in the chart above" without a chart; the code waits for a finisher.
    assert 'data-testid="candidates"' not in page.text and 'data-testid="snippet-waits"' in page.text
    assert 'data-testid="results-table"' not in page.text


def test_results_page_lists_a_finisher_whose_answers_gave_no_metric(
    client: TestClient, accounts: dict[str, Any]
) -> None:
    """They were shown a completion code and are approved by it: the table lists them, said plainly, and
    the page never claims that nobody has finished."""
    from app.models import Result

    study_id = _open_study(client, accounts["alice"]["token"])
    created = client.post(
        f"/api/v1/studies/{study_id}/sessions", json={"consent": True, "participant_code": "P9"}
    )
    done = Participant(METRIC).finish(client, created.json()["token"])
    assert done["status"] == "done"
    code = done["result"]["completion_code"]
    with client.app.state.sessionmaker() as db:  # type: ignore[attr-defined]
        result = db.query(Result).one()
        result.metric = {"type": "failed", "reason": "the answers contradict each other"}
        db.commit()
    login(client, "alice@example.org")
    page = client.get(f"/admin/studies/{study_id}/results").text
    assert 'data-testid="results-empty"' not in page and 'data-testid="results-table"' in page
    assert f"<code>{code}</code>" in page and ">P9<" in page
    assert 'data-testid="row-no-metric">answers did not add up to one metric<' in page
    assert "0 elicited metrics" in page  # nothing drawn or ranked from it


def test_session_page_of_an_active_elicitor_draws_no_binary_search_chart(
    client: TestClient, accounts: dict[str, Any]
) -> None:
    token = accounts["alice"]["token"]
    searched = _open_study(client, token)
    active = _open_study(client, token, algorithm="active_quadratic", algorithm_params={})
    login(client, "alice@example.org")
    for study_id, drawn in ((searched, True), (active, False)):
        person = client.post(f"/api/v1/studies/{study_id}/sessions", json={"consent": True}).json()["token"]
        Participant(METRIC).finish(client, person)
        monitor = client.get(f"/admin/studies/{study_id}/monitor").text
        found = re.search(rf"/admin/studies/{study_id}/sessions/([0-9a-f-]{{36}})", monitor)
        assert found is not None
        page = client.get(f"/admin/studies/{study_id}/sessions/{found.group(1)}").text
        assert ('id="fig-convergence"' in page) is drawn, study_id
        assert "coordinate None" not in page and "elicitor got" not in page
        # The log's rates in the study's class order, not a Python list.
        assert re.search(r"<td>0\.\d{3} / 0\.\d{3}</td>", page)
        assert "replays to" in page or "replay reproduces" in page


def test_count_axes_tick_at_round_steps() -> None:
    steps = [
        answer_rate_figure([0] * 59 + [largest])["figure"]["layout"]["yaxis"]["dtick"]
        for largest in (1, 6, 12, 115, 4000)
    ]
    assert steps == [1, 2, 5, 50, 1000]


def test_long_coefficient_names_break_after_their_colon_beside_a_narrow_chart() -> None:
    long_name = "gap penalty Female–Male: income <=50K × income >50K"
    figures = coefficients_figures({"weight: benign": [0.4, 0.5], long_name: [0.1, 0.2]}, [])
    names = [trace["name"] for trace in figures[0]["figure"]["data"]]
    assert names == ["weight: benign", "gap penalty Female–Male:<br>income <=50K × income >50K"]


def test_session_page_without_a_chart_loads_no_plotly(client: TestClient, accounts: dict[str, Any]) -> None:
    """plotly.js loaded with nothing to draw adds an inline stylesheet, which the CSP refuses."""
    study_id = _open_study(
        client,
        accounts["alice"]["token"],
        algorithm="active_quadratic",
        algorithm_params={},
        practice_queries=0,
    )
    person = client.post(f"/api/v1/studies/{study_id}/sessions", json={"consent": True}).json()["token"]
    participant = Participant(METRIC)
    state = participant.answer(client, person, client.get(f"/api/v1/sessions/{person}").json())
    assert state["status"] == "active"
    login(client, "alice@example.org")
    monitor = client.get(f"/admin/studies/{study_id}/monitor").text
    found = re.search(rf"/admin/studies/{study_id}/sessions/([0-9a-f-]{{36}})", monitor)
    assert found is not None
    page = client.get(f"/admin/studies/{study_id}/sessions/{found.group(1)}").text
    assert 'data-testid="answer-log"' in page and "data-figure=" not in page
    assert "plotly.min.js" not in page


def test_every_link_on_the_back_office_pages_leads_somewhere(
    client: TestClient, accounts: dict[str, Any]
) -> None:
    """From the studies list, every same-site link of every back-office page answers (downloads included)."""
    study_id = _open_study(client, accounts["alice"]["token"], evaluation_queries=2)
    for _person in range(2):
        person = client.post(f"/api/v1/studies/{study_id}/sessions", json={"consent": True}).json()["token"]
        Participant(METRIC).finish(client, person)
    login(client, "alice@example.org")
    seen: set[str] = set()
    pages = ["/admin"]
    while pages:
        path = pages.pop()
        if path in seen:
            continue
        seen.add(path)
        response = client.get(path)
        assert response.status_code == 200, f"{path} -> {response.status_code}"
        if not path.startswith("/admin") or "text/html" not in response.headers["content-type"]:
            continue
        for link in re.findall(r'href="(/[^"#]*)"', response.text):
            if not link.startswith(("/static/", "/admin/logout")):
                pages.append(link.replace("&amp;", "&"))
    base = f"/admin/studies/{study_id}"
    assert f"{base}/panel" in seen and f"{base}/export/results.csv" in seen
    assert any("/sessions/" in path for path in seen)


def test_dashboard_charts_say_when_there_is_nothing_to_draw_yet(
    client: TestClient, accounts: dict[str, Any]
) -> None:
    study_id = _open_study(client, accounts["alice"]["token"])
    login(client, "alice@example.org")

    def notes() -> dict[str, list[str]]:
        figures = client.get(f"/admin/studies/{study_id}/monitor.json").json()["figures"]
        return {
            item["id"]: [note["text"] for note in item["figure"]["layout"].get("annotations", [])]
            for item in figures
        }

    assert notes() == {
        "fig-status": ["Nobody has started yet"],
        "fig-rate": ["No answers in the last hour"],
        "fig-dropoff": ["Nobody has stopped part-way"],
    }
    person = client.post(f"/api/v1/studies/{study_id}/sessions", json={"consent": True}).json()["token"]
    Participant(METRIC).answer(client, person, client.get(f"/api/v1/sessions/{person}").json())
    # Someone answering right now has not stopped: the drop-off chart still has nobody to draw.
    assert notes() == {"fig-status": [], "fig-rate": [], "fig-dropoff": ["Nobody has stopped part-way"]}


def test_study_page_warns_when_no_classifier_shown_beats_the_majority_baseline(
    client: TestClient, accounts: dict[str, Any]
) -> None:
    """The synthetic sphere around (0.5, 0.5) with 65 % benign: every classifier shown is below 65 of 100."""
    study_id = _open_study(client, accounts["alice"]["token"])
    login(client, "alice@example.org")
    page = client.get(f"/admin/studies/{study_id}").text
    shown = re.search(
        r"get between (\d+) and (\d+) of 100 right; \"everyone is the most common class\" gets (\d+)", page
    )
    assert shown is not None and int(shown.group(2)) <= int(shown.group(3))
    assert 'data-testid="region-below-baseline"' in page
