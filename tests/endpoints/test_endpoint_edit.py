"""Editing an endpoint in the browser and on the command line: the add form's checks, nothing
changed by a bad value, fetched runs keeping their snapshot, schedules following the endpoint."""

from __future__ import annotations

import html
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import sqlalchemy as sa
from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner

from ndcg_labeler.extensions import db
from ndcg_labeler.models import AuditEvent
from tests.endpoints.test_endpoint_edges import Programmable, hits
from tests.factory import build_test_set


def _settings(app: Flask, test_set: str, name: str) -> dict[str, Any]:
    from ndcg_labeler.services import endpoints, testsets

    with app.app_context():
        found = endpoints.require_endpoint(testsets.require_by_name(test_set), name)
        return {**endpoints.settings_of(found), "schedule": found.schedule}


def _audit(app: Flask, action: str) -> list[dict[str, Any]]:
    with app.app_context():
        stmt = sa.select(AuditEvent).where(AuditEvent.action == action).order_by(AuditEvent.id)
        return [{**e.details, "actor": e.actor_name} for e in db.session.scalars(stmt)]


@pytest.fixture
def es(app: Flask, runner: FlaskCliRunner, fake: Programmable) -> int:
    """Test set 'edits' (queries q1, q2) with endpoint 'es', which has a header."""
    with app.app_context():
        ts_id = build_test_set("edits", {"q1": "refund", "q2": "parking"}).id
    added = runner.invoke(
        args=[
            "endpoints", "add", "edits", "es", "--url", fake.url + "/v1?q={query}",
            "--preset", "list", "--header", "X-Tenant: acme-private",
        ]
    )  # fmt: skip
    assert added.exit_code == 0, added.output
    fake.answer = hits({"id": "d1", "score": 2.0}, {"id": "d2", "score": 1.0})
    return ts_id


def _edit_form(url: str, **extra: str) -> dict[str, str]:
    return {
        "name": "es",
        "url": url,
        "method": "GET",
        "preset": "",
        "hits": "@",
        "id_expr": "id",
        "score": "score",
        "text": "",
        "concurrency": "4",
        "requests_per_minute": "0",
        "timeout": "30",
        **extra,
    }


def test_the_edit_form_is_the_add_form_prefilled_without_header_values(
    app: Flask, es: int, fake: Programmable, as_admin: FlaskClient
) -> None:
    show = as_admin.get(f"/test-sets/{es}/endpoints/es").get_data(as_text=True)
    assert f'href="/test-sets/{es}/endpoints/es/edit"' in show
    page = html.unescape(as_admin.get(f"/test-sets/{es}/endpoints/es/edit").get_data(as_text=True))
    for name, value in (
        ("name", "es"),
        ("url", fake.url + "/v1?q={query}"),
        ("hits", "@"),
        ("id_expr", "id"),
        ("score", "score"),
        ("concurrency", "4"),
        ("timeout", "30.0"),
    ):
        assert f'name="{name}"' in page and f'value="{value}"' in page, name
    # The header's name is said, its value (which may be secret) never.
    assert "Now: X-Tenant" in page and "acme-private" not in page
    assert 'name="clear_headers"' in page and "Save changes" in page


def test_an_edit_in_the_browser_renames_and_changes_only_what_is_given(
    app: Flask, es: int, fake: Programmable, as_admin: FlaskClient
) -> None:
    base = f"/test-sets/{es}/endpoints/"
    saved = as_admin.post(
        base + "es/edit",
        data=_edit_form(fake.url + "/v2?q={query}", name="es two", timeout="12.5"),
    )
    assert saved.status_code == 302 and saved.headers["Location"].endswith("/endpoints/es%20two")
    after = _settings(app, "edits", "es two")
    assert after["url"] == fake.url + "/v2?q={query}" and after["timeout"] == 12.5
    assert after["headers"] == ["X-Tenant: acme-private"]  # left empty: kept
    assert as_admin.get(base + "es").status_code == 404  # the old name is free
    (event,) = _audit(app, "endpoint.edit")
    assert event["actor"] == "admin" and event["name"] == "es two"
    assert set(event["changes"]) == {"name", "url", "timeout"}
    assert event["changes"]["name"] == {"old": "es", "new": "es two"}
    # Headers typed in replace them all; the trail keeps their names, never their values.
    v2 = {"url": fake.url + "/v2?q={query}", "name": "es two", "timeout": "12.5"}
    form = _edit_form(**v2, headers="X-Other: b\nX-K: c")
    assert as_admin.post(base + "es%20two/edit", data=form).status_code == 302
    assert _settings(app, "edits", "es two")["headers"] == ["X-Other: b", "X-K: c"]
    last = _audit(app, "endpoint.edit")[-1]
    assert last["changes"] == {"headers": {"old": ["X-Tenant"], "new": ["X-K", "X-Other"]}}
    assert "acme-private" not in json.dumps(_audit(app, "endpoint.edit"))
    form = _edit_form(**v2, clear_headers="y")
    assert as_admin.post(base + "es%20two/edit", data=form).status_code == 302
    assert _settings(app, "edits", "es two")["headers"] == []
    # Saved unchanged: no audit event.
    count = len(_audit(app, "endpoint.edit"))
    form = _edit_form(**v2)
    assert as_admin.post(base + "es%20two/edit", data=form).status_code == 302
    assert len(_audit(app, "endpoint.edit")) == count


BAD = [
    ("url", "ftp://x/{query}", "--url", "the URL must start with http:// or https://"),
    ("url", "http://x/search", "--url", "a GET endpoint's URL needs the {query} placeholder"),
    ("hits", "[", "--hits", "the hits expression '[' is not JMESPath"),
    ("headers", "no colon here", "--header", "a header must read 'Name: value'"),
    ("concurrency", "0", "--concurrency", "concurrency must be a whole number from 1 to 64"),
    ("timeout", "nan", "--timeout", "the timeout must be more than 0 and at most 600 s"),
    (
        "concurrency",
        "x",
        "--concurrency",
        "concurrency must be a whole number from 1 to 64, not 'x'",
    ),
    ("timeout", "½", "--timeout", "the timeout must be more than 0 and at most 600 s, not '½'"),
    ("name", "taken", "--name", "test set 'edits' already has an endpoint named 'taken'"),
    ("name", "ü", "--name", "an endpoint name must be 1–100 characters"),
]


def test_an_edit_with_a_bad_value_changes_nothing_in_the_browser_or_the_cli(
    app: Flask, es: int, fake: Programmable, runner: FlaskCliRunner, as_admin: FlaskClient
) -> None:
    add = ["endpoints", "add", "edits", "taken", "--url", fake.url + "/t?q={query}"]
    assert runner.invoke(args=[*add, "--preset", "list"]).exit_code == 0
    before = _settings(app, "edits", "es")
    for field, value, flag, message in BAD:
        form = {**_edit_form(fake.url + "/v9?q={query}", timeout="7"), field: value}
        page = as_admin.post(f"/test-sets/{es}/endpoints/es/edit", data=form)
        text = html.unescape(page.get_data(as_text=True))
        assert page.status_code == 200 and message in text, (field, value)
        assert _settings(app, "edits", "es") == before, field
        cli = runner.invoke(
            args=["endpoints", "edit", "edits", "es", "--timeout", "7", flag, value]
        )
        assert cli.exit_code == 1 and message in cli.output, (flag, cli.output)
        assert _settings(app, "edits", "es") == before, flag
    assert _audit(app, "endpoint.edit") == []


def test_the_cli_edit_changes_only_the_options_given(
    app: Flask, es: int, fake: Programmable, runner: FlaskCliRunner
) -> None:
    before = _settings(app, "edits", "es")
    nothing = runner.invoke(args=["endpoints", "edit", "edits", "es"])
    assert nothing.exit_code == 1 and "give at least one option to change" in nothing.output
    done = runner.invoke(args=["endpoints", "edit", "edits", "es", "--rpm", "60", "--score", ""])
    assert done.exit_code == 0, done.output
    assert done.output.strip() == f"Endpoint es saved (GET {fake.url}/v1?q={{query}})."
    after = _settings(app, "edits", "es")
    assert after == {**before, "requests_per_minute": 60, "score": ""}
    preset = ["endpoints", "edit", "edits", "es", "--preset", "elasticsearch", "--no-headers"]
    assert runner.invoke(args=[*preset, "--text-field", "body"]).exit_code == 0
    after = _settings(app, "edits", "es")
    assert (after["hits"], after["id_expr"], after["score"], after["text"]) == (
        "hits.hits",
        "_id",
        "_score",
        "_source.body",
    )
    assert after["headers"] == []
    renamed = runner.invoke(args=["endpoints", "edit", "edits", "es", "--name", "es2"])
    assert renamed.exit_code == 0, renamed.output
    gone = runner.invoke(args=["endpoints", "try", "edits", "es", "x"])
    assert gone.exit_code == 1 and "has no endpoint named 'es'" in gone.output
    assert [e["actor"] for e in _audit(app, "endpoint.edit")] == ["cli"] * 3


def test_the_edit_page_is_for_admins_and_needs_its_csrf_token(
    app: Flask,
    es: int,
    fake: Programmable,
    client: FlaskClient,
    admin_id: int,
    annotator_id: int,
    auth: Any,
) -> None:
    url = f"/test-sets/{es}/endpoints/es/edit"
    form = _edit_form(fake.url + "/v2?q={query}")
    before = _settings(app, "edits", "es")
    assert auth.login("ann").status_code == 302
    assert client.get(url).status_code == 403
    assert client.post(url, data=form).status_code == 403
    auth.logout()
    assert auth.login("admin").status_code == 302
    assert client.get(f"/test-sets/{es}/endpoints/nope/edit").status_code == 404
    assert client.get(f"/test-sets/{es + 999}/endpoints/es/edit").status_code == 404
    app.config["WTF_CSRF_ENABLED"] = True  # off in the other tests (tests/factory.py)
    assert client.post(url, data=form).status_code == 400
    assert _settings(app, "edits", "es") == before
    marker = 'name="csrf_token" type="hidden" value="'
    token = client.get(url).get_data(as_text=True).split(marker, 1)[1].split('"', 1)[0]
    assert client.post(url, data={**form, "csrf_token": token}).status_code == 302
    assert _settings(app, "edits", "es")["url"] == fake.url + "/v2?q={query}"


def test_an_edit_never_changes_a_fetched_runs_snapshot(
    app: Flask, es: int, fake: Programmable, runner: FlaskCliRunner
) -> None:
    from ndcg_labeler.services import runs, testsets

    fetched = runner.invoke(args=["endpoints", "fetch", "edits", "es", "--run", "r1"])
    assert fetched.exit_code == 0, fetched.output

    def snapshot() -> dict[str, Any]:
        with app.app_context():
            run = runs.require_run(testsets.require_by_name("edits"), "r1")
            return dict(run.report["fetched"])

    before = snapshot()
    assert before["url"] == fake.url + "/v1?q={query}" and before["endpoint"] == "es"
    edit = [
        "endpoints", "edit", "edits", "es", "--name", "renamed", "--url",
        fake.url + "/v2?q={query}", "--hits", "results", "--no-headers",
    ]  # fmt: skip
    assert runner.invoke(args=edit).exit_code == 0
    assert snapshot() == before


def test_a_fetch_keeps_the_configuration_it_started_with_through_an_edit(
    app: Flask, es: int, fake: Programmable
) -> None:
    from ndcg_labeler.services import endpoints, runs, testsets

    with app.app_context():
        build_test_set("many", {f"q{n}": f"query {n}" for n in range(4)})
        test_set = testsets.require_by_name("many")
        endpoint = endpoints.add_endpoint(
            test_set, "e", fake.url + "/old?q={query}", preset_name="list", concurrency=1
        )
        edited: list[bool] = []

        def edit_at_first_answer(*_report: Any) -> None:
            if not edited:
                endpoints.edit_endpoint(test_set, endpoint, url=fake.url + "/new?q={query}")
                edited.append(True)

        run, _ = endpoints.fetch_run(test_set, endpoint, "r", progress=edit_at_first_answer)
        assert run is not None and edited
        run_id = run.id
        db.session.remove()
        run = runs.require_run(testsets.require_by_name("many"), "r")
        assert run.id == run_id
        # The run says how it was fetched: every query went to the URL it started with.
        assert run.report["fetched"]["url"] == fake.url + "/old?q={query}"
        assert {r.path for r in fake.seen} == {"/old"}
        now = endpoints.require_endpoint(testsets.require_by_name("many"), "e")
        assert now.url == fake.url + "/new?q={query}"


@pytest.fixture
def scheduled(app: Flask, es: int) -> Iterator[int]:
    from ndcg_labeler.services import series, testsets

    app.config["NDCG_JOBS_IMMEDIATE"] = True  # a queued job runs in the tick's own call
    with app.app_context():
        test_set = testsets.require_by_name("edits")
        series.set_schedule(test_set, "es", "daily 03:00", "nightly", k=10, now=DAY1)
        db.session.remove()
    yield es


DAY1 = datetime(2026, 11, 23, 2, 0, tzinfo=UTC)


def test_a_schedule_follows_its_endpoint_through_an_edit_and_a_rename(
    app: Flask, scheduled: int, fake: Programmable, runner: FlaskCliRunner
) -> None:
    from ndcg_labeler.services import jobs, runs, testsets

    edit = ["endpoints", "edit", "edits", "es", "--name", "es2", "--url"]
    edit.append(fake.url + "/v2?q={query}")
    assert runner.invoke(args=edit).exit_code == 0
    after = _settings(app, "edits", "es2")
    assert after["schedule"] == "daily 03:00"
    with app.app_context():
        (job,) = jobs.tick(DAY1 + timedelta(hours=1, seconds=30))
        assert job.state == "done", job.error
        run = runs.require_run(testsets.require_by_name("edits"), "nightly-2026-11-23-0300")
        assert run.report["fetched"]["endpoint"] == "es2"
        assert run.report["fetched"]["url"] == fake.url + "/v2?q={query}"
    assert {r.path for r in fake.seen} == {"/v2"}


def test_a_rename_is_refused_while_a_fetch_for_the_endpoint_is_queued(
    app: Flask, es: int, runner: FlaskCliRunner
) -> None:
    from ndcg_labeler.services.jobs import records

    with app.app_context():
        job_id = records.create_job("fetch", es, None, {"endpoint": "es", "run": "r"}).id
    renamed = runner.invoke(args=["endpoints", "edit", "edits", "es", "--name", "es2"])
    assert renamed.exit_code == 1
    assert f"endpoint 'es' cannot be renamed while job {job_id} (fetch, queued) asks it" in (
        renamed.output
    )
    # Other settings may change: the job reads them when it starts.
    assert runner.invoke(args=["endpoints", "edit", "edits", "es", "--rpm", "5"]).exit_code == 0
    assert _settings(app, "edits", "es")["requests_per_minute"] == 5


def test_the_cli_lists_a_test_sets_endpoints_without_header_values(
    app: Flask, es: int, fake: Programmable, runner: FlaskCliRunner
) -> None:
    with app.app_context():
        build_test_set("empty", {"q1": "x"})
    empty = runner.invoke(args=["endpoints", "list", "empty"])
    assert empty.exit_code == 0 and empty.output == "Test set 'empty' has no endpoint.\n"
    assert runner.invoke(args=["endpoints", "list", "empty", "--json"]).output == "[]\n"
    add = ["endpoints", "add", "edits", "b", "--url", fake.url + "/b?q={query}"]
    assert runner.invoke(args=[*add, "--preset", "list"]).exit_code == 0
    assert (
        runner.invoke(
            args=["endpoints", "schedule", "edits", "b", "--daily", "03:00", "--series", "s"]
        ).exit_code
        == 0
    )
    text = runner.invoke(args=["endpoints", "list", "edits"])
    assert text.exit_code == 0 and "acme-private" not in text.output
    assert text.output.splitlines() == [
        f"b\tGET {fake.url}/b?q={{query}}\tdaily 03:00 -> s",
        f"es\tGET {fake.url}/v1?q={{query}}",
    ]
    listed = json.loads(runner.invoke(args=["endpoints", "list", "edits", "--json"]).output)
    assert [row["endpoint"] for row in listed] == ["b", "es"]
    assert listed[1] == {
        "endpoint": "es",
        "url": fake.url + "/v1?q={query}",
        "method": "GET",
        "body_template": "",
        "header_names": ["X-Tenant"],
        "hits": "@",
        "id": "id",
        "score": "score",
        "text": "",
        "concurrency": 4,
        "requests_per_minute": 0,
        "timeout": 30.0,
        "schedule": "",
        "series": "",
    }
