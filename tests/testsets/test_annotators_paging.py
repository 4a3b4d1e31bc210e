"""The annotators page of a large team: 50 people a page with the People table's pager, and a
save on one page grants and revokes among that page's people only."""

from __future__ import annotations

import re

import sqlalchemy as sa
from flask import Flask
from flask.testing import FlaskClient

from ndcg_labeler.extensions import db
from ndcg_labeler.models import TestSetMember, User
from tests.factory import grant, make_test_set

TEAM = 120  # a000..a119: three pages of 50, 50 and 20


def _team(app: Flask) -> dict[str, int]:
    """TEAM active annotators, written in one go; their ids by name."""
    with app.app_context():
        db.session.add_all(
            User(username=f"a{i:03d}", role="annotator", active=True) for i in range(TEAM)
        )
        db.session.commit()
        return dict(db.session.execute(sa.select(User.username, User.id)).all())


def _offered(page: str) -> list[str]:
    """The names of the checkboxes the page offers, in order."""
    return re.findall(r'<input[^>]*type="checkbox"[^>]*>\s*<label[^>]*>([^<]+)</label>', page)


def _members(app: Flask, test_set_id: int) -> set[int]:
    with app.app_context():
        return set(
            db.session.scalars(
                sa.select(TestSetMember.user_id).where(TestSetMember.test_set_id == test_set_id)
            )
        )


def test_the_annotators_page_pages_a_large_team(app: Flask, as_admin: FlaskClient) -> None:
    _team(app)
    ts = make_test_set(app)
    first = as_admin.get(f"/test-sets/{ts}/annotators").get_data(as_text=True)
    assert _offered(first) == [f"a{i:03d}" for i in range(50)]
    assert "Page 1 of 3" in first
    assert f'href="/test-sets/{ts}/annotators?page=2" rel="next"' in first
    last = as_admin.get(f"/test-sets/{ts}/annotators?page=3").get_data(as_text=True)
    assert _offered(last) == [f"a{i:03d}" for i in range(100, 120)]


def test_saving_one_page_keeps_the_members_of_the_others(app: Flask, as_admin: FlaskClient) -> None:
    ids = _team(app)
    ts = make_test_set(app)
    for name in ("a001", "a060", "a110"):
        grant(app, ts, ids[name])
    # Page 2 (a050..a099): untick a060, tick a070; a001 (page 1) and a110 (page 3) unseen.
    page = as_admin.get(f"/test-sets/{ts}/annotators?page=2").get_data(as_text=True)
    assert re.search(rf'value="{ids["a060"]}"[^>]*checked|checked[^>]*value="{ids["a060"]}"', page)
    response = as_admin.post(
        f"/test-sets/{ts}/annotators?page=2", data={"annotators": [str(ids["a070"])]}
    )
    assert response.status_code == 302
    assert _members(app, ts) == {ids["a001"], ids["a070"], ids["a110"]}
