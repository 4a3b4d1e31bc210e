"""The probe's low findings (issue 28, finding 6), each held: page numbers, JSON depth, CSV
exports, endpoint and judge names, and blind-set aggregates.

Each test attaches a `low-finding` property; tests/conftest.py prints them as one line of the
security section.
"""

from __future__ import annotations

import pytest
from flask import Flask
from flask.testing import FlaskClient

from tests.factory import PASSWORD
from tests.security.world import World, make_world

# ?page= values a visitor may type; before the fix the two past 2**63 answered 500.
PAGES = ("-5", "0", "abc", "1e3", str(2**63), str(10**20))


@pytest.fixture
def world(app: Flask) -> World:
    """Sets A, B and blind C with runs, people and tokens (tests/security/world.py)."""
    return make_world(app)


def _login(app: Flask, username: str) -> FlaskClient:
    client = app.test_client()
    response = client.post("/login", data={"username": username, "password": PASSWORD})
    assert response.status_code == 302, username
    return client


def _finding(request: pytest.FixtureRequest, name: str) -> None:
    request.node.user_properties.append(("low-finding", name))


def _list_pages(world: World) -> list[str]:
    """The six listings the probe broke with ?page=2**63."""
    a = world.sets["A"]
    return [
        f"/test-sets/{a.test_set_id}/queries",
        f"/test-sets/{a.test_set_id}/chunks",
        f"/test-sets/{a.test_set_id}/review",
        f"/testsets/{a.test_set_id}/judges/{world.judge_id}",
        "/jobs/",
        "/audit/",
    ]


def test_page_numbers_past_any_listing_show_the_last_page(
    world: World, request: pytest.FixtureRequest
) -> None:
    client = _login(world.app, "admin")
    pages = _list_pages(world)
    for url in pages:
        first = client.get(url)
        assert first.status_code == 200, url
        for value in PAGES:
            response = client.get(f"{url}?page={value}")
            assert response.status_code == 200, (url, value)
    _finding(request, f"page numbers ({len(pages)} listings × {len(PAGES)} values, no 500)")
