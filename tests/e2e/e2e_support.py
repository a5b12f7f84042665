"""Helpers shared by the browser tests: an automated participant answering over the JSON API, and the
back-office login."""

from __future__ import annotations

from collections.abc import Callable

import httpx
import numpy as np
from playwright.sync_api import Page

__all__ = ["answer_to_the_end", "sign_in"]


def answer_to_the_end(base_url: str, token: str, prefers: Callable[[np.ndarray, np.ndarray], bool]) -> None:
    """An automated participant answers a consented session over the JSON API until it is done."""
    with httpx.Client(base_url=base_url, timeout=30) as client:
        state = client.get(f"/api/v1/sessions/{token}").json()
        while state["query"] is not None:
            query = state["query"]
            first, second = np.asarray(query["first"]["rates"]), np.asarray(query["second"]["rates"])
            response = client.post(
                f"/api/v1/sessions/{token}/answers",
                json={
                    "seq": query["seq"],
                    "preferred": "first" if prefers(first, second) else "second",
                    "time_on_page_ms": 2000,
                },
            )
            assert response.status_code == 200, response.text
            state = response.json()
        assert state["status"] == "done"


def sign_in(page: Page, email: str, password: str) -> None:
    """Fill the back-office login form the page shows and submit it, waiting for the page it leads to."""
    page.get_by_test_id("login-email").fill(email)
    page.get_by_test_id("login-password").fill(password)
    with page.expect_navigation():
        page.get_by_test_id("login-submit").click()
