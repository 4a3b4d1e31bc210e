"""Large teams page: the People table and the Agreement page's table of two annotators show
one page at a time with a pager, not every row of a team of hundreds."""

from __future__ import annotations

import re

from flask import Flask
from flask.testing import FlaskClient

from ndcg_labeler.extensions import db
from tests.factory import build_test_set, grade

RATERS = 120  # 120 people, C(120, 2) = 7140 annotator pairs: more than a page of either


def _crowd(app: Flask) -> int:
    """A test set whose one pair (q1, a) each of RATERS people graded 1, r000..r119."""
    with app.app_context():
        test_set = build_test_set("crowd", {"q1": "one"}, corpus={"a": "alpha"})
        for i in range(RATERS):
            grade(test_set, "q1", "a", 1, f"r{i:03d}")
        test_set_id = test_set.id
        db.session.remove()
        return test_set_id


def _rows(page: str, table_class: str) -> list[str]:
    """The row headers or first cells of the table with the given class."""
    table = re.search(rf'<table class="{table_class}">(.*?)</table>', page, re.S)
    assert table is not None, page
    return re.findall(r"<tr>\s*<(?:th scope=\"row\"|td)>([^<]+)<", table.group(1))


def test_the_people_page_pages_a_large_team(app: Flask, as_admin: FlaskClient) -> None:
    test_set_id = _crowd(app)
    first = as_admin.get(f"/test-sets/{test_set_id}/people").get_data(as_text=True)
    assert _rows(first, "people") == [f"r{i:03d}" for i in range(50)]
    assert "Page 1 of 3" in first
    last = as_admin.get(f"/test-sets/{test_set_id}/people?page=3").get_data(as_text=True)
    assert _rows(last, "people") == [f"r{i:03d}" for i in range(100, 120)]
    # The downloads keep every row.
    csv = as_admin.get(f"/test-sets/{test_set_id}/people.csv").get_data(as_text=True)
    assert len(csv.splitlines()) == 1 + RATERS


def test_the_agreement_page_pages_its_annotator_pairs(app: Flask, as_admin: FlaskClient) -> None:
    test_set_id = _crowd(app)
    page = as_admin.get(f"/test-sets/{test_set_id}/agreement").get_data(as_text=True)
    shown = _rows(page, "annotator-pairs")
    # Sorted by name: r000 with r001..r050 fill the first page of 50.
    assert shown == ["r000"] * 50
    assert "7140 pairs of annotators" in page
    second = as_admin.get(f"/test-sets/{test_set_id}/agreement?pairs_page=2")
    assert _rows(second.get_data(as_text=True), "annotator-pairs") == ["r000"] * 50
    assert "pairs_page=2" in page
