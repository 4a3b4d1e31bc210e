"""?page= on every paged listing and the API, read by one rule (views/_scoring.page_arg,
services.read_page; docs: reference/http-api.md, "Pages").

A page number that is not a whole number of at least 1 is a 400 that names the argument, on
pages and in the API alike. One past the end is a stale link or a typed address: a page shows
its last page and says there is no such page (the pager links only to pages that exist); the
API answers the empty page with the total and no next page, as its paging contract says.
"""

from __future__ import annotations

import html
import re

import pytest
from flask import Flask
from flask.testing import FlaskClient

from tests.factory import PASSWORD
from tests.security.world import World, make_world

BAD = ("abc", "-1", "0", "1e3", "²", "1.5")
PAST = ("999", "9" * 30)


@pytest.fixture
def world(app: Flask) -> World:
    """Sets A, B and blind C with runs, people and tokens (tests/security/world.py)."""
    return make_world(app)


def _admin(world: World) -> FlaskClient:
    client = world.app.test_client()
    response = client.post("/login", data={"username": "admin", "password": PASSWORD})
    assert response.status_code == 302
    return client


def _listings(world: World) -> list[tuple[str, str, bool]]:
    """(URL, page argument, whether the world lists anything there) of paged pages: users,
    jobs, audit, a test set's queries and chunks, its runs, a run's query table, the review
    queue, both pagers of the agreement page and a judge's labels. An empty listing says it is
    empty, whatever page was asked for."""
    a = world.sets["A"]
    ts, run = a.test_set_id, a.run_id
    return [
        ("/users/", "page", True),
        ("/jobs/", "page", True),
        ("/audit/", "page", True),
        (f"/test-sets/{ts}/queries", "page", True),
        (f"/test-sets/{ts}/chunks", "page", True),
        (f"/test-sets/{ts}/runs/", "page", True),
        (f"/test-sets/{ts}/dashboard/runs/{run}", "page", True),
        (f"/test-sets/{ts}/review", "page", False),
        (f"/test-sets/{ts}/agreement", "page", False),
        (f"/test-sets/{ts}/agreement", "pairs_page", False),
        (f"/test-sets/{ts}/judges/{world.judge_id}", "page", False),
    ]


def test_a_page_that_is_no_number_is_a_400_naming_it(world: World) -> None:
    client = _admin(world)
    failed = []
    for url, name, _ in _listings(world):
        assert client.get(url).status_code == 200, url
        for value in BAD:
            response = client.get(url, query_string={name: value})
            said = html.unescape(response.get_data(as_text=True))
            wanted = f"{name} must be a whole number of at least 1, not '{value}'"
            if response.status_code != 400 or wanted not in said:
                failed.append(f"{url}?{name}={value}: {response.status_code}")
    assert failed == []


def test_a_page_past_the_end_shows_the_last_page_and_says_so(world: World) -> None:
    client = _admin(world)
    failed = []
    for url, name, listed in _listings(world):
        for value in PAST:
            response = client.get(url, query_string={name: value})
            said = html.unescape(response.get_data(as_text=True))
            asked = min(int(value), 2**31)
            notice = re.search(rf"There is no page {asked}: this is the last page, 1 of 1\.", said)
            if response.status_code != 200 or (notice is None) == listed:
                failed.append(f"{url}?{name}={value}: {response.status_code}")
    assert failed == [], "\n".join(failed)
    first = client.get(_listings(world)[5][0]).get_data(as_text=True)
    assert "There is no page" not in first  # a page that exists says nothing


def test_the_runs_page_past_the_end_lists_its_last_page(world: World) -> None:
    client = _admin(world)
    url = f"/test-sets/{world.sets['A'].test_set_id}/runs/"
    first = client.get(url).get_data(as_text=True)
    past = client.get(f"{url}?page=7").get_data(as_text=True)
    assert "There is no page 7: this is the last page, 1 of 1." in html.unescape(past)
    # The same rows as page 1 (the only page).
    rows = re.compile(rf'href="{url}(\d+)"')
    assert rows.findall(past) == rows.findall(first) != []


def test_the_api_refuses_a_malformed_page_and_answers_past_the_end_empty(world: World) -> None:
    client = world.app.test_client()
    headers = {"Authorization": f"Bearer {world.tokens['admin']}"}
    url = f"/api/testsets/{world.sets['A'].test_set_id}/runs"
    total = client.get(url, headers=headers).get_json()["total"]
    assert total >= 1
    for value in BAD:
        answer = client.get(url, query_string={"page": value}, headers=headers)
        assert answer.status_code == 400, value
        assert answer.get_json() == {
            "error": "Bad Request",
            "detail": f"page must be a whole number of at least 1, not '{value}'",
        }
    for value in PAST:
        body = client.get(url, query_string={"page": value}, headers=headers).get_json()
        assert (body["runs"], body["total"], body["next_page"]) == ([], total, None), value
        assert body["page"] == min(int(value), 2**31)
