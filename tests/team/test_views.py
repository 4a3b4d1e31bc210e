"""Team pages: access for anonymous, non-member, annotator and admin on every route; what the
pages show; adjudication and the threshold through the forms; downloads."""

from __future__ import annotations

import re

import pytest
import sqlalchemy as sa
from flask import Flask
from flask.testing import FlaskClient

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Adjudication, AuditEvent, JudgmentEvent, TestSet
from tests.factory import AuthActions, build_runs, build_team, judge, make_user, pair_ids

# The team set is blind (3 judgments per pair): its agreement figures are for admins.
BLIND_ROUTES = [
    "/test-sets/{id}/agreement",
    "/test-sets/{id}/agreement.json",
]
VIEW_ROUTES = [
    *BLIND_ROUTES,
    "/test-sets/{id}/people",
    "/test-sets/{id}/policies",
]
ADMIN_GET_ROUTES = [
    "/test-sets/{id}/review",
    "/test-sets/{id}/review/{q}/{c}",
    "/test-sets/{id}/export",
    "/test-sets/{id}/export/judgments.csv",
    "/test-sets/{id}/export/judgments.jsonl",
    "/test-sets/{id}/export/qrels",
]
ADMIN_POST_ROUTES = [
    "/test-sets/{id}/review/threshold",
    "/test-sets/{id}/review/{q}/{c}",
    "/test-sets/{id}/review/{q}/{c}/remove",
]


def _url(route: str, test_set_id: int, pair: tuple[int, int]) -> str:
    return route.format(id=test_set_id, q=pair[0], c=pair[1])


@pytest.fixture
def team(app: Flask, annotator_id: int):
    """The 3-annotator test set with `ann` as a member (no judgments of her own)."""
    return build_team(app, members=(annotator_id,))


def test_anonymous_is_sent_to_login(app: Flask, client: FlaskClient, team):
    pair = pair_ids(app, team.id, "q2", "d4")
    for route in [*VIEW_ROUTES, *ADMIN_GET_ROUTES]:
        response = client.get(_url(route, team.id, pair))
        assert response.status_code == 302 and "/login" in response.location, route
    for route in ADMIN_POST_ROUTES:
        response = client.post(_url(route, team.id, pair), data={"grade": "1", "threshold": "1"})
        # A sign-in that keeps the entries (401), not a redirect that drops them.
        assert response.status_code == 401 and b'id="resume-login"' in response.data, route
    with app.app_context():
        assert db.session.scalar(sa.select(sa.func.count()).select_from(Adjudication)) == 0


def test_member_annotator_sees_figures_not_review_or_exports(
    app: Flask, as_annotator: FlaskClient, team
):
    pair = pair_ids(app, team.id, "q2", "d4")
    for route in VIEW_ROUTES:
        expected = 403 if route in BLIND_ROUTES else 200
        assert as_annotator.get(_url(route, team.id, pair)).status_code == expected, route
    for route in ADMIN_GET_ROUTES:
        assert as_annotator.get(_url(route, team.id, pair)).status_code == 403, route
    for route in ADMIN_POST_ROUTES:
        response = as_annotator.post(_url(route, team.id, pair), data={"grade": "1"})
        assert response.status_code == 403, route
    with app.app_context():
        assert db.session.scalar(sa.select(sa.func.count()).select_from(Adjudication)) == 0
        assert db.session.get_one(TestSet, team.id).disagreement_threshold == 2


def test_non_member_gets_404_on_pages_and_403_on_admin_routes(
    app: Flask, client: FlaskClient, auth: AuthActions, team
):
    make_user(app, "stranger")
    auth.login("stranger")
    pair = pair_ids(app, team.id, "q2", "d4")
    for route in VIEW_ROUTES:
        assert client.get(_url(route, team.id, pair)).status_code == 404, route
    for route in ADMIN_GET_ROUTES:
        assert client.get(_url(route, team.id, pair)).status_code == 403, route


def test_admin_reaches_every_page(app: Flask, as_admin: FlaskClient, team):
    pair = pair_ids(app, team.id, "q2", "d4")
    for route in [*VIEW_ROUTES, *ADMIN_GET_ROUTES]:
        assert as_admin.get(_url(route, team.id, pair)).status_code == 200, route
    for route in [*VIEW_ROUTES, *ADMIN_GET_ROUTES]:
        assert as_admin.get(_url(route, 9999, pair)).status_code == 404, route
    other = build_runs(app, "other")
    foreign = pair_ids(app, other.id, "q1", "d1")
    assert as_admin.get(f"/test-sets/{team.id}/review/{foreign[0]}/{foreign[1]}").status_code == 404
    assert as_admin.get(f"/test-sets/{team.id}/export/judgments.xml").status_code == 404
    assert as_admin.get(f"/test-sets/{team.id}/export/qrels?policy=best").status_code == 400


def test_test_set_page_links_the_team_pages(app: Flask, as_admin: FlaskClient, team):
    html = as_admin.get(f"/test-sets/{team.id}").get_data(as_text=True)
    for page in ("agreement", "people", "policies", "review", "export"):
        assert f'href="/test-sets/{team.id}/{page}"' in html, page


def test_agreement_page_shows_and_explains_the_figures(app: Flask, as_admin, team):
    # A blind set (3 judgments per pair): its figures are for admins, as its grades are.
    html = as_admin.get(f"/test-sets/{team.id}/agreement").get_data(as_text=True)
    assert "66.7%" in html  # percent agreement 2/3
    assert "0.544" in html  # Fleiss 179/329
    assert "0.597" in html  # alpha 43/72
    assert "0.897" in html and "0.769" in html  # alice/bob 26/29 and 10/13
    # alice/carol's quadratic κ is 0 by hand (a hair below in floats): read as 0, not below.
    row = re.search(r"<td>alice</td><td>carol</td>.*?</tr>", html, re.S).group(0)
    assert '0.000 <span class="reading">slight</span>' in row and "-0.000" not in row
    assert "How to read it" in html and "Landis and Koch" in html
    data = as_admin.get(f"/test-sets/{team.id}/agreement.json").get_json()
    assert data["pairs_with_2plus"] == 5 and data["fleiss_kappa"] == pytest.approx(179 / 329)
    assert {q["qid"] for q in data["queries"]} == {"q1", "q2"}
    with app.app_context():
        db.session.add(TestSet(name="Empty", scale_max=3, grade_labels=[{"name": "x"}] * 4))
        db.session.commit()
        empty_id = db.session.scalar(sa.select(TestSet.id).where(TestSet.name == "Empty"))
    # Admins see every test set; the empty one says why there is no figure.
    empty = as_admin.get(f"/test-sets/{empty_id}/agreement").get_data(as_text=True)
    assert empty.count("not enough overlap") >= 3


def test_people_page_admin_sees_all_annotator_only_self(
    app: Flask, client: FlaskClient, auth: AuthActions, admin_id: int, team
):
    auth.login("alice")
    own = client.get(f"/test-sets/{team.id}/people").get_data(as_text=True)
    assert ">alice<" in own and ">bob<" not in own and ">carol<" not in own
    # alice agrees with the others on 2 of 4 shared pairs: on this blind set, for admins only.
    assert "50.0%" not in own and 'id="agreement-withheld"' in own
    assert "2.5" in own  # median active seconds
    auth.logout()
    auth.login("admin")
    everyone = client.get(f"/test-sets/{team.id}/people").get_data(as_text=True)
    for name in ("alice", "bob", "carol", "ann"):
        assert f">{name}<" in everyone
    assert "50.0%" in everyone and 'id="agreement-withheld"' not in everyone
    assert "75.0%" in everyone  # bob: 3 of 4
    assert "<svg" in everyone and "style=" not in everyone


def _seen(html: str) -> str:
    """What the pair page's form carries of the grades it shows."""
    found = re.search(r'name="seen" type="hidden" value="([^"]*)"', html)
    assert found, html
    return found.group(1)


def test_review_queue_and_adjudication_through_the_forms(
    app: Flask, as_admin: FlaskClient, admin_id: int, team
):
    judge(app, team.id, "q2", "d4", "carol", grade=3, note="<b>clearly</b> on topic")
    html = as_admin.get(f"/test-sets/{team.id}/review").get_data(as_text=True)
    assert html.index(">d4<") < html.index(">d6<")  # span 2 before a lone can't-tell
    q, c = pair_ids(app, team.id, "q2", "d4")
    pair_html = as_admin.get(f"/test-sets/{team.id}/review/{q}/{c}").get_data(as_text=True)
    assert "&lt;b&gt;clearly&lt;/b&gt; on topic" in pair_html  # notes are escaped
    assert "<b>clearly" not in pair_html
    bad = as_admin.post(f"/test-sets/{team.id}/review/{q}/{c}", data={"grade": "7"})
    assert bad.status_code == 400
    response = as_admin.post(
        f"/test-sets/{team.id}/review/{q}/{c}",
        data={"grade": "2", "note": "partial answer", "seen": _seen(pair_html)},
    )
    # On to the next disputed pair still waiting: q2/d6.
    q6, c6 = pair_ids(app, team.id, "q2", "d6")
    assert response.status_code == 302
    assert response.location.endswith(f"/test-sets/{team.id}/review/{q6}/{c6}")
    with app.app_context():
        row = db.session.scalar(sa.select(Adjudication))
        assert (row.query_id, row.chunk_id, row.grade, row.note) == (q, c, 2, "partial answer")
    waiting = as_admin.get(f"/test-sets/{team.id}/review").get_data(as_text=True)
    assert ">d4<" not in waiting and ">d6<" in waiting
    assert ">d4<" in as_admin.get(f"/test-sets/{team.id}/review?all=1").get_data(as_text=True)
    qrels = as_admin.get(f"/test-sets/{team.id}/export/qrels").get_data(as_text=True)
    assert "q2 0 d4 2\n" in qrels  # the final grade, not the median 1
    removed = as_admin.post(f"/test-sets/{team.id}/review/{q}/{c}/remove")
    assert removed.status_code == 302
    with app.app_context():
        assert db.session.scalar(sa.select(sa.func.count()).select_from(Adjudication)) == 0
        kinds = db.session.scalars(
            sa.select(JudgmentEvent.new_grade)
            .where(JudgmentEvent.kind == "adjudication")
            .order_by(JudgmentEvent.id)
        ).all()
        assert kinds == [2, None]
    history = as_admin.get(f"/test-sets/{team.id}/review/{q}/{c}").get_data(as_text=True)
    assert "final grade removed" in history and "partial answer" in history


def test_a_grade_changed_since_the_page_is_shown_before_it_is_overridden(
    app: Flask, as_admin: FlaskClient, team
) -> None:
    """carol moved from 3 to 0 while the admin looked at the pair: the final grade is not saved
    over her new grade unseen; the page shows the grades now and saving again confirms."""
    q, c = pair_ids(app, team.id, "q2", "d4")
    url = f"/test-sets/{team.id}/review/{q}/{c}"
    shown = as_admin.get(url).get_data(as_text=True)
    judge(app, team.id, "q2", "d4", "carol", grade=0, note="<i>misread</i>")
    refused = as_admin.post(url, data={"grade": "3", "note": "as carol said", "seen": _seen(shown)})
    html = refused.get_data(as_text=True)
    assert refused.status_code == 409
    assert "changed since" in html and "now alice 1, carol 0" in html
    assert "&lt;i&gt;misread&lt;/i&gt;" in html  # her new note, escaped, in the grades table
    assert re.search(r"<input checked[^>]* value=\"3\"", html)  # the choice kept
    assert "as carol said" in html
    with app.app_context():
        assert db.session.scalar(sa.select(sa.func.count()).select_from(Adjudication)) == 0
    again = {"grade": "3", "note": "as carol said", "seen": _seen(html)}
    confirmed = as_admin.post(url, data=again)
    assert confirmed.status_code == 302
    with app.app_context():
        assert [(a.grade, a.note) for a in db.session.scalars(sa.select(Adjudication))] == [
            (3, "as carol said")
        ]
    # A post that carries nothing of what was shown (a page from before) is refused too.
    assert as_admin.post(url, data={"grade": "1"}).status_code == 409


def test_threshold_form(app: Flask, as_admin: FlaskClient, team):
    response = as_admin.post(f"/test-sets/{team.id}/review/threshold", data={"threshold": "1"})
    assert response.status_code == 302
    with app.app_context():
        assert db.session.get_one(TestSet, team.id).disagreement_threshold == 1
    html = as_admin.get(f"/test-sets/{team.id}/review").get_data(as_text=True)
    assert ">d2<" in html  # span 1 now flagged
    too_high = as_admin.post(
        f"/test-sets/{team.id}/review/threshold", data={"threshold": "3"}, follow_redirects=True
    )
    assert too_high.status_code == 200
    with app.app_context():
        assert db.session.get_one(TestSet, team.id).disagreement_threshold == 3
    refused = as_admin.post(
        f"/test-sets/{team.id}/review/threshold", data={"threshold": "4"}, follow_redirects=True
    )
    assert "from 1 to 3" in refused.get_data(as_text=True)
    # Past every scale, or none: still named by this set's scale (it said "between 1 and 4").
    for value in ("9", "0"):
        page = as_admin.post(
            f"/test-sets/{team.id}/review/threshold",
            data={"threshold": value},
            follow_redirects=True,
        ).get_data(as_text=True)
        assert "from 1 to 3" in page and "between 1 and 4" not in page
    with app.app_context():
        assert db.session.get_one(TestSet, team.id).disagreement_threshold == 3


def test_policies_page_states_the_verdict(app: Flask, as_admin: FlaskClient):
    other = build_runs(app, "runs")
    html = as_admin.get(f"/test-sets/{other.id}/policies").get_data(as_text=True)
    assert "The run order depends on the policy." in html
    assert "A ranks above B (under median: B ranks above A)" in html
    assert "0.6309" in html and "0.8597" in html
    q, c = pair_ids(app, other.id, "q1", "d1")
    page = as_admin.get(f"/test-sets/{other.id}/review/{q}/{c}").get_data(as_text=True)
    as_admin.post(f"/test-sets/{other.id}/review/{q}/{c}", data={"grade": "0", "seen": _seen(page)})
    html = as_admin.get(f"/test-sets/{other.id}/policies?k=5").get_data(as_text=True)
    assert "Run order is the same under every policy." in html


def test_downloads(app: Flask, as_admin: FlaskClient, team):
    response = as_admin.get(f"/test-sets/{team.id}/export/judgments.csv")
    assert response.mimetype == "text/csv"
    assert 'filename="Team-set-judgments.csv"' in response.headers["Content-Disposition"]
    lines = response.get_data(as_text=True).splitlines()
    assert lines[0].startswith("qid,docid,annotator,status,grade,note,active_ms,created_at")
    assert len(lines) == 16  # header and 15 judgments
    jsonl = as_admin.get(f"/test-sets/{team.id}/export/judgments.jsonl")
    assert jsonl.mimetype == "application/x-ndjson"
    assert len(jsonl.get_data(as_text=True).splitlines()) == 15
    qrels = as_admin.get(f"/test-sets/{team.id}/export/qrels?policy=max")
    assert qrels.get_data(as_text=True).splitlines()[3] == "q2 0 d4 3"
    assert 'filename="Team-set-qrels-max.txt"' in qrels.headers["Content-Disposition"]


def test_the_threshold_form_leaves_an_audit_entry(app: Flask, as_admin: FlaskClient, team):
    # The settings page records a threshold change in the audit trail: the review page's own
    # threshold form changes the same setting and must too (and an unchanged one records none).
    as_admin.post(f"/test-sets/{team.id}/review/threshold", data={"threshold": "1"})
    as_admin.post(f"/test-sets/{team.id}/review/threshold", data={"threshold": "1"})
    with app.app_context():
        events = db.session.scalars(
            sa.select(AuditEvent).where(AuditEvent.action == "testset.settings")
        ).all()
        assert [(e.actor_name, e.target_id) for e in events] == [("admin", team.id)]
        assert events[0].details["changes"] == {"disagreement_threshold": {"old": 2, "new": 1}}
    trail = as_admin.get("/audit/").get_data(as_text=True)
    assert "disagreement_threshold" in trail
