"""No dead ends: every link a person is shown opens for them (issue: annotators on a blind set
saw Dashboard and per-query links that answered 403), and a refusal is a page that says why
and where to go."""

from __future__ import annotations

import re
from collections import deque
from html import unescape
from urllib.parse import urldefrag, urlsplit

import pytest
from flask import Flask

from tests.factory import PASSWORD
from tests.security.world import make_world

SKIP = ("/static/", "/logout", "/favicon.ico")
LIMIT = 400


def _crawl(client, start: str = "/") -> dict[str, int]:
    """GET every same-site link reachable from `start` (at most LIMIT pages): url -> status."""
    seen: dict[str, int] = {}
    todo = deque([start])
    while todo and len(seen) < LIMIT:
        url = todo.popleft()
        if url in seen:
            continue
        response = client.get(url)
        seen[url] = response.status_code
        if response.status_code != 200 or response.mimetype != "text/html":
            response.close()
            continue
        for href in re.findall(r'href="([^"]+)"', response.get_data(as_text=True)):
            target = urldefrag(unescape(href)).url
            parts = urlsplit(target)
            if parts.scheme or parts.netloc or not target.startswith("/"):
                continue
            if not target.startswith(SKIP) and target not in seen:
                todo.append(target)
    return seen


@pytest.mark.parametrize("who", ["blindie", "bmember"])
def test_every_link_an_annotator_is_shown_opens(app: Flask, client, who: str) -> None:
    make_world(app)
    assert client.post("/login", data={"username": who, "password": PASSWORD}).status_code == 302
    statuses = _crawl(client)
    dead = {url: code for url, code in statuses.items() if code in (403, 404) or code >= 500}
    assert len(statuses) > 20  # the walk reached the test set's pages
    assert dead == {}
    print(f"\ndead ends: {who} followed {len(statuses)} links, {len(dead)} refused")


def test_a_refusal_says_why_and_where_to_go(app: Flask, client) -> None:
    world = make_world(app)
    client.post("/login", data={"username": "blindie", "password": PASSWORD})
    blind = world.sets["C"]
    url = f"/test-sets/{blind.test_set_id}/dashboard/runs/{blind.run_id}/queries/{blind.query_id}/"
    response = client.get(url)
    page = response.get_data(as_text=True)
    assert response.status_code == 403
    assert "judged blind by several annotators per pair" in page
    assert "Where to go" in page
    assert f'href="/test-sets/{blind.test_set_id}/label"' in page
    assert "Blind C: overview" in page
    # An address in a set this person was not given: 404, and nothing names that set.
    other = world.sets["A"]
    response = client.get(f"/test-sets/{other.test_set_id}/queries")
    page = response.get_data(as_text=True)
    assert response.status_code == 404
    assert "Not found" in page and "Set A" not in page
    assert 'href="/"' in page
    # Admin-only pages say so.
    response = client.get(f"/test-sets/{blind.test_set_id}/settings")
    assert response.status_code == 403 and "This page is for admins" in response.get_data(
        as_text=True
    )
