"""Page markup that axe-core rates minor but people trip over: ids used twice (a label or a
skip link then points at the wrong element) and table headers without text."""

from __future__ import annotations

from collections import Counter
from html.parser import HTMLParser

import pytest
from flask import Flask
from flask.testing import FlaskClient

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Run
from tests.factory import build_runs, pair_ids


class _Markup(HTMLParser):
    """Collects every id and the text of every <th>."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: Counter[str] = Counter()
        self.headers: list[str] = []
        self._th: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if found.get("id"):
            self.ids[str(found["id"])] += 1
        if tag == "th":
            self._th = [str(found.get("aria-label") or "")]

    def handle_endtag(self, tag: str) -> None:
        if tag == "th" and self._th is not None:
            self.headers.append("".join(self._th).strip())
            self._th = None

    def handle_data(self, data: str) -> None:
        if self._th is not None:
            self._th.append(data)


def _parse(client: FlaskClient, url: str) -> _Markup:
    response = client.get(url, follow_redirects=True)
    assert response.status_code == 200, url
    markup = _Markup()
    markup.feed(response.get_data(as_text=True))
    return markup


@pytest.fixture
def pages(app: Flask) -> list[str]:
    """The pages issue 33 found wanting (annotators, compare), and the labeling and review
    pages, whose forms each carried a CSRF field with the same id."""
    test_set_id = build_runs(app, "Markup").id
    query_id, chunk_id = pair_ids(app, test_set_id, "q1", "d1")
    with app.app_context():
        runs = db.session.scalars(db.select(Run.id).order_by(Run.id)).all()
    base = f"/test-sets/{test_set_id}"
    return [
        f"{base}/annotators",
        f"{base}/dashboard/compare/?run={runs[0]}&run={runs[1]}&stats=1",
        f"{base}/label",
        f"{base}/review/{query_id}/{chunk_id}",
        f"{base}/queries/{query_id}/review",
    ]


def test_no_id_twice_and_no_empty_header(as_admin: FlaskClient, pages: list[str]) -> None:
    seen = {}
    for url in pages:
        markup = seen[url] = _parse(as_admin, url)
        assert [i for i, n in markup.ids.items() if n > 1] == [], url
        assert "" not in markup.headers, (url, markup.headers)
    # The compare page's means table names its first column (it was the empty one).
    assert seen[pages[1]].headers[:2] == ["Label", "Run"]
