"""The audit sample's doors: `flask judges audit`, the calibration page's form and the API."""

from __future__ import annotations

import html
import json

import numpy as np
import pytest
import sqlalchemy as sa
from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner

from ndcg_labeler.extensions import db
from ndcg_labeler.models import AuditEvent, AuditSample, Judge, Query, TestSet, User
from ndcg_labeler.services import audit_samples
from ndcg_labeler.services.accounts import create_token
from tests.factory import build, grant, judge, make_user

# q1..q5 have pool pairs; q6 has none (a query the pool never reached).
POOL = {f"q{i}": [f"d{i}"] for i in range(1, 6)}
QIDS = [*POOL, "q6"]


def numpy_order(seed: int) -> list[str]:
    """The documented draw, straight from NumPy: the qids in byte order, permuted."""
    ordered = np.array(sorted(QIDS, key=lambda qid: qid.encode()))
    return [str(qid) for qid in np.random.default_rng(seed).permutation(ordered)]


@pytest.fixture
def audit_set(app: Flask) -> tuple[int, int]:
    """(test set id, judge id): set "ts" with q1..q6 and judge "gpt"."""
    built = build(app, "ts", pool=POOL)
    with app.app_context():
        db.session.add(Query(test_set_id=built.test_set_id, qid="q6", text="no pool"))
        found = Judge(name="gpt", base_url="http://127.0.0.1:9/v1", model="m", max_tokens=64)
        db.session.add(found)
        db.session.commit()
        return built.test_set_id, found.id


def _cli(runner: FlaskCliRunner, *args: str):
    return runner.invoke(args=["judges", "audit", "ts", "--judge", "gpt", *args])


# -- the command line ----------------------------------------------------------------------------


def test_cli_json_has_the_named_keys(
    runner: FlaskCliRunner, audit_set: tuple[int, int], app: Flask
) -> None:
    result = _cli(runner, "--queries", "3", "--seed", "7", "--json")
    assert result.exit_code == 0, result.output
    found = json.loads(result.output)
    assert {"queries", "seed", "audited"} <= set(found)
    expected = numpy_order(7)
    assert expected[:3] == ["q6", "q3", "q1"]
    assert (found["queries"], found["seed"], found["audited"]) == (expected[:3], 7, [])
    assert found["no_pool_pairs"] == ["q6"]
    # A bigger N extends the sample; the stored seed is kept without --seed.
    bigger = json.loads(_cli(runner, "--queries", "5", "--json").output)
    assert (bigger["queries"], bigger["seed"]) == (expected[:5], 7)
    make_user(app, "ann")
    judge(app, audit_set[0], "q1", "d1", "ann", grade=2)
    again = json.loads(_cli(runner, "--queries", "5", "--json").output)
    assert again["audited"] == ["q1"]


def test_cli_human_output_marks_the_audited(
    runner: FlaskCliRunner, audit_set: tuple[int, int], app: Flask
) -> None:
    make_user(app, "ann")
    judge(app, audit_set[0], "q3", "d3", "ann", grade=1)
    judge(app, audit_set[0], "q5", "d5", "ann", status="cant_tell")  # no grade: not audited
    result = _cli(runner, "--queries", "6", "--seed", "3")
    assert result.exit_code == 0, result.output
    order = numpy_order(3)
    assert order == ["q3", "q6", "q5", "q2", "q4", "q1"]
    assert result.output.splitlines() == [
        "gpt on ts: 6 of 6 queries sampled with seed 3",
        "1\tq3\taudited",
        "2\tq6\tno pool pairs yet",
        "3\tq5\t-",
        "4\tq2\t-",
        "5\tq4\t-",
        "6\tq1\t-",
        "1 of 6 audited",
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--queries", "7"), "N must be a whole number from 1 to 6"),
        (("--queries", "3", "--seed", "8"), "drawn with seed 2"),
        (("--queries", "1"), "only grows"),
    ],
)
def test_cli_refusals_are_one_line_errors(
    runner: FlaskCliRunner, audit_set: tuple[int, int], args: tuple[str, ...], message: str
) -> None:
    assert _cli(runner, "--queries", "2", "--seed", "2").exit_code == 0
    result = _cli(runner, *args)
    assert result.exit_code == 1
    assert message in result.output and "Error:" in result.output


def test_cli_reseed_replaces_the_sample(runner: FlaskCliRunner, audit_set: tuple[int, int]) -> None:
    assert _cli(runner, "--queries", "4", "--seed", "2").exit_code == 0
    result = _cli(runner, "--queries", "2", "--seed", "9", "--reseed", "--json")
    assert result.exit_code == 0, result.output
    found = json.loads(result.output)
    assert (found["seed"], found["queries"]) == (9, numpy_order(9)[:2])


# -- the calibration page ------------------------------------------------------------------------


def _page(client: FlaskClient, ids: tuple[int, int]) -> str:
    response = client.get(f"/test-sets/{ids[0]}/judges/{ids[1]}")
    assert response.status_code == 200
    return response.get_data(as_text=True)


def test_the_page_draws_and_extends_the_sample(
    as_admin: FlaskClient, audit_set: tuple[int, int], app: Flask
) -> None:
    before = _page(as_admin, audit_set)
    assert "No sample drawn yet." in before
    assert "mean over <strong>all</strong> 6 of the test set's queries of NDCG@k" in before
    assert "a query without any relevant judged chunk counts 0 under that source" in before
    url = f"/test-sets/{audit_set[0]}/judges/{audit_set[1]}/audit"
    response = as_admin.post(url, data={"audit-queries": "6", "audit-seed": "5"})
    assert response.status_code == 302
    page = _page(as_admin, audit_set)
    assert '<code id="audit-sample-seed">5</code>' in page
    assert "0 of 6 audited" in page
    order = numpy_order(5)
    rows = [page.index(f"<code>{qid}</code>") for qid in order]
    assert rows == sorted(rows)  # listed in draw order
    assert "no pool pairs yet" in page
    with app.app_context():
        event = db.session.scalars(
            sa.select(AuditEvent).where(AuditEvent.action == "audit_sample.draw")
        ).one()
        assert (event.action, event.actor_name, event.details["seed"]) == (
            "audit_sample.draw",
            "admin",
            5,
        )


def test_the_page_shows_a_refusal_beside_the_form(
    as_admin: FlaskClient, audit_set: tuple[int, int], app: Flask
) -> None:
    url = f"/test-sets/{audit_set[0]}/judges/{audit_set[1]}/audit"
    response = as_admin.post(url, data={"audit-queries": "9"})
    assert response.status_code == 200
    assert "N must be a whole number from 1 to 6" in response.get_data(as_text=True)
    with app.app_context():
        assert db.session.scalar(sa.select(sa.func.count()).select_from(AuditSample)) == 0


def test_the_page_says_what_n_may_be_when_it_is_not_a_size(
    as_admin: FlaskClient, audit_set: tuple[int, int], app: Flask
) -> None:
    """0 is a number the admin typed, not a missing field; like −1 it gets the range."""
    url = f"/test-sets/{audit_set[0]}/judges/{audit_set[1]}/audit"
    for typed in ("0", "-1"):
        page = as_admin.post(url, data={"audit-queries": typed}).get_data(as_text=True)
        assert "N must be a whole number from 1 to 6" in page, typed
        assert "This field is required." not in page, typed
    for typed in ("1.5", "abc"):
        page = as_admin.post(url, data={"audit-queries": typed}).get_data(as_text=True)
        said = "N must be a whole number from 1 to 6, the test set's number of queries"
        assert f"{said}, not '{typed}'" in html.unescape(page), typed
        assert "This field is required." not in page, typed
    page = as_admin.post(url, data={"audit-queries": ""}).get_data(as_text=True)
    assert "This field is required." in page
    with app.app_context():
        assert db.session.scalar(sa.select(sa.func.count()).select_from(AuditSample)) == 0


def test_annotators_can_neither_see_nor_draw(
    as_annotator: FlaskClient, audit_set: tuple[int, int], annotator_id: int, app: Flask
) -> None:
    grant(app, audit_set[0], annotator_id)
    assert as_annotator.get(f"/test-sets/{audit_set[0]}/judges/{audit_set[1]}").status_code == 403
    url = f"/test-sets/{audit_set[0]}/judges/{audit_set[1]}/audit"
    assert as_annotator.post(url, data={"audit-queries": "2"}).status_code == 403
    with app.app_context():
        assert db.session.scalar(sa.select(sa.func.count()).select_from(AuditSample)) == 0


def test_the_form_needs_its_csrf_token(app: Flask, audit_set: tuple[int, int]) -> None:
    """With CSRF on (as in production), a POST without the form's token changes nothing."""
    app.config["WTF_CSRF_ENABLED"] = True
    make_user(app, "boss", "admin")
    client = app.test_client()
    page = client.get("/login").get_data(as_text=True)
    token = page.split('name="csrf_token" type="hidden" value="')[1].split('"')[0]
    login = {"username": "boss", "password": "correct-horse-9", "csrf_token": token}
    assert client.post("/login", data=login).status_code == 302
    url = f"/test-sets/{audit_set[0]}/judges/{audit_set[1]}/audit"
    assert client.post(url, data={"audit-queries": "2"}).status_code == 400
    form_page = client.get(f"/test-sets/{audit_set[0]}/judges/{audit_set[1]}").get_data(
        as_text=True
    )
    csrf = form_page.split('id="audit-csrf_token" name="audit-csrf_token" type="hidden" value="')
    data = {"audit-queries": "2", "audit-csrf_token": csrf[1].split('"')[0]}
    assert client.post(url, data=data).status_code == 302
    with app.app_context():
        assert len(audit_samples.audit_state(*_objects(audit_set)).queries) == 2


def _objects(ids: tuple[int, int]) -> tuple[TestSet, Judge]:
    return db.session.get_one(TestSet, ids[0]), db.session.get_one(Judge, ids[1])


# -- the API -------------------------------------------------------------------------------------


def _token(app: Flask, user_id: int) -> dict[str, str]:
    with app.app_context():
        token = create_token(db.session.get_one(User, user_id))
        db.session.remove()
    return {"Authorization": f"Bearer {token}"}


def test_the_api_reads_and_draws(
    client: FlaskClient, audit_set: tuple[int, int], admin_id: int, app: Flask
) -> None:
    headers = _token(app, admin_id)
    url = "/api/testsets/ts/judges/gpt/audit"
    empty = client.get(url, headers=headers)
    assert empty.status_code == 200
    assert empty.get_json() == {
        "queries": [],
        "seed": None,
        "audited": [],
        "no_pool_pairs": [],
        "query_count": 6,
    }
    drawn = client.post(url, json={"queries": 4, "seed": 11}, headers=headers)
    assert drawn.status_code == 200, drawn.get_json()
    assert drawn.get_json()["queries"] == numpy_order(11)[:4]
    by_id = client.get(f"/api/testsets/{audit_set[0]}/judges/{audit_set[1]}/audit", headers=headers)
    assert by_id.get_json() == drawn.get_json()
    refused = client.post(url, json={"queries": 5, "seed": 12}, headers=headers)
    assert refused.status_code == 400 and "reseed" in refused.get_json()["detail"]
    again = client.post(url, json={"queries": 2, "seed": 12, "reseed": True}, headers=headers)
    assert again.get_json()["queries"] == numpy_order(12)[:2]


@pytest.mark.parametrize(
    "body",
    [{}, {"queries": "two"}, {"queries": True}, {"queries": 2, "reseed": "maybe"}, [1]],
)
def test_the_api_refuses_malformed_draws(
    client: FlaskClient, audit_set: tuple[int, int], admin_id: int, app: Flask, body: object
) -> None:
    response = client.post(
        "/api/testsets/ts/judges/gpt/audit", json=body, headers=_token(app, admin_id)
    )
    assert response.status_code == 400
    assert set(response.get_json()) >= {"error", "detail"}


def test_the_api_draws_for_admins_only(
    client: FlaskClient, audit_set: tuple[int, int], annotator_id: int, app: Flask
) -> None:
    grant(app, audit_set[0], annotator_id)
    headers = _token(app, annotator_id)
    url = "/api/testsets/ts/judges/gpt/audit"
    assert client.get(url, headers=headers).status_code == 200  # a member may read it
    assert client.post(url, json={"queries": 2}, headers=headers).status_code == 403
    assert client.get("/api/testsets/ts/judges/nobody/audit", headers=headers).status_code == 404
