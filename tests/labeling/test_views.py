"""Labeling screens: access, grading by plain form POST, undo, skip, can't tell, escaping."""

from __future__ import annotations

import re

import pytest
import sqlalchemy as sa
from flask import Flask
from flask.testing import FlaskClient

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Judgment, JudgmentEvent, Pair, User
from ndcg_labeler.services import labeling
from tests.factory import PASSWORD, build, make_user


def _url(built, suffix=""):
    return f"/test-sets/{built.test_set_id}/label{suffix}"


def _pair_url(built, index):
    return _url(built, f"/{built.pairs[index]}")


def _judgments(app):
    with app.app_context():
        return db.session.execute(
            sa.select(Judgment.chunk_id, Judgment.status, Judgment.grade, Judgment.note).order_by(
                Judgment.id
            )
        ).all()


def _events(app):
    with app.app_context():
        return db.session.execute(
            sa.select(
                JudgmentEvent.chunk_id, JudgmentEvent.old_grade, JudgmentEvent.new_grade
            ).order_by(JudgmentEvent.id)
        ).all()


@pytest.fixture
def member(app: Flask, annotator_id: int):
    """A test set (q1: d1, d2; q2: d3) that the annotator `ann` is a member of."""
    return build(app, "Helpdesk", members=(annotator_id,))


def test_anonymous_is_sent_to_login(client: FlaskClient, member):
    for url in (
        _url(member),
        _pair_url(member, 0),
        f"/test-sets/{member.test_set_id}/queries/1/review",
    ):
        response = client.get(url)
        assert response.status_code == 302 and "/login" in response.headers["Location"]
    response = client.post(_pair_url(member, 0), data={"grade": "2"})
    # Not redirected, which would drop the grade: a sign-in page that keeps it (401).
    assert response.status_code == 401 and b'id="resume-login"' in response.data


def test_non_member_gets_404_everywhere(app: Flask, client: FlaskClient, auth, member):
    make_user(app, "outsider")
    auth.login("outsider")
    review = f"/test-sets/{member.test_set_id}/queries/{member.queries['q1']}/review"
    for url in (_url(member), _pair_url(member, 0), review):
        assert client.get(url).status_code == 404
    assert client.post(_pair_url(member, 0), data={"grade": "2"}).status_code == 404
    assert client.post(_url(member, "/shortcuts"), data={"enabled": "0"}).status_code == 404
    assert _judgments(app) == []


def test_member_gets_the_first_pair(as_annotator: FlaskClient, member):
    response = as_annotator.get(_url(member))
    assert response.status_code == 302
    assert response.headers["Location"].endswith(_pair_url(member, 0))
    page = as_annotator.get(_pair_url(member, 0)).get_data(as_text=True)
    assert "text of q1" in page and "body of d1" in page
    # Every grade button shows its digit, name and definition.
    for digit, name, definition in (
        (0, "Irrelevant", "Does not help."),
        (3, "Perfect", "Fully answers."),
    ):
        assert re.search(
            rf'<button type="submit" name="grade" value="{digit}".*?{name}.*?{definition}',
            page,
            re.S,
        )
    assert 'id="progress-mine"' in page and 'id="progress-complete"' in page
    assert 'data-shortcuts="on"' in page


def test_admin_can_label_any_test_set(as_admin: FlaskClient, member):
    response = as_admin.get(_url(member))
    assert response.status_code == 302
    assert response.headers["Location"].endswith(_pair_url(member, 0))


def test_grading_saves_and_redirects_to_the_next_pair(app, as_annotator, member, annotator_id):
    response = as_annotator.post(_pair_url(member, 0), data={"grade": "2", "active_ms": "4200"})
    assert response.status_code == 302
    assert response.headers["Location"].endswith(_url(member))
    assert as_annotator.get(_url(member)).headers["Location"].endswith(_pair_url(member, 1))
    assert _judgments(app) == [(member.chunks["d1"], "graded", 2, "")]
    with app.app_context():
        assert db.session.scalar(sa.select(Judgment.active_ms)) == 4200
        assert db.session.scalar(sa.select(Judgment.annotator_id)) == annotator_id
    page = as_annotator.get(_pair_url(member, 1)).get_data(as_text=True)
    assert "Mine:</span> <strong>1</strong> of 3 pairs open to me" in page
    assert "Complete:</span> <strong>1</strong> of 3 pairs has the 1 person's judgment" in page


def test_double_submit_creates_one_judgment_and_one_event(app, as_annotator, member):
    for _ in range(2):
        assert as_annotator.post(_pair_url(member, 0), data={"grade": "1"}).status_code == 302
    assert _judgments(app) == [(member.chunks["d1"], "graded", 1, "")]
    assert _events(app) == [(member.chunks["d1"], None, 1)]


def test_garbled_active_time_never_costs_the_grade(app, as_annotator, member):
    response = as_annotator.post(_pair_url(member, 0), data={"grade": "3", "active_ms": "soon"})
    assert response.status_code == 302
    with app.app_context():
        assert db.session.execute(sa.select(Judgment.grade, Judgment.active_ms)).one() == (3, 0)


def test_back_link_and_changing_a_grade(app, as_annotator, member):
    as_annotator.post(_pair_url(member, 0), data={"grade": "2"})
    page = as_annotator.get(_pair_url(member, 1)).get_data(as_text=True)
    assert f'href="{_pair_url(member, 0)}" data-back' in page
    earlier = as_annotator.get(_pair_url(member, 0)).get_data(as_text=True)
    assert "Your answer: 2 · Relevant" in earlier
    assert (
        'value="2"\n          class="grade-button grade-2"\n          aria-pressed="true"'
        in earlier
    )
    response = as_annotator.post(_pair_url(member, 0), data={"grade": "0"})
    assert response.status_code == 302
    assert _judgments(app) == [(member.chunks["d1"], "graded", 0, "")]
    assert _events(app) == [(member.chunks["d1"], None, 2), (member.chunks["d1"], 2, 0)]
    # The queue resumes where it was: the second pair, still leased to me.
    assert as_annotator.get(_url(member)).headers["Location"].endswith(_pair_url(member, 1))


def test_skip_and_cant_tell_with_note(app, as_annotator, member):
    as_annotator.post(_pair_url(member, 0), data={"action": "skip"})
    assert as_annotator.get(_url(member)).headers["Location"].endswith(_pair_url(member, 1))
    as_annotator.post(
        _pair_url(member, 1), data={"action": "cant_tell", "note": "  acronym unclear  "}
    )
    assert _judgments(app) == [
        (member.chunks["d1"], "skipped", None, ""),
        (member.chunks["d2"], "cant_tell", None, "acronym unclear"),
    ]
    page = as_annotator.get(_pair_url(member, 1)).get_data(as_text=True)
    assert "Your answer: can't tell" in page
    assert ">acronym unclear</textarea>" in page


def test_a_note_typed_before_skipping_is_kept(app, as_annotator, member):
    """Skip keeps an earlier answer as it was, but never drops the note typed with it."""
    as_annotator.post(_pair_url(member, 0), data={"action": "skip", "note": " ask Ana "})
    as_annotator.post(_pair_url(member, 1), data={"grade": "2", "note": "first"})
    as_annotator.post(_pair_url(member, 1), data={"action": "skip", "note": "second look"})
    as_annotator.post(_pair_url(member, 1), data={"action": "skip", "note": ""})
    assert _judgments(app) == [
        (member.chunks["d1"], "skipped", None, "ask Ana"),
        (member.chunks["d2"], "graded", 2, "second look"),
    ]
    page = as_annotator.get(_pair_url(member, 0)).get_data(as_text=True)
    assert ">ask Ana</textarea>" in page


def test_out_of_scale_and_empty_answers_are_refused(app, as_annotator, member):
    response = as_annotator.post(_pair_url(member, 0), data={"grade": "4"})
    assert response.status_code == 400
    assert "outside this test set" in response.get_data(as_text=True)
    assert as_annotator.post(_pair_url(member, 0), data={}).status_code == 400
    assert as_annotator.post(_pair_url(member, 0), data={"action": "nuke"}).status_code == 400
    assert _judgments(app) == []


def test_pair_of_another_test_set_is_404(app, as_annotator, member, annotator_id):
    other = build(app, "Other", pool={"x": ["y"]}, members=(annotator_id,))
    foreign = f"/test-sets/{member.test_set_id}/label/{other.pairs[0]}"
    assert as_annotator.get(foreign).status_code == 404
    assert as_annotator.post(foreign, data={"grade": "1"}).status_code == 404
    review = f"/test-sets/{member.test_set_id}/queries/{other.queries['x']}/review"
    assert as_annotator.get(review).status_code == 404


def test_chunk_text_is_escaped_and_missing_text_is_named(app, annotator_id, as_annotator):
    built = build(
        app,
        "Hostile",
        pool={"q1": ["evil", "gone"]},
        members=(annotator_id,),
        texts={"evil": "<script>alert('x')</script> reset text", "gone": None},
    )
    page = as_annotator.get(_pair_url(built, 0)).get_data(as_text=True)
    assert "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;" in page
    assert "<script>alert" not in page
    missing = as_annotator.get(_pair_url(built, 1)).get_data(as_text=True)
    assert "No text in the corpus for gone." in missing


def test_others_grades_are_never_shown(app, as_annotator, member):
    other_id = make_user(app, "other")
    with app.app_context():
        pair = db.session.get(Pair, member.pairs[0])
        labeling.save_for_pair(pair, db.session.get(User, other_id), grade=3, note="SECRET-NOTE")
    page = as_annotator.get(_pair_url(member, 0)).get_data(as_text=True)
    assert "SECRET-NOTE" not in page and "Your answer" not in page
    assert 'aria-pressed="true"' not in page
    review = as_annotator.get(
        f"/test-sets/{member.test_set_id}/queries/{member.queries['q1']}/review"
    ).get_data(as_text=True)
    assert "SECRET-NOTE" not in review and 'aria-pressed="true"' not in review


def test_review_lists_my_grades_and_regrades_in_place(app, as_annotator, member):
    as_annotator.post(_pair_url(member, 0), data={"grade": "1", "note": "first look"})
    review_url = f"/test-sets/{member.test_set_id}/queries/{member.queries['q1']}/review"
    page = as_annotator.get(review_url).get_data(as_text=True)
    assert "body of d1" in page and "body of d2" in page and "body of d3" not in page
    assert "Your answer: 1 · Related" in page and "Your answer: not answered" in page
    assert "Your note: first look" in page
    anchor = f"{review_url}#pair-{member.pairs[0]}"
    response = as_annotator.post(
        _pair_url(member, 0), data={"grade": "3", "note": "first look", "next": anchor}
    )
    assert response.status_code == 302 and response.headers["Location"].endswith(anchor)
    assert _judgments(app) == [(member.chunks["d1"], "graded", 3, "first look")]


def test_next_never_leaves_the_site(as_annotator, member):
    for target in ("//evil.example/x", "https://evil.example/", "/\\evil.example"):
        response = as_annotator.post(_pair_url(member, 0), data={"grade": "1", "next": target})
        assert response.headers["Location"].endswith(_url(member))


def test_shortcuts_toggle(app, as_annotator, member, annotator_id):
    response = as_annotator.post(
        _url(member, "/shortcuts"), data={"enabled": "0", "next": _pair_url(member, 0)}
    )
    assert response.headers["Location"].endswith(_pair_url(member, 0))
    with app.app_context():
        assert db.session.get(User, annotator_id).shortcuts_enabled is False
    page = as_annotator.get(_pair_url(member, 0)).get_data(as_text=True)
    assert 'data-shortcuts="off"' in page and "Turn single-key shortcuts on" in page
    as_annotator.post(_url(member, "/shortcuts"), data={"enabled": "1"})
    with app.app_context():
        assert db.session.get(User, annotator_id).shortcuts_enabled is True


def test_done_page_when_nothing_is_left(app, as_annotator, member):
    for index in range(3):
        as_annotator.post(_pair_url(member, index), data={"grade": "1"})
    response = as_annotator.get(_url(member))
    assert response.status_code == 200
    page = response.get_data(as_text=True)
    assert "Nothing left for you to label here" in page
    assert "Mine:</span> <strong>3</strong> of 3 pairs open to me" in page
    assert f"/queries/{member.queries['q2']}/review" in page


def test_labeling_form_is_csrf_protected(app: Flask, member, annotator_id):
    app.config["WTF_CSRF_ENABLED"] = True
    client = app.test_client()
    login_page = client.get("/login").get_data(as_text=True)
    token = re.search(r'name="csrf_token" type="hidden" value="([^"]+)"', login_page)
    assert token is not None
    client.post(
        "/login", data={"username": "ann", "password": PASSWORD, "csrf_token": token.group(1)}
    )
    assert client.post(_pair_url(member, 0), data={"grade": "2"}).status_code == 400
    page = client.get(_pair_url(member, 0)).get_data(as_text=True)
    pair_token = re.search(r'name="csrf_token" type="hidden" value="([^"]+)"', page).group(1)
    response = client.post(_pair_url(member, 0), data={"grade": "2", "csrf_token": pair_token})
    assert response.status_code == 302
    assert _judgments(app) == [(member.chunks["d1"], "graded", 2, "")]
