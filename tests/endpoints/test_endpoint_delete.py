"""Deleting an endpoint: confirmed, audited, refused while a schedule or a job uses it, and the
runs fetched from it kept with their snapshot."""

from __future__ import annotations

import html
from typing import Any

import pytest
import sqlalchemy as sa
from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner

from ndcg_labeler.extensions import db
from ndcg_labeler.models import AuditEvent, RetrieverEndpoint
from tests.endpoints.test_endpoint_edges import Programmable, hits
from tests.factory import build_test_set


@pytest.fixture
def es(app: Flask, runner: FlaskCliRunner, fake: Programmable) -> int:
    """Test set 'dels' (queries q1, q2) with endpoint 'es' and a run 'r1' fetched from it."""
    with app.app_context():
        ts_id = build_test_set("dels", {"q1": "refund", "q2": "parking"}).id
    add = ["endpoints", "add", "dels", "es", "--url", fake.url + "/v1?q={query}"]
    assert runner.invoke(args=[*add, "--preset", "list"]).exit_code == 0
    fake.answer = hits({"id": "d1", "score": 2.0})
    assert runner.invoke(args=["endpoints", "fetch", "dels", "es", "--run", "r1"]).exit_code == 0
    return ts_id


def _names(app: Flask) -> list[str]:
    with app.app_context():
        return list(db.session.scalars(sa.select(RetrieverEndpoint.name)))


def _snapshot(app: Flask) -> dict[str, Any]:
    from ndcg_labeler.services import runs, testsets

    with app.app_context():
        return dict(runs.require_run(testsets.require_by_name("dels"), "r1").report["fetched"])


def _deletes(app: Flask) -> list[dict[str, Any]]:
    with app.app_context():
        stmt = sa.select(AuditEvent).where(AuditEvent.action == "endpoint.delete")
        return [{**e.details, "actor": e.actor_name} for e in db.session.scalars(stmt)]


def test_the_browser_deletes_after_a_confirmation_and_keeps_the_runs(
    app: Flask, es: int, fake: Programmable, as_admin: FlaskClient
) -> None:
    base = f"/test-sets/{es}/endpoints/"
    page = as_admin.get(base + "es").get_data(as_text=True)
    # The form asks first (static/js/confirm.js), as deleting a run does.
    assert f'action="{base}es/delete" data-confirm="Delete the endpoint es?' in page
    before = _snapshot(app)
    deleted = as_admin.post(base + "es/delete")
    assert deleted.status_code == 302 and deleted.headers["Location"].endswith(base)
    assert _names(app) == []
    assert _snapshot(app) == before and before["url"] == fake.url + "/v1?q={query}"
    listing = html.unescape(as_admin.get(base).get_data(as_text=True))
    assert "Endpoint es deleted. Runs fetched from it keep their snapshot of it." in listing
    assert _deletes(app) == [
        {"actor": "admin", "test_set_id": es, "name": "es", "url": fake.url + "/v1?q={query}"}
    ]
    assert as_admin.post(base + "es/delete").status_code == 404
    # The name is free again.
    form = {"name": "es", "url": fake.url + "/v2?q={query}", "method": "GET", "preset": "list"}
    assert as_admin.post(base, data=form).status_code == 302


def test_the_cli_asks_unless_yes(app: Flask, es: int, runner: FlaskCliRunner) -> None:
    no = runner.invoke(args=["endpoints", "delete", "dels", "es"], input="n\n")
    assert no.exit_code == 1 and "Delete endpoint 'es' of 'dels'?" in no.output
    assert _names(app) == ["es"] and _deletes(app) == []
    yes = runner.invoke(args=["endpoints", "delete", "dels", "es"], input="y\n")
    assert yes.exit_code == 0 and "Endpoint es deleted" in yes.output, yes.output
    assert _names(app) == [] and [e["actor"] for e in _deletes(app)] == ["cli"]
    assert _snapshot(app)["endpoint"] == "es"
    gone = runner.invoke(args=["endpoints", "delete", "dels", "es", "--yes"])
    assert gone.exit_code == 1 and "test set 'dels' has no endpoint named 'es'" in gone.output


def test_a_scheduled_endpoint_is_not_deleted(
    app: Flask, es: int, runner: FlaskCliRunner, as_admin: FlaskClient
) -> None:
    schedule = ["endpoints", "schedule", "dels", "es"]
    assert runner.invoke(args=[*schedule, "--daily", "03:00", "--series", "nightly"]).exit_code == 0
    said = (
        "endpoint 'es' runs on a schedule (daily 03:00 into series 'nightly'): "
        "remove its schedule first"
    )
    cli = runner.invoke(args=["endpoints", "delete", "dels", "es"], input="y\n")
    # Refused before the question is asked.
    assert cli.exit_code == 1 and said in cli.output and "Delete endpoint" not in cli.output
    page = as_admin.post(f"/test-sets/{es}/endpoints/es/delete", follow_redirects=True)
    assert said in html.unescape(page.get_data(as_text=True))
    assert _names(app) == ["es"] and _deletes(app) == []
    assert runner.invoke(args=[*schedule, "--off"]).exit_code == 0
    assert runner.invoke(args=["endpoints", "delete", "dels", "es", "--yes"]).exit_code == 0


@pytest.mark.parametrize("state", ["queued", "running"])
def test_an_endpoint_a_job_will_ask_is_not_deleted(
    app: Flask, es: int, runner: FlaskCliRunner, as_admin: FlaskClient, state: str
) -> None:
    from ndcg_labeler.models import Job
    from ndcg_labeler.services.jobs import records

    with app.app_context():
        other = records.create_job("fetch", es, None, {"endpoint": "other", "run": "x"})
        job = records.create_job("scheduled", es, None, {"endpoint": "es", "series": "s"})
        db.session.get(Job, job.id).state = state
        db.session.commit()
        job_id, other_id = job.id, other.id
    said = f"endpoint 'es' cannot be deleted while job {job_id} (scheduled, {state}) asks it"
    cli = runner.invoke(args=["endpoints", "delete", "dels", "es", "--yes"])
    assert cli.exit_code == 1 and said in cli.output and f"job {other_id}" not in cli.output
    page = as_admin.post(f"/test-sets/{es}/endpoints/es/delete", follow_redirects=True)
    assert said in html.unescape(page.get_data(as_text=True))
    assert _names(app) == ["es"]
    with app.app_context():
        db.session.get(Job, job_id).state = "done"
        db.session.commit()
    assert runner.invoke(args=["endpoints", "delete", "dels", "es", "--yes"]).exit_code == 0


def test_deleting_is_for_admins_and_needs_the_csrf_token(
    app: Flask,
    es: int,
    client: FlaskClient,
    admin_id: int,
    annotator_id: int,
    auth: Any,
) -> None:
    url = f"/test-sets/{es}/endpoints/es/delete"
    assert auth.login("ann").status_code == 302
    assert client.post(url).status_code == 403
    assert client.get(url).status_code == 405
    auth.logout()
    assert auth.login("admin").status_code == 302
    assert client.post(f"/test-sets/{es + 999}/endpoints/es/delete").status_code == 404
    app.config["WTF_CSRF_ENABLED"] = True  # off in the other tests (tests/factory.py)
    assert client.post(url).status_code == 400
    assert _names(app) == ["es"]
    marker = 'name="csrf_token" value="'
    page = client.get(f"/test-sets/{es}/endpoints/es").get_data(as_text=True)
    token = page.split('<form method="post" action="' + url)[1].split(marker, 1)[1].split('"')[0]
    assert client.post(url, data={"csrf_token": token}).status_code == 302
    assert _names(app) == []
