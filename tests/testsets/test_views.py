"""Test-set pages: access for anonymous, annotator and admin; create, settings, annotators,
upload (happy path and line-numbered error) and escaping of untrusted text."""

from __future__ import annotations

import io
import re

import pytest
import sqlalchemy as sa
from flask import Flask
from flask.testing import FlaskClient

from ndcg_labeler.extensions import db
from ndcg_labeler.models import TestSet, TestSetMember, User
from ndcg_labeler.services import testsets
from tests.factory import PASSWORD, grant, make_test_set, make_user
from tests.testsets.helpers import BEIR, counts

VIEW_ROUTES = ["/test-sets/{id}", "/test-sets/{id}/queries", "/test-sets/{id}/chunks"]
ADMIN_ROUTES = [
    "/test-sets/{id}/settings",
    "/test-sets/{id}/annotators",
    "/test-sets/{id}/import",
]
ALL_ROUTES = ["/test-sets/new", *VIEW_ROUTES, *ADMIN_ROUTES]


def _upload(client: FlaskClient, test_set_id: int, **files: tuple[bytes, str]):
    data = {name: (io.BytesIO(content), filename) for name, (content, filename) in files.items()}
    return client.post(
        f"/test-sets/{test_set_id}/import", data=data, content_type="multipart/form-data"
    )


def _beir_files() -> dict[str, tuple[bytes, str]]:
    return {
        "queries": ((BEIR / "queries.jsonl").read_bytes(), "queries.jsonl"),
        "corpus": ((BEIR / "corpus.jsonl").read_bytes(), "corpus.jsonl"),
        "pool": ((BEIR / "pool.tsv").read_bytes(), "pool.tsv"),
        "qrels": ((BEIR / "qrels" / "test.tsv").read_bytes(), "test.tsv"),
    }


# -- access ------------------------------------------------------------------------------


@pytest.mark.parametrize("route", ALL_ROUTES)
def test_anonymous_is_sent_to_login(app: Flask, client: FlaskClient, route: str) -> None:
    ts = make_test_set(app)
    response = client.get(route.format(id=ts))
    assert response.status_code == 302
    assert response.headers["Location"].startswith("/login")
    # A form's POST is not redirected (its entries would be lost): a sign-in that keeps them.
    posted = client.post(route.format(id=ts))
    assert posted.status_code == 401 and b'id="resume-login"' in posted.data


@pytest.mark.parametrize("route", VIEW_ROUTES)
def test_annotator_sees_only_given_test_sets(
    app: Flask, as_annotator: FlaskClient, annotator_id: int, route: str
) -> None:
    mine, other = make_test_set(app, "Mine"), make_test_set(app, "Other")
    grant(app, mine, annotator_id)
    assert as_annotator.get(route.format(id=mine)).status_code == 200
    # 404, not 403: the existence of a test set one may not see is not confirmed.
    assert as_annotator.get(route.format(id=other)).status_code == 404
    assert as_annotator.get(route.format(id=9999)).status_code == 404


@pytest.mark.parametrize("route", ["/test-sets/new", *ADMIN_ROUTES])
def test_annotator_cannot_administer(
    app: Flask, as_annotator: FlaskClient, annotator_id: int, route: str
) -> None:
    ts = make_test_set(app, "Mine")
    grant(app, ts, annotator_id)
    assert as_annotator.get(route.format(id=ts)).status_code == 403
    response = as_annotator.post(
        route.format(id=ts),
        data={"name": "Hijacked", "scale": "3", "annotators": []},
    )
    assert response.status_code == 403
    with app.app_context():
        assert db.session.scalars(sa.select(TestSet.name)).all() == ["Mine"]
        assert db.session.scalar(sa.select(sa.func.count()).select_from(TestSetMember)) == 1


@pytest.mark.parametrize("route", ALL_ROUTES)
def test_admin_reaches_every_page(app: Flask, as_admin: FlaskClient, route: str) -> None:
    ts = make_test_set(app)
    assert as_admin.get(route.format(id=ts)).status_code == 200
    if route != "/test-sets/new":
        assert as_admin.get(route.format(id=9999)).status_code == 404


def test_home_lists_visible_test_sets_with_links(
    app: Flask, client: FlaskClient, annotator_id: int, admin_id: int, auth
) -> None:
    mine, _ = make_test_set(app, "Mine"), make_test_set(app, "Hidden")
    grant(app, mine, annotator_id)
    auth.login("ann", PASSWORD)
    page = client.get("/").get_data(as_text=True)
    assert f'<a href="/test-sets/{mine}">Mine</a>' in page
    assert "Hidden" not in page and "New test set" not in page
    auth.logout()
    auth.login("admin", PASSWORD)
    page = client.get("/").get_data(as_text=True)
    assert "Mine" in page and "Hidden" in page and 'href="/test-sets/new"' in page


# -- admin pages ---------------------------------------------------------------------------


def test_create_test_set(app: Flask, as_admin: FlaskClient) -> None:
    response = as_admin.post("/test-sets/new", data={"name": "Shop search", "scale": "4"})
    assert response.status_code == 302
    with app.app_context():
        test_set = db.session.scalar(sa.select(TestSet))
        assert (test_set.name, test_set.scale_max) == ("Shop search", 4)
        assert response.headers["Location"] == f"/test-sets/{test_set.id}/import"
    again = as_admin.post("/test-sets/new", data={"name": "Shop search", "scale": "3"})
    assert again.status_code == 200
    assert "already exists" in again.get_data(as_text=True)
    bad = as_admin.post("/test-sets/new", data={"name": "X", "scale": "7"})
    assert bad.status_code == 200 and "Not a valid choice" in bad.get_data(as_text=True)


def _settings_data(**change: str) -> dict[str, str]:
    data = {
        "name": "Set",
        "guidelines": "Grade **carefully**.\n\n<script>alert(1)</script>",
        "aggregation": "mean",
        "relevance_threshold": "2",
        "judgments_per_pair": "3",
        "disagreement_threshold": "2",
    }
    names = ["Off topic", "Related", "Relevant", "Perfect"]
    for grade, name in enumerate(names):
        data[f"grades-{grade}-name"] = name
        data[f"grades-{grade}-definition"] = f"Definition {grade}"
    data.update(change)
    return data


def test_settings_form_prefills_and_saves(app: Flask, as_admin: FlaskClient) -> None:
    ts = make_test_set(app)
    page = as_admin.get(f"/test-sets/{ts}/settings").get_data(as_text=True)
    assert 'value="Irrelevant"' in page and 'name="grades-3-name"' in page
    response = as_admin.post(f"/test-sets/{ts}/settings", data=_settings_data())
    assert response.status_code == 302
    with app.app_context():
        test_set = db.session.get(TestSet, ts)
        assert test_set.grade_labels[0] == {"name": "Off topic", "definition": "Definition 0"}
        assert (test_set.aggregation, test_set.relevance_threshold) == ("mean", 2)
        assert test_set.judgments_per_pair == 3
    page = as_admin.get(f"/test-sets/{ts}").get_data(as_text=True)
    # Guidelines are Markdown, rendered, with raw HTML shown as text.
    assert "Grade <strong>carefully</strong>." in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "<script>alert" not in page
    assert "Off topic" in page


def test_settings_errors_are_shown_and_not_saved(app: Flask, as_admin: FlaskClient) -> None:
    ts = make_test_set(app)
    response = as_admin.post(
        f"/test-sets/{ts}/settings",
        data=_settings_data(**{"judgments_per_pair": "9", "grades-1-name": ""}),
    )
    page = response.get_data(as_text=True)
    assert response.status_code == 200
    assert 'class="error-summary"' in page
    assert 'href="#grades-1-name"' in page and 'href="#judgments_per_pair"' in page
    with app.app_context():
        assert db.session.get(TestSet, ts).judgments_per_pair == 1


def test_manage_annotators(app: Flask, as_admin: FlaskClient, annotator_id: int) -> None:
    ts = make_test_set(app)
    page = as_admin.get(f"/test-sets/{ts}/annotators").get_data(as_text=True)
    assert 'type="checkbox"' in page and "ann" in page
    response = as_admin.post(f"/test-sets/{ts}/annotators", data={"annotators": [annotator_id]})
    assert response.status_code == 302
    with app.app_context():
        assert testsets.member_ids(db.session.get(TestSet, ts)) == {annotator_id}
    as_admin.post(f"/test-sets/{ts}/annotators", data={})
    with app.app_context():
        assert testsets.member_ids(db.session.get(TestSet, ts)) == set()


def test_saving_annotators_keeps_members_the_page_does_not_list(
    app: Flask, as_admin: FlaskClient, annotator_id: int
) -> None:
    # The page lists active annotators only. A deactivated member (on leave) and an admin
    # given the set with `flask testset grant` have no checkbox, so every save took the set
    # away from them ("1 added, 2 removed") without the admin having unticked anyone.
    ts = make_test_set(app)
    on_leave, boss = make_user(app, "on-leave"), make_user(app, "boss", "admin")
    for user_id in (on_leave, boss):
        grant(app, ts, user_id)
    with app.app_context():
        db.session.get_one(User, on_leave).active = False
        db.session.commit()
    response = as_admin.post(
        f"/test-sets/{ts}/annotators", data={"annotators": [annotator_id]}, follow_redirects=True
    )
    assert "Annotators saved: 1 added, 0 removed." in response.get_data(as_text=True)
    with app.app_context():
        assert testsets.member_ids(db.session.get(TestSet, ts)) == {annotator_id, on_leave, boss}


# -- import --------------------------------------------------------------------------------


def test_upload_shows_counts(app: Flask, as_admin: FlaskClient) -> None:
    ts = make_test_set(app)
    response = _upload(as_admin, ts, **_beir_files())
    page = response.get_data(as_text=True)
    assert response.status_code == 200
    assert "queries: 3 created, 0 updated, 0 unchanged" in page
    assert "chunks: 12 created, 0 updated, 0 unchanged" in page
    assert "pairs to judge: 12 created, 0 updated, 0 unchanged" in page
    assert "judgments of source &#39;test.tsv&#39;: 4 created" in page
    with app.app_context():
        assert counts(ts)["pairs"] == 12 and counts(ts)["judgments"] == 4
    again = _upload(as_admin, ts, **_beir_files()).get_data(as_text=True)
    assert "pairs to judge: 0 created, 0 updated, 12 unchanged" in again
    overview = as_admin.get(f"/test-sets/{ts}").get_data(as_text=True)
    # 4 of the 12 pool pairs carry an imported grade: graded, but none complete (imported
    # qrels are not people's judgments), and the same words as on every other page.
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", overview))
    assert "Graded: 4 of 12 pairs have a grade (33%, people or imported qrels)" in text
    assert "Complete: 0 of 12 pairs have the 1 person's judgment they need (0%)" in text


def test_upload_error_names_file_and_line_and_writes_nothing(
    app: Flask, as_admin: FlaskClient
) -> None:
    ts = make_test_set(app)
    _upload(as_admin, ts, queries=((BEIR / "queries.jsonl").read_bytes(), "queries.jsonl"))
    with app.app_context():
        before = counts(ts)
    response = _upload(
        as_admin,
        ts,
        corpus=(b'{"_id": "x", "text": "new"}\n', "corpus.jsonl"),
        qrels=(b"q1 0 x 1\nq1 0 d2 7\n", "bad.qrels"),
    )
    page = response.get_data(as_text=True)
    assert 'class="error-summary"' in page and 'href="#qrels"' in page
    assert "bad.qrels:2: grade 7 for query q1, docid &#39;d2&#39;" in page
    assert "nothing was imported" in page
    with app.app_context():
        assert counts(ts) == before


def test_upload_without_files_is_refused(app: Flask, as_admin: FlaskClient) -> None:
    ts = make_test_set(app)
    page = _upload(as_admin, ts).get_data(as_text=True)
    assert "choose at least one file" in page


# -- untrusted text --------------------------------------------------------------------------


def test_script_in_chunks_queries_and_names_renders_as_text(
    app: Flask, as_admin: FlaskClient
) -> None:
    ts = make_test_set(app, "<script>alert('name')</script>")
    _upload(
        as_admin,
        ts,
        queries=(b'{"_id": "q1", "text": "<script>alert(2)</script>"}\n', "q.jsonl"),
        corpus=(
            b'{"_id": "d1", "title": "<b>t</b>", "text": "<script>alert(1)</script>"}\n',
            "c.jsonl",
        ),
        pool=(b"q1\td1\nq1\t<img/src=x/onerror=alert(3)>\n", "p.tsv"),
    )
    pages = {
        url: as_admin.get(url).get_data(as_text=True)
        for url in (
            "/",
            f"/test-sets/{ts}",
            f"/test-sets/{ts}/queries",
            f"/test-sets/{ts}/chunks",
            f"/test-sets/{ts}/chunks?missing=1",
        )
    }
    for url, page in pages.items():
        assert "<script>alert" not in page, url
        assert "&lt;script&gt;alert(&#39;name&#39;)&lt;/script&gt;" in page, url
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in pages[f"/test-sets/{ts}/chunks"]
    assert "&lt;b&gt;t&lt;/b&gt;" in pages[f"/test-sets/{ts}/chunks"]
    assert "&lt;script&gt;alert(2)&lt;/script&gt;" in pages[f"/test-sets/{ts}/queries"]
    missing = pages[f"/test-sets/{ts}/chunks?missing=1"]
    assert "&lt;img/src=x/onerror=alert(3)&gt;" in missing and "<img" not in missing
    assert "No text: not in any imported corpus" in missing


def test_start_labeling_link(app: Flask, as_admin: FlaskClient) -> None:
    ts = make_test_set(app)
    _upload(as_admin, ts, **_beir_files())
    page = as_admin.get(f"/test-sets/{ts}").get_data(as_text=True)
    # The checklist's next action: labeling, with what is left of the pool.
    link = f'<a class="button primary" id="next-action" href="/test-sets/{ts}/label">'
    assert f"{link}Start labeling: " in page


def test_no_start_labeling_without_pairs(app: Flask, as_admin: FlaskClient) -> None:
    ts = make_test_set(app)
    page = as_admin.get(f"/test-sets/{ts}").get_data(as_text=True)
    assert "Start labeling" not in page
    assert "Import the queries and the corpus</a>" in page  # the checklist's next action


def test_settings_of_a_0_to_4_scale_has_five_grades(app: Flask, as_admin: FlaskClient) -> None:
    ts = make_test_set(app, scale=4)
    page = as_admin.get(f"/test-sets/{ts}/settings").get_data(as_text=True)
    assert 'name="grades-4-name"' in page and 'name="grades-5-name"' not in page
    data = _settings_data(**{"grades-4-name": "Best", "grades-4-definition": "Top."})
    assert as_admin.post(f"/test-sets/{ts}/settings", data=data).status_code == 302
    with app.app_context():
        assert db.session.get(TestSet, ts).grade_labels[4] == {"name": "Best", "definition": "Top."}
