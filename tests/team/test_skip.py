"""The review page's Skip past the first few hundred disputed pairs: it keeps finding the next
disputed pair in the queue's order however long the queue is."""

from __future__ import annotations

import re

import sqlalchemy as sa
from flask import Flask
from flask.testing import FlaskClient

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Chunk, Judgment, Query, TestSet
from tests.factory import build, person

DISPUTED = 520  # more than any window of the queue a skip once looked at (500)


def _many_disputed(app: Flask) -> tuple[int, dict[str, int], int]:
    """One query, DISPUTED chunks c0001.. each graded 0 by alice and 3 by bob (span 3, all
    equally disputed: the queue orders them by docid). Inserted in bulk, not through the
    judging service, to stay cheap."""
    alice, bob = person(app, "alice"), person(app, "bob")
    built = build(app, "Many", pool={"q1": []}, target=2, members=(alice, bob))
    docids = [f"c{n:04d}" for n in range(1, DISPUTED + 1)]
    with app.app_context():
        db.session.execute(
            sa.insert(Chunk),
            [{"test_set_id": built.test_set_id, "docid": d, "text": d} for d in docids],
        )
        chunks = dict(
            db.session.execute(
                sa.select(Chunk.docid, Chunk.id).where(Chunk.test_set_id == built.test_set_id)
            ).all()
        )
        query_id = db.session.scalar(sa.select(Query.id).where(Query.qid == "q1"))
        db.session.execute(
            sa.insert(Judgment),
            [
                {
                    "test_set_id": built.test_set_id,
                    "query_id": query_id,
                    "chunk_id": chunks[d],
                    "annotator_id": who,
                    "status": "graded",
                    "grade": value,
                }
                for d in docids
                for who, value in ((alice, 0), (bob, 3))
            ],
        )
        db.session.commit()
    return built.test_set_id, chunks, query_id


def _skip_target(client: FlaskClient, test_set_id: int, query_id: int, chunk_id: int) -> str:
    html = client.get(f"/test-sets/{test_set_id}/review/{query_id}/{chunk_id}").get_data(
        as_text=True
    )
    found = re.search(r'<a href="([^"]+)" data-skip', html)
    assert found, html
    return found.group(1)


def test_skip_finds_the_next_disputed_pair_past_the_first_500(
    app: Flask, as_admin: FlaskClient
) -> None:
    test_set_id, chunks, q = _many_disputed(app)
    base = f"/test-sets/{test_set_id}/review/{q}"
    # Within the first 500, past their end, far beyond it, and from the last back to the first.
    for here, there in (
        ("c0010", "c0011"),
        ("c0500", "c0501"),
        ("c0510", "c0511"),
        ("c0519", "c0520"),
        ("c0520", "c0001"),
    ):
        assert _skip_target(as_admin, test_set_id, q, chunks[here]) == f"{base}/{chunks[there]}"


def _adjudicate(client: FlaskClient, test_set_id: int, query_id: int, chunk_id: int) -> str:
    url = f"/test-sets/{test_set_id}/review/{query_id}/{chunk_id}"
    html = client.get(url).get_data(as_text=True)
    token = re.search(r'name="csrf_token" (?:type="hidden" )?value="([^"]+)"', html)
    seen = re.search(r'name="seen" (?:type="hidden" )?value="([^"]*)"', html)
    assert token and seen, html
    answer = client.post(
        url,
        data={"csrf_token": token.group(1), "grade": "2", "note": "", "seen": seen.group(1)},
    )
    assert answer.status_code == 302, answer.get_data(as_text=True)
    return answer.headers["Location"]


def test_skip_leaves_out_a_pair_adjudicated_since_the_last_look(
    app: Flask, as_admin: FlaskClient
) -> None:
    # The order of the waiting pairs is kept between page views: an adjudication must take
    # its pair out of it at once, and a new dispute must come in.
    test_set_id, chunks, q = _many_disputed(app)
    base = f"/test-sets/{test_set_id}/review/{q}"
    assert _skip_target(as_admin, test_set_id, q, chunks["c0010"]) == f"{base}/{chunks['c0011']}"
    # Settling c0011 sends the admin on to the first pair still waiting, c0001.
    assert _adjudicate(as_admin, test_set_id, q, chunks["c0011"]) == f"{base}/{chunks['c0001']}"
    assert _skip_target(as_admin, test_set_id, q, chunks["c0010"]) == f"{base}/{chunks['c0012']}"
    # From the settled pair itself, Skip goes to the first waiting one.
    assert _skip_target(as_admin, test_set_id, q, chunks["c0011"]) == f"{base}/{chunks['c0001']}"


def test_skip_follows_a_new_threshold(app: Flask, as_admin: FlaskClient) -> None:
    # Span 3 everywhere; with the threshold at 3 all stay disputed, so the one flagged pair
    # with span 2 (below) drops out of the order when the threshold rises from 2 to 3.
    test_set_id, chunks, q = _many_disputed(app)
    base = f"/test-sets/{test_set_id}/review/{q}"
    with app.app_context():
        db.session.execute(
            sa.update(Judgment)
            .where(Judgment.chunk_id == chunks["c0011"], Judgment.grade == 3)
            .values(grade=2)
        )
        db.session.execute(
            sa.update(TestSet)
            .where(TestSet.id == test_set_id)
            .values(labels_version=TestSet.labels_version + 1)
        )
        db.session.commit()
    # Span 2 sorts after every span 3: c0010's next is c0012 and c0011 comes last.
    assert _skip_target(as_admin, test_set_id, q, chunks["c0010"]) == f"{base}/{chunks['c0012']}"
    assert _skip_target(as_admin, test_set_id, q, chunks["c0520"]) == f"{base}/{chunks['c0011']}"
    with app.app_context():
        db.session.execute(
            sa.update(TestSet).where(TestSet.id == test_set_id).values(disagreement_threshold=3)
        )
        db.session.commit()
    assert _skip_target(as_admin, test_set_id, q, chunks["c0520"]) == f"{base}/{chunks['c0001']}"
