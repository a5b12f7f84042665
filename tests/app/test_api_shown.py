"""The JSON API carries what the page shows: each option's ``shown`` counts and the question's ``decimals``
equal the numbers the question page renders, for every study algorithm, question after question."""

from __future__ import annotations

import re
from html import unescape
from typing import Any

import numpy as np
import pytest
from app_support import SMALL_STUDY, make_study, new_session
from fastapi.testclient import TestClient

from app.algorithms import REGISTRY

#: Two groups with Adult-like class shares: at tenths of a person their sizes are not whole people.
GROUP_PRIORS = [[0.8864, 0.1136], [0.6875, 0.3125]]

#: A study of each algorithm, small enough to answer a handful of its questions in a test.
STUDIES: dict[str, dict[str, Any]] = {
    "lpme": {"algorithm_params": {"epsilon": 0.2}},
    "qpme": {"algorithm_params": {"epsilon": 0.2}},
    "diagonal_qpme": {
        "class_names": ["low", "medium", "high"],
        "algorithm_params": {"epsilon": 0.05, "cycles": 1},
        "query_space": {"kind": "synthetic", "radius": 0.2, "priors": [0.4, 0.35, 0.25]},
    },
    "fair_qpme": {
        "group_names": ["younger", "older"],
        "algorithm_params": {"epsilon": 0.2},
        "query_space": {"kind": "synthetic", "radius": 0.2, "priors": GROUP_PRIORS},
    },
    "tradeoff": {
        "group_names": ["younger", "older"],
        "algorithm_params": {"a": [0.4, 0.9], "B_pairs": [[[1.0, 0.2], [0.2, 0.5]]], "epsilon": 0.05},
        "query_space": {"kind": "synthetic", "radius": 0.2, "priors": GROUP_PRIORS},
    },
    "active_linear": {"algorithm_params": {"max_queries": 8}},
    "active_quadratic": {"algorithm_params": {"max_queries": 8}},
    "active_fair": {
        "group_names": ["younger", "older"],
        "algorithm_params": {"max_queries": 8},
        "query_space": {"kind": "synthetic", "radius": 0.2, "priors": GROUP_PRIORS},
    },
}

#: Questions compared per study (practice included).
QUESTIONS = 6

_CELL = re.compile(
    r'<td class="is-(?:correct|wrong)"\s+data-true="[^"]*" data-predicted="[^"]*">\s*([^<\s]+)', re.S
)


def _page_counts(html: str, side: str, groups: int, k: int) -> np.ndarray:
    """The cells of the question page's tables for one side, as numbers, shaped ``(groups, k, k)``."""
    panels = []
    for group in range(groups):
        start = html.index(f'data-testid="counts-{side}-{group}"')
        table = html[start : html.index("</table>", start)]
        panels.append([float(unescape(cell)) for cell in _CELL.findall(table)])
    return np.array(panels).reshape(groups, k, k)


def _flat(nested: Any) -> list[Any]:
    return [leaf for item in nested for leaf in _flat(item)] if isinstance(nested, list) else [nested]


def test_every_study_algorithm_is_covered() -> None:
    assert sorted(STUDIES) == sorted(REGISTRY)


@pytest.mark.parametrize("name", sorted(STUDIES))
def test_the_api_shows_each_question_exactly_as_the_page_does(
    name: str, client: TestClient, app: Any
) -> None:
    study = make_study(app, **{**SMALL_STUDY, "algorithm": name, **STUDIES[name]})
    token = new_session(client, study)
    state = client.get(f"/api/v1/sessions/{token}").json()
    rng = np.random.default_rng(0)
    decimals_seen = []
    for _ in range(QUESTIONS):
        query = state["query"]
        if query is None:
            break
        page = client.get(f"/sessions/{token}")
        assert page.status_code == 200
        assert f'data-seq="{query["seq"]}"' in page.text
        for key, side in (("first", "left"), ("second", "right")):
            shown = np.asarray(query[key]["shown"], dtype=np.float64)
            stack = shown.reshape(-1, *shown.shape[-2:])
            assert np.array_equal(_page_counts(page.text, side, *stack.shape[:2]), stack), (name, key)
            # Rounded to the stated decimals, still out of 100 per group, and close to the exact counts.
            assert np.allclose(stack, np.round(stack, query["decimals"]))
            assert np.allclose(stack.sum(axis=(1, 2)), 100.0)
            exact = np.asarray(query[key]["confusion"])
            assert np.max(np.abs(shown - exact)) <= 10.0 ** -query["decimals"]
            if query["decimals"] == 0:
                assert all(isinstance(value, int) for value in _flat(query[key]["shown"]))
        decimals_seen.append(query["decimals"])
        response = client.post(
            f"/api/v1/sessions/{token}/answers",
            json={"seq": query["seq"], "preferred": "first" if rng.random() < 0.5 else "second"},
        )
        assert response.status_code == 200, response.text
        state = response.json()
    assert len(decimals_seen) >= 3, f"{name} asked only {decimals_seen}"
    # Algorithms that ask in tenths of a person show (and carry) the tenths.
    if REGISTRY[name].algorithm.display_decimals:
        assert 1 in decimals_seen, decimals_seen
