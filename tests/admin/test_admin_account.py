"""A coordinator changes their own password, on the account page or the API, under the password policy."""

from __future__ import annotations

from typing import Any

from admin_support import PASSWORD, bearer, hidden, login
from fastapi.testclient import TestClient

from app.admin.auth import MAX_FAILED_LOGINS

NEW_PASSWORD = "lantern octopus fernwood seventeen"


def _change(client: TestClient, csrf: str, current: str, new: str, repeat: str | None = None) -> Any:
    return client.post(
        "/admin/account/password",
        data={
            "csrf_token": csrf,
            "current_password": current,
            "new_password": new,
            "repeat_password": new if repeat is None else repeat,
        },
    )


def test_the_account_page_changes_the_password_with_clear_refusals(
    client: TestClient, app: Any, accounts: dict[str, Any]
) -> None:
    csrf = login(client, "alice@example.org")
    with TestClient(app) as other_browser:  # another browser of the same coordinator, logged in before
        login(other_browser, "alice@example.org")
        page = client.get("/admin/account")
        assert page.status_code == 200 and 'data-testid="account"' in page.text
        assert 'href="/admin/account"' in client.get("/admin").text
        refusals = [
            (
                _change(client, csrf, "not my password", NEW_PASSWORD),
                403,
                "the current password is not correct",
            ),
            (_change(client, csrf, PASSWORD, "password1234"), 422, "This is a very common password."),
            (_change(client, csrf, PASSWORD, " " * 14), 422, "must not be blank"),
            (_change(client, csrf, PASSWORD, NEW_PASSWORD, "something else entirely"), 400, "differ"),
        ]
        for response, status, message in refusals:
            assert response.status_code == status, response.text[:300]
            assert 'data-testid="password-error"' in response.text and message in response.text
        changed = _change(client, csrf, PASSWORD, NEW_PASSWORD)
        assert changed.status_code == 200 and 'data-testid="password-changed"' in changed.text
        # This browser stays logged in, and the page's new CSRF token works; the other browser is out.
        made = client.post(
            "/admin/tokens",
            data={"name": "after the change", "csrf_token": hidden(changed.text, "csrf_token")},
        )
        assert made.status_code == 201
        assert other_browser.get("/admin", follow_redirects=False).status_code == 303
    client.cookies.clear()
    login(client, "alice@example.org", NEW_PASSWORD)


def test_the_api_changes_the_callers_password_and_keeps_its_tokens(
    client: TestClient, accounts: dict[str, Any]
) -> None:
    headers = bearer(accounts["bob"]["token"])
    url = "/api/v1/account/password"
    wrong = client.post(url, json={"current_password": "nope", "new_password": NEW_PASSWORD}, headers=headers)
    assert wrong.status_code == 403 and wrong.json()["error"] == "wrong_password"
    weak = client.post(
        url, json={"current_password": PASSWORD, "new_password": "aaaaaaaaaaaa"}, headers=headers
    )
    assert weak.status_code == 422 and weak.json()["error"] == "weak_password"
    assert 'Repeats like "aaa" are easy to guess.' in weak.json()["message"]
    ok = client.post(url, json={"current_password": PASSWORD, "new_password": NEW_PASSWORD}, headers=headers)
    assert ok.status_code == 200 and ok.json() == {"email": "bob@example.org", "sessions_ended": True}
    assert client.get("/api/v1/tokens", headers=headers).status_code == 200  # the token still works
    login(client, "bob@example.org", NEW_PASSWORD)
    client.cookies.clear()
    anonymous = client.post(url, json={"current_password": NEW_PASSWORD, "new_password": PASSWORD})
    assert anonymous.status_code == 401


def test_guessing_the_current_password_is_limited_like_logins(
    client: TestClient, accounts: dict[str, Any]
) -> None:
    headers = bearer(accounts["alice"]["token"])
    statuses = [
        client.post(
            "/api/v1/account/password",
            json={"current_password": f"guess {i}", "new_password": NEW_PASSWORD},
            headers=headers,
        ).status_code
        for i in range(MAX_FAILED_LOGINS + 1)
    ]
    assert statuses == [403] * MAX_FAILED_LOGINS + [429]
