"""Every route of the app's URL map, every method, against every kind of visitor.

The routes come from `app.url_map`, so a new route cannot escape: it fails
`test_every_route_is_classified` until it is added to ROUTES with its access class.
Expectations per class:

- public: anyone;                                 - login: any logged-in person;
- member: the test set's members and admins (others get 404, hidden ids stay hidden);
- blind-grades: as member, but 403 for annotators of a blind set (judgments_per_pair > 1);
- admin: admins only (403 for annotators);        - api-token: the bearer token, never a session.

Anonymous visitors are sent to the login page (401 on the API). POSTs without a CSRF token are
refused (400) and change nothing. The totals are printed at the end of the session.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from flask import Flask
from flask.testing import FlaskClient

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Run, TestSetMember, User
from tests.factory import PASSWORD, make_app
from tests.security.world import World, make_world

PUBLIC, LOGIN, MEMBER, BLIND, ADMIN, API, OWNER, SSO, API_LIST = (
    "public",
    "login",
    "member",
    "blind-grades",
    "admin",
    "api-token",
    "owner",  # a job: its starter and admins; 404 for anyone else
    "sso",  # single sign-on: public when configured, 404 for everyone when not (as here)
    "api-token-listing",  # any valid token; lists only what its owner may see
)
# endpoint -> access class. A route missing here fails the suite.
ROUTES = {
    "static": PUBLIC,
    "auth.login": PUBLIC,
    "auth.sso_start": SSO,
    "auth.sso_callback": SSO,
    "auth.logout": LOGIN,
    "auth.account": LOGIN,
    "main.index": LOGIN,
    "main.favicon": PUBLIC,
    "main.old_test_sets_address": PUBLIC,  # a 308 to /test-sets/..., which checks access
    "tokens.create": LOGIN,
    "tokens.revoke": LOGIN,
    "users.index": ADMIN,
    "users.edit": ADMIN,
    "users.revoke_token": ADMIN,
    "audit.index": ADMIN,
    "audit.export_csv": ADMIN,
    "audit.export_json": ADMIN,
    "testsets.new": ADMIN,
    "testsets.show": MEMBER,
    "testsets.queries": MEMBER,
    "testsets.chunks": MEMBER,
    "testsets.settings": ADMIN,
    "testsets.annotators": ADMIN,
    "testsets.import_page": ADMIN,
    "testsets.import_peer": ADMIN,
    "labeling.next": MEMBER,
    "labeling.pair": MEMBER,
    "labeling.shortcuts": MEMBER,
    "labeling.query_review": MEMBER,
    "label_loop.upcoming": MEMBER,
    "label_loop.lease": MEMBER,
    "label_loop.release": MEMBER,
    "label_loop.save": MEMBER,
    "runs.index": MEMBER,
    "runs.show": MEMBER,
    "runs.upload": ADMIN,
    "runs.delete": ADMIN,
    "runs.mark": ADMIN,
    "runs.archive": ADMIN,
    "runs.bm25": ADMIN,
    "dashboard.overview": MEMBER,
    "dashboard.overview_fragment": MEMBER,
    "dashboard.live": MEMBER,
    "dashboard.run_table": BLIND,
    "dashboard.run_table_fragment": BLIND,
    "compare.page": MEMBER,
    "compare.fragment": MEMBER,
    "compare.stats_fragment": MEMBER,
    "compare.next_fragment": BLIND,
    # The gate's page and reports: the verdict for members; a blind set's annotator gets it
    # without the worst queries (per-query figures), as from the API's gate.
    "gate.page": MEMBER,
    "gate.markdown": MEMBER,
    "gate.junit": MEMBER,
    "exports.overview_csv": MEMBER,
    "exports.overview_json": MEMBER,
    "exports.compare_csv": BLIND,
    "exports.compare_json": BLIND,
    "exports.compare_next_json": BLIND,
    "exports.run_csv": BLIND,
    "exports.run_json": BLIND,
    "exports.run_trec": BLIND,
    "exports.quepid_judgments": BLIND,
    "exports.srw_judgments": BLIND,
    "exports.srw_query_set": MEMBER,
    "exports.run_snapshot": MEMBER,
    "exports.qrels": BLIND,
    "exports.query_csv": BLIND,
    "exports.query_json": BLIND,
    "drilldown.page": BLIND,
    "drilldown.fragment": BLIND,
    "drilldown.grade": BLIND,
    "pooling.page": ADMIN,
    "pooling.add": ADMIN,
    "team.agreement_page": BLIND,
    "team.agreement_json": BLIND,
    "team.agreement_pairs_csv": BLIND,
    "team.agreement_queries_csv": BLIND,
    "team.people_page": MEMBER,
    "team.people_csv": MEMBER,
    "team.people_json": MEMBER,
    "team.policies_page": MEMBER,
    "team.review_queue": ADMIN,
    "team.review_pair": ADMIN,
    "team.remove_adjudication": ADMIN,
    "team.review_threshold": ADMIN,
    "team.export_page": ADMIN,
    "team.export_judgments": ADMIN,
    "team.export_qrels": ADMIN,
    "api.list_test_sets": API_LIST,
    "api.qrels": API,
    "api.import_files": API,
    "api.export": API,
    "api.export_run": API,
    "api.list_runs": API,
    "api.archive_run": API,
    "api.mark_run": API,
    "api.upload": API,
    "api.scores": API,
    "api.status": API,
    "api.gate_check": API,
    "api.compare": API,
    "api.audit_sample": API,
    "api.draw_audit": API,
    "api.judge_settings": API,
    "api.next_labels": API,
    "api.job": API,
    "api.cancel_job": API,
    "api.list_series": API,
    "api.series_trend": API,
    "api_docs.openapi": PUBLIC,
    "api_docs.reference": PUBLIC,
    "compare.fuse": ADMIN,
    "compare.queue": ADMIN,
    "jobs.index": LOGIN,
    "jobs.show": OWNER,
    "jobs.status": OWNER,
    "jobs.cancel": OWNER,
    "judges.index": ADMIN,
    "judges.for_test_set": ADMIN,
    "judges.calibration": ADMIN,
    "judges.audit_sample": ADMIN,
    "judges.ask_again": ADMIN,
    "judges.archive": ADMIN,
    "judges.restore": ADMIN,
    "judges.edit": ADMIN,
    "judges.delete": ADMIN,
    "machine_review.new_ensemble": ADMIN,
    "machine_review.few_shot": ADMIN,
    "machine_review.conflicts": ADMIN,
    "machine_review.resolve": ADMIN,
    "judge_probes.probe": ADMIN,
    "judge_probes.prices": ADMIN,
    "endpoints.index": ADMIN,
    "endpoints.show": ADMIN,
    "endpoints.edit": ADMIN,
    "endpoints.delete": ADMIN,
    "series.index": MEMBER,
    "series.show": MEMBER,
    "series.show_json": MEMBER,
    "series.pin": ADMIN,
    "lost_session.session_state": PUBLIC,
    "lost_session.signed_in": LOGIN,
}
# Query strings some GETs need to answer 200 (they are not about access).
QUERY = {"compare.stats_fragment": "?stats=1"}
# The same for API routes: what to label next names its two runs (the world's "one" and "two").
API_QUERY = {"api.next_labels": "?a=one&b=two", "api.export": "?format=srw-queries"}
# What an admin's token gets from a POST sent without a body, where that is not 400.
ADMIN_POSTS = {"api.cancel_job": {200}}
ROLES = ("anonymous", "outsider", "member-of-other", "blind-annotator", "admin")
DENIED = {401, 403, 404}


@pytest.fixture
def world(tmp_path: Path, sqlite_template: Path) -> Iterator[World]:
    """The matrix app: CSRF off (checked separately), throttling raised for the many 401s."""
    path = tmp_path / "matrix.sqlite3"
    shutil.copy(sqlite_template, path)
    app = make_app(tmp_path, f"sqlite:///{path}", NDCG_API_AUTH_LIMIT="10000 per minute")
    yield make_world(app)
    with app.app_context():
        db.engine.dispose()


def _routes(app: Flask) -> list[tuple[object, str]]:
    """(rule, method) for every rule and method of the URL map, admin's destructive POSTs last."""
    found = [
        (rule, method)
        for rule in app.url_map.iter_rules()
        for method in sorted(rule.methods - {"HEAD", "OPTIONS"})
    ]
    # Deletes after every other POST: an endpoint deleted first would make its own edit a 404.
    deletes = {rule.endpoint for rule, _ in found if rule.endpoint.endswith(".delete")}
    return sorted(
        found, key=lambda item: (item[1] != "GET", item[0].endpoint in deletes, item[0].rule)
    )


def _extra(world: World) -> dict[str, object]:
    return {
        "user_id": world.users["outsider"],
        "fmt": "csv",
        "filename": "css/app.css",
        "job_id": world.job_id,
        "judge_id": world.judge_id,
        "conflict_id": 1,  # none such: the admin is told so, others are refused first
        "judge": world.judge_id,  # the API addresses judges by id or name
        "name": "matrix",
        "rest": "1/judges/",
    }


def _client(world: World, role: str) -> FlaskClient:
    client = world.app.test_client()
    username = {
        "outsider": "outsider",
        "member-of-other": "bmember",
        "blind-annotator": "blindie",
        "admin": "admin",
    }.get(role)
    if username:
        response = client.post("/login", data={"username": username, "password": PASSWORD})
        assert response.status_code == 302, role
    return client


def _expected(access: str, role: str) -> str:
    """What `role` should get on a route of class `access` (on the set that role is tested on)."""
    if access == PUBLIC:
        return "allowed"
    if access == SSO:
        return "404"
    if access in (API, API_LIST):
        return "401"
    if role == "anonymous":
        return "login"
    if access == LOGIN or role == "admin":
        return "allowed"
    if access == OWNER:
        return "404"  # someone else's job: not even its existence is confirmed
    if access == ADMIN:
        return "403"
    if role in ("outsider", "member-of-other"):
        return "404"
    # The blind set's own annotator: members' pages yes, per-pair grades no.
    return "403" if access == BLIND else "allowed"


def _outcome(response) -> str:
    code = response.status_code
    location = response.headers.get("Location", "")
    if code == 302 and location.startswith("/login"):
        return "login"
    if code == 401 and b'id="resume-login"' in response.data:
        return "login"  # a form's POST signed out: a sign-in that keeps the entries
    if code in DENIED:
        return str(code)
    if code >= 500:
        return f"error {code}"
    return "allowed"


def _report(request: pytest.FixtureRequest, line: str) -> None:
    """Attach a line to the report; tests/conftest.py prints it in the terminal summary."""
    request.node.user_properties.append(("security-summary", line))


def test_every_route_is_classified(world: World) -> None:
    endpoints = {rule.endpoint for rule in world.app.url_map.iter_rules()}
    missing = sorted(endpoints - set(ROUTES))
    assert not missing, f"classify these routes in ROUTES: {missing}"
    assert not sorted(set(ROUTES) - endpoints), "ROUTES names endpoints that no longer exist"


def test_session_matrix(world: World, request: pytest.FixtureRequest) -> None:
    """Every route × method × role; each role asks for the set it must not (or may) see."""
    app = world.app
    routes = _routes(app)
    # The set each role asks for: A for strangers, A for B's member, C for C's blind member.
    asks = {
        "anonymous": "A",
        "outsider": "A",
        "member-of-other": "A",
        "blind-annotator": "C",
        "admin": "A",
    }
    problems: list[str] = []
    requests = 0
    for role in ROLES:
        client = _client(world, role)
        for rule, method in routes:
            if method == "POST" and rule.endpoint == "auth.logout" and role != "anonymous":
                continue  # logging out ends this role's session; checked below on its own
            url = world.sets[asks[role]].fill(rule, _extra(world)) + QUERY.get(rule.endpoint, "")
            response = client.open(url, method=method)
            response.close()
            requests += 1
            got, want = _outcome(response), _expected(ROUTES[rule.endpoint], role)
            if got != want:
                problems.append(f"{role:16} {method:4} {url}: got {got}, expected {want}")
        if role != "anonymous":
            requests += 1
            assert client.post("/logout").status_code == 302
            assert _outcome(client.get("/")) == "login"
    leaks = sum("expected allowed" not in p and "got allowed" in p for p in problems)
    line = (
        f"authorization matrix: {len(routes)} routes × {len(ROLES)} roles = {requests} requests, "
        f"{leaks} leaks"
    )
    _report(request, line)
    assert not problems, line + "\n" + "\n".join(problems)


def test_api_matrix(world: World, request: pytest.FixtureRequest) -> None:
    """Every API route × {no token, garbage, revoked, another user's}, then the owner's token."""
    app = world.app
    api = [(rule, m) for rule, m in _routes(app) if ROUTES[rule.endpoint] in (API, API_LIST)]
    credentials = {
        "no token": None,
        "garbage token": "ndcg_" + "x" * 43,
        "revoked token": world.tokens["revoked"],
        "another user's token": world.tokens["token-owner"],  # not a member of set A
    }
    expected = {
        "no token": 401,
        "garbage token": 401,
        "revoked token": 401,
        "another user's token": 404,
    }
    client = app.test_client()
    problems = []
    for rule, method in api:
        ids = {"judge": world.judge_id, "job_id": world.job_id, "name": "matrix"}
        url = world.sets["A"].fill(rule, ids) + API_QUERY.get(rule.endpoint, "")
        for what, token in credentials.items():
            headers = {"Authorization": f"Bearer {token}"} if token else {}
            response = client.open(url, method=method, headers=headers)
            want = expected[what]
            if ROUTES[rule.endpoint] == API_LIST and what == "another user's token":
                want = 200  # a listing answers, without the sets its owner may not see
                if str(world.sets["A"].test_set_id) in _listed_ids(response):
                    problems.append(f"{what}: {method} {url} lists set A")
            if response.status_code != want:
                problems.append(f"{what}: {method} {url} gave {response.status_code}")
            if response.status_code == 401:
                assert response.headers["WWW-Authenticate"].startswith("Bearer")
        admin = client.open(
            url, method=method, headers={"Authorization": f"Bearer {world.tokens['admin']}"}
        )
        # The admin's token passes (400: the upload was sent without a file; 200: the world's
        # queued job is cancelled, a POST without a body).
        passes = {200} if method == "GET" else ADMIN_POSTS.get(rule.endpoint, {400})
        if admin.status_code not in passes:
            problems.append(f"admin token: {method} {url} gave {admin.status_code}")
    line = (
        f"API matrix: {len(api)} routes × {len(credentials)} credentials = "
        f"{len(api) * len(credentials)} requests, {len(problems)} leaks"
    )
    _report(request, line)
    assert not problems, "\n".join(problems)


def _listed_ids(response) -> set[str]:
    """The ids of the test sets a listing answer names."""
    body = response.get_json(silent=True) or {}
    return {str(item.get("id")) for item in body.get("test_sets", [])}


def _csrf_token(client: FlaskClient) -> str:
    page = client.get("/login").get_data(as_text=True)
    return re.search(r'name="csrf_token" type="hidden" value="([^"]+)"', page).group(1)


def test_posts_without_csrf_are_refused(
    tmp_path: Path, sqlite_template: Path, request: pytest.FixtureRequest
) -> None:
    """With CSRF on (as in production), each POST without a token is refused, changing nothing."""
    path = tmp_path / "csrf.sqlite3"
    shutil.copy(sqlite_template, path)
    app = make_app(tmp_path, f"sqlite:///{path}", WTF_CSRF_ENABLED=True)
    world = make_world(app)
    client = app.test_client()
    token = _csrf_token(client)
    assert (
        client.post("/login", data={"username": "admin", "password": PASSWORD}).status_code == 400
    )
    response = client.post(
        "/login", data={"username": "admin", "password": PASSWORD, "csrf_token": token}
    )
    assert response.status_code == 302

    def state() -> tuple[int, int, int]:
        with app.app_context():
            count = sa.func.count()
            return (
                db.session.scalar(sa.select(count).select_from(Run)),
                db.session.scalar(sa.select(count).select_from(TestSetMember)),
                db.session.scalar(sa.select(count).select_from(User)),
            )

    before = state()
    posts = [
        (rule, m)
        for rule, m in _routes(app)
        if m == "POST" and ROUTES[rule.endpoint] not in (API, API_LIST, PUBLIC)
    ]
    refused = 0
    for rule, _method in posts:
        url = world.sets["A"].fill(rule, _extra(world))
        response = client.post(url, data={"name": "x", "annotators": []})
        refused += response.status_code == 400
        assert response.status_code == 400, f"POST {url} without CSRF gave {response.status_code}"
    assert state() == before
    assert client.get("/").status_code == 200  # still logged in: logout was refused too
    _report(request, f"CSRF: {refused} of {len(posts)} POST routes refused without a token")
    with app.app_context():
        db.engine.dispose()
