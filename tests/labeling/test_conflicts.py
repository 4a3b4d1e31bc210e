"""No silent overwrite: a grading form saves only over the version of my judgment it was
rendered with. Two tabs on one pair, the query review and the drill-down's in-place grading;
a 409 changes nothing and shows both grades; replacing is one more click; retries are safe."""

from __future__ import annotations

import re

import sqlalchemy as sa
from flask import Flask
from flask.testing import FlaskClient

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Chunk, Judgment, JudgmentEvent, Query
from tests.factory import build, build_dashboard


def _version(page: str) -> str:
    return re.search(r'name="version" value="(\d+)"', page).group(1)


def _mine(app: Flask, chunk_id: int, query_id: int | None = None) -> list[tuple]:
    """(status, grade, version) of the judgments of a chunk (for one query when given)."""
    stmt = sa.select(Judgment.status, Judgment.grade, Judgment.version).where(
        Judgment.chunk_id == chunk_id
    )
    if query_id is not None:
        stmt = stmt.where(Judgment.query_id == query_id)
    with app.app_context():
        return [tuple(r) for r in db.session.execute(stmt)]


def _events(app: Flask) -> int:
    with app.app_context():
        return db.session.scalar(sa.select(sa.func.count()).select_from(JudgmentEvent))


def _no_tokens(html: str) -> str:
    """The page without its CSRF tokens: they are signed with the second they were made, so two
    renderings a second apart differ there and nowhere else."""
    return re.sub(r'(name="csrf[-_]token"[^>]*?(?:value|content)=")[^"]*"', r'\1"', html)


def test_two_tabs_on_one_pair(app: Flask, as_admin: FlaskClient) -> None:
    built = build(app, "Tabs", pool={"q1": ["d1", "d2"]})
    url = f"/test-sets/{built.test_set_id}/label/{built.pairs[0]}"
    tab1 = as_admin.get(url).get_data(as_text=True)
    tab2 = as_admin.get(url).get_data(as_text=True)
    assert _version(tab1) == _version(tab2) == "0"
    assert as_admin.post(url, data={"grade": 3, "version": _version(tab1)}).status_code == 302
    events = _events(app)
    # Tab 2 was rendered before tab 1 saved: its 1 must not silently replace the 3.
    posted = as_admin.post(url, data={"grade": 1, "version": _version(tab2)})
    # The conflict lives at the conflicting pair's own address (a reload shows it again).
    assert posted.status_code == 303
    assert posted.headers["Location"] == f"{url}?conflict=1"
    refused = as_admin.get(posted.headers["Location"])
    page = refused.get_data(as_text=True)
    assert refused.status_code == 409
    reloaded = as_admin.get(posted.headers["Location"]).get_data(as_text=True)
    assert _no_tokens(reloaded) == _no_tokens(page)  # a reload shows the same conflict
    assert _mine(app, built.chunks["d1"]) == [("graded", 3, 1)]
    assert _events(app) == events
    stored = re.sub(r"<[^>]+>", "", re.search(r'id="stored-verdict">(.*?)</dd>', page).group(1))
    assert stored.startswith("grade 3 (") and "UTC" in stored
    tried = re.search(r'id="tried-verdict">(.*?)</dd>', page).group(1)
    assert re.sub(r"<[^>]+>", "", tried) == "grade 1 (Related)"
    # Keep: a link on; replace: one POST over the stored version.
    assert 'id="keep-stored"' in page
    replace = re.search(r'name="version" value="(\d+)"', page.split('id="tried-verdict"')[1])
    assert replace.group(1) == "1"
    again = as_admin.post(url, data={"grade": 1, "version": replace.group(1)})
    assert again.status_code == 302
    # Once nothing conflicts, the old conflict address shows the pair itself.
    assert 'id="stored-verdict"' not in as_admin.get(f"{url}?conflict=1").get_data(as_text=True)
    assert _mine(app, built.chunks["d1"]) == [("graded", 1, 2)]
    # A retried save of what is stored is not a conflict (double click, network retry).
    assert as_admin.post(url, data={"grade": 1, "version": "1"}).status_code == 302
    assert _mine(app, built.chunks["d1"]) == [("graded", 1, 2)]
    # Without a version (old clients, scripts) the save is applied as before.
    assert as_admin.post(url, data={"grade": 0}).status_code == 302
    assert _mine(app, built.chunks["d1"]) == [("graded", 0, 3)]


def test_the_query_review_refuses_a_stale_regrade(app: Flask, as_admin: FlaskClient) -> None:
    built = build(app, "Review", pool={"q1": ["d1", "d2"]})
    ts, pair = built.test_set_id, built.pairs[0]
    assert as_admin.post(f"/test-sets/{ts}/label/{pair}", data={"grade": 2}).status_code == 302
    review_url = f"/test-sets/{ts}/queries/{built.queries['q1']}/review"
    review = as_admin.get(review_url).get_data(as_text=True)
    stale = re.search(rf'action="/test-sets/{ts}/label/{pair}".*?name="version" value="(\d+)"',
                      review, re.S).group(1)  # fmt: skip
    assert stale == "1"
    # Meanwhile, the labeling tab changes the grade to 0.
    assert as_admin.post(f"/test-sets/{ts}/label/{pair}", data={"grade": 0, "version": "1"})
    refused = as_admin.post(
        f"/test-sets/{ts}/label/{pair}",
        data={"grade": 3, "version": stale, "next": review_url},
        follow_redirects=True,
    )
    assert refused.status_code == 409
    assert refused.request.path == f"/test-sets/{ts}/label/{pair}"
    assert _mine(app, built.chunks["d1"]) == [("graded", 0, 2)]
    assert f'href="{review_url}"' in refused.get_data(as_text=True)  # keep: back to the review


def test_the_drill_down_refuses_a_stale_grade(app: Flask, as_admin: FlaskClient) -> None:
    dash = build_dashboard(app)
    with app.app_context():
        q4 = db.session.scalar(sa.select(Query.id).where(Query.qid == "q4"))
        chunk = db.session.scalar(sa.select(Chunk.id).where(Chunk.docid == "a"))
    page_url = dash.url(f"/runs/{dash.run_a}/queries/{q4}/")
    grade_url = dash.url(f"/runs/{dash.run_a}/queries/{q4}/grade")
    page = as_admin.get(page_url).get_data(as_text=True)
    version = re.search(
        rf'name="chunk_id" value="{chunk}">\s*<input type="hidden" name="version" value="(\d+)"',
        page,
    ).group(1)
    assert version == "0"
    # The same person grades it from the labeling screen (another tab) first.
    assert as_admin.post(grade_url, data={"chunk_id": chunk, "grade": 1, "version": version})
    before = _mine(app, chunk, q4)
    assert before == [("graded", 1, 1)]
    refused = as_admin.post(
        grade_url,
        data={"chunk_id": chunk, "grade": 3, "version": version},
        headers={"HX-Request": "true"},
    )
    body = refused.get_data(as_text=True)
    assert refused.status_code == 409 and 'id="grade-conflict"' in body
    assert "Stored now:" in body and "grade <strong>1</strong>" in body
    assert _mine(app, chunk, q4) == before
    replace = re.search(r'name="version" value="(\d+)">\s*<button[^>]*id="replace-stored"', body)
    assert replace is not None
    ok = as_admin.post(
        grade_url,
        data={"chunk_id": chunk, "grade": 3, "version": replace.group(1)},
        headers={"HX-Request": "true"},
    )
    assert ok.status_code == 200
    assert _mine(app, chunk, q4) == [("graded", 3, 2)]
