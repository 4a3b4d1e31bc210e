"""Query drill-down: rank-by-rank numbers, the gap split by hand, grading in place (+ access)."""

from __future__ import annotations

import math

import pytest
import sqlalchemy as sa
from flask import Flask
from flask.testing import FlaskClient

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Chunk, Judgment, JudgmentEvent, Query, Run, User
from ndcg_labeler.services import ServiceError
from ndcg_labeler.services import dashboard as dashboard_service
from ndcg_labeler.services.live import ScoreOptions, score_run
from tests.factory import L3, Demo, build_test_set, grant, pair_ids, the_test_set

L5, L6 = math.log2(5), math.log2(6)


def _query(demo: Demo, qid: str) -> Query:
    return db.session.scalar(
        sa.select(Query).where(Query.test_set_id == demo.test_set_id, Query.qid == qid)
    )


def test_gap_split_in_ordering_and_recall_loss_by_hand(ctx: Flask, dash: Demo) -> None:
    run = db.session.get_one(Run, dash.run_a)
    view = dashboard_service.drill_down(
        the_test_set(dash), run, _query(dash, "q1"), ScoreOptions(k=3)
    )
    d = view.detail
    # Run A, q1, top 3: c 1, d 0, a 3 → DCG 1 + 0 + 3/2 = 2.5.
    assert [(r.docid, r.grade, r.gain) for r in d.ranked] == [("c", 1, 1), ("d", 0, 0), ("a", 3, 3)]
    assert [r.discount for r in d.ranked] == pytest.approx([1, L3, 2])
    assert [r.contribution for r in d.ranked] == pytest.approx([1, 0, 1.5])
    assert d.dcg == pytest.approx(2.5)
    # Ideal of all judged: x 3, a 3, b 2 → 3 + 3/log2 3 + 1.
    assert [r.docid for r in d.ideal] == ["a", "x", "b"]
    assert d.idcg == pytest.approx(4 + 3 / L3)
    # Best order of what A retrieved (c, d, a, y): a 3, c 1, d 0 → 3 + 1/log2 3.
    assert d.idcg_retrieved == pytest.approx(3 + 1 / L3)
    assert d.ordering_loss == pytest.approx(0.5 + 1 / L3)
    assert d.recall_loss == pytest.approx(1 + 2 / L3)
    assert d.ordering_loss + d.recall_loss == pytest.approx(d.gap)
    # The same numbers as the query table (score_run).
    scores = score_run(run, ScoreOptions(k=3))
    i = scores.qids.index("q1")
    assert (d.dcg, d.idcg, d.ndcg) == (scores.dcg[i], scores.idcg[i], scores.ndcg[i])
    assert view.band == "poor" and view.reason is None and view.unjudged_in_top_k == 0


def test_ideal_from_retrieved_has_no_recall_loss(ctx: Flask, dash: Demo) -> None:
    run = db.session.get_one(Run, dash.run_a)
    options = ScoreOptions(k=3, ideal="retrieved")
    d = dashboard_service.drill_down(the_test_set(dash), run, _query(dash, "q1"), options).detail
    assert d.idcg == pytest.approx(3 + 1 / L3)
    assert d.recall_loss == pytest.approx(0.0)
    undefined = dashboard_service.drill_down(the_test_set(dash), run, _query(dash, "q4"), options)
    assert undefined.reason == "no relevant chunk retrieved: IDCG is 0"


def test_grading_an_unjudged_chunk_rescores_the_query(ctx: Flask, dash: Demo) -> None:
    test_set, run = the_test_set(dash), db.session.get_one(Run, dash.run_a)
    user = User(username="ann2", role="annotator", active=True)
    db.session.add(user)
    db.session.commit()
    query = _query(dash, "q1")
    before = dashboard_service.drill_down(test_set, run, query, ScoreOptions(k=5))
    unjudged = [r for r in before.detail.ranked if not r.judged]
    assert [r.docid for r in unjudged] == ["y"] and before.unjudged_in_top_k == 1
    result = dashboard_service.grade_chunk(test_set, query, unjudged[0].chunk_id, 3, user)
    assert result.created
    after = dashboard_service.drill_down(test_set, run, query, ScoreOptions(k=5)).detail
    # c 1, d 0, a 3, y 3 against x 3, a 3, y 3, b 2, c 1.
    dcg = 1 + 0 + 3 / 2 + 3 / L5
    idcg = 3 + 3 / L3 + 3 / 2 + 2 / L5 + 1 / L6
    assert (after.dcg, after.idcg) == (pytest.approx(dcg), pytest.approx(idcg))
    assert after.ndcg == pytest.approx(dcg / idcg)
    row = db.session.scalar(sa.select(Judgment).where(Judgment.annotator_id == user.id))
    assert (row.grade, row.status, row.query_id) == (3, "graded", query.id)
    events = sa.select(sa.func.count()).where(JudgmentEvent.annotator_id == user.id)
    assert db.session.scalar(events) == 1


def test_grade_chunk_refuses_bad_input(ctx: Flask, dash: Demo) -> None:
    test_set, query = the_test_set(dash), _query(dash, "q1")
    user = User(username="ann3", role="annotator", active=True)
    db.session.add(user)
    db.session.commit()
    chunk_id = db.session.scalar(sa.select(Chunk.id).where(Chunk.docid == "y"))
    with pytest.raises(ServiceError, match="choose a grade"):
        dashboard_service.grade_chunk(test_set, query, chunk_id, None, user)
    with pytest.raises(ServiceError, match="outside this test set's scale"):
        dashboard_service.grade_chunk(test_set, query, chunk_id, 7, user)
    other = build_test_set("other", {"q1": "x"}, corpus={"y": "other y"})
    foreign = db.session.scalar(
        sa.select(Chunk.id).where(Chunk.test_set_id == other.id, Chunk.docid == "y")
    )
    with pytest.raises(ServiceError, match="not in this test set"):
        dashboard_service.grade_chunk(test_set, query, foreign, 1, user)
    assert (
        db.session.scalar(
            sa.select(sa.func.count()).select_from(Judgment).where(Judgment.annotator_id == user.id)
        )
        == 0
    )


def _page(demo: Demo, query_id: int, run_id: int | None = None, suffix: str = "") -> str:
    return demo.url(f"/runs/{run_id or demo.run_a}/queries/{query_id}/{suffix}")


def test_page_shows_both_rankings_and_forms_for_unjudged(
    app: Flask, as_admin: FlaskClient, dash: Demo
) -> None:
    query_id, y = pair_ids(app, dash.test_set_id, "q1", "y")
    html = as_admin.get(_page(dash, query_id) + "?k=5").get_data(as_text=True)
    assert "The run's top 5" in html and "The ideal top 5" in html
    assert "Ordering loss" in html and "Recall loss" in html
    assert f'name="chunk_id" value="{y}"' in html
    assert html.count('class="grade-form"') == 1  # only y is unjudged
    assert 'hx-post="' in html and 'hx-trigger="every 1s"' in html


def test_notice_does_not_ask_to_grade_a_chunk_missing_from_the_corpus(
    app: Flask, as_admin: FlaskClient, dash: Demo
) -> None:
    # B on q2, top 3: e2 1, e1 2, ghost. ghost is unjudged and named by no corpus: the page
    # has no grade buttons for it, so it must not say "Grade it below".
    query_id, _ = pair_ids(app, dash.test_set_id, "q2", "e1")
    html = as_admin.get(_page(dash, query_id, dash.run_b) + "?k=3").get_data(as_text=True)
    assert 'class="grade-form"' not in html
    notice = html.split('<p class="notice">', 1)[1].split("</p>", 1)[0]
    assert "1 of the run's top 3 is unjudged and counts as 0." in notice
    assert "Grade it below" not in notice
    assert "not in the corpus" in notice
    # A on q1, top 5: y is unjudged and has text: graded below, as before.
    query_id, _ = pair_ids(app, dash.test_set_id, "q1", "y")
    html = as_admin.get(_page(dash, query_id) + "?k=5").get_data(as_text=True)
    notice = html.split('<p class="notice">', 1)[1].split("</p>", 1)[0]
    assert "Grade it below: the scores update at once." in notice
    assert "not in the corpus" not in notice


def test_grading_without_javascript_redirects_back(
    app: Flask, as_admin: FlaskClient, dash: Demo
) -> None:
    query_id, y = pair_ids(app, dash.test_set_id, "q1", "y")
    response = as_admin.post(
        _page(dash, query_id, suffix="grade") + "?k=5", data={"chunk_id": y, "grade": 2}
    )
    assert response.status_code == 302
    assert response.headers["Location"].endswith(_page(dash, query_id) + "?k=5")
    assert "Grade saved." in as_admin.get(response.headers["Location"]).get_data(as_text=True)
    with app.app_context():
        admin = db.session.scalar(sa.select(User).where(User.username == "admin"))
        judgment = db.session.scalar(sa.select(Judgment).where(Judgment.annotator_id == admin.id))
        assert (judgment.grade, judgment.chunk_id) == (2, y)


def test_grading_with_htmx_returns_the_updated_fragment(
    app: Flask, as_admin: FlaskClient, dash: Demo
) -> None:
    query_id, y = pair_ids(app, dash.test_set_id, "q1", "y")
    url = _page(dash, query_id, suffix="grade") + "?k=5"
    response = as_admin.post(url, data={"chunk_id": y, "grade": 3}, headers={"HX-Request": "true"})
    assert response.status_code == 200
    html = response.get_data(as_text=True)
    assert html.lstrip().startswith('<div id="live-scores"')
    assert "<html" not in html
    ndcg = (1 + 1.5 + 3 / L5) / (3 + 3 / L3 + 1.5 + 2 / L5 + 1 / L6)
    assert f'data-ndcg="{ndcg:.6f}"' in html
    assert 'class="grade-form"' not in html  # nothing left to grade in the top 5
    bad = as_admin.post(url, data={"chunk_id": y, "grade": 9}, headers={"HX-Request": "true"})
    assert "Not saved: grade 9 is outside" in bad.get_data(as_text=True)


def test_access(app: Flask, client: FlaskClient, auth, annotator_id: int, dash: Demo) -> None:
    query_id, y = pair_ids(app, dash.test_set_id, "q1", "y")
    page, post = _page(dash, query_id), _page(dash, query_id, suffix="grade")
    fragment = _page(dash, query_id, suffix="_detail")
    for url in (page, fragment):
        assert client.get(url).status_code == 302  # anonymous: to the login page
    assert (
        client.post(post, data={"chunk_id": y, "grade": 1}).status_code == 401
    )  # kept, signed out
    auth.login("ann")
    for url in (page, fragment):
        assert client.get(url).status_code == 404  # not a member
    assert client.post(post, data={"chunk_id": y, "grade": 1}).status_code == 404
    grant(app, dash.test_set_id, annotator_id)
    assert client.get(page).status_code == 200
    assert client.get(fragment).status_code == 200
    assert client.post(post, data={"chunk_id": y, "grade": 1}).status_code == 302
    with app.app_context():
        judgment = db.session.scalar(
            sa.select(Judgment).where(Judgment.annotator_id == annotator_id)
        )
        assert judgment.grade == 1  # saved as the annotator, not anyone else
    # A query or run of another test set is 404.
    assert client.get(_page(dash, 999_999)).status_code == 404
    assert client.get(dash.url(f"/runs/999999/queries/{query_id}/")).status_code == 404


def test_blind_overlap_hides_per_pair_grades_from_annotators(
    app: Flask, client: FlaskClient, auth, annotator_id: int, admin_id: int, dash: Demo
) -> None:
    """With several annotators per pair, an annotator must not read grades before grading."""
    query_id, y = pair_ids(app, dash.test_set_id, "q1", "y")
    with app.app_context():
        the_test_set(dash).judgments_per_pair = 2
        db.session.commit()
    grant(app, dash.test_set_id, annotator_id)
    blind = [
        _page(dash, query_id),
        _page(dash, query_id, suffix="_detail"),
        dash.url("/export/qrels.txt"),
        dash.url(f"/export/runs/{dash.run_a}/queries/{query_id}.json"),
        # The per-query table: its DCG, IDCG and relevant counts are the grades summed up.
        dash.url(f"/runs/{dash.run_a}"),
    ]
    auth.login("ann")
    for url in blind:
        response = client.get(url)
        assert response.status_code == 403, url
    assert b"judged blind" in client.get(blind[0]).data
    assert client.post(blind[0] + "grade", data={"chunk_id": y, "grade": 1}).status_code == 403
    # The overview's means stay open to members.
    assert client.get(dash.url("/")).status_code == 200
    auth.logout()
    auth.login("admin")
    for url in blind:
        assert client.get(url).status_code == 200, url
