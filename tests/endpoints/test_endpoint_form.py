"""Endpoints in the browser as on the command line: names, limits, a capped Try, cancelling."""

from __future__ import annotations

import html
import time
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskCliRunner
from werkzeug.wrappers import Request, Response

from tests.endpoints.test_endpoint_edges import Programmable
from tests.factory import build_test_set

URL = "http://127.0.0.1:9/s?q={query}"  # nothing listens: these tests never ask it


def test_a_name_with_a_non_ascii_letter_is_refused_in_words_that_say_so(
    app: Flask, runner: FlaskCliRunner, as_admin: Any
) -> None:
    with app.app_context():
        ts_id = build_test_set("names", {"q1": "x"}).id
    said = "the letters A–Z and a–z (no accents), digits 0–9, spaces, '.', '_' or '-'"
    cli = runner.invoke(
        args=["endpoints", "add", "names", "ü name", "--url", URL, "--preset", "list"]
    )
    assert cli.exit_code == 1 and said in cli.output, cli.output
    page = as_admin.post(
        f"/test-sets/{ts_id}/endpoints/",
        data={"name": "ü name", "url": URL, "method": "GET", "preset": "list"},
    )
    assert page.status_code == 200 and said in html.unescape(page.get_data(as_text=True))


def _add_form(**extra: str) -> dict[str, str]:
    return {"name": "e", "url": URL, "method": "GET", "preset": "list", **extra}


def _endpoint(app: Flask, test_set: str, name: str) -> tuple[int, int, float]:
    from ndcg_labeler.services import endpoints, testsets

    with app.app_context():
        found = endpoints.require_endpoint(testsets.require_by_name(test_set), name)
        return found.concurrency, found.requests_per_minute, found.timeout


def test_the_add_form_sets_the_limits_and_the_page_shows_them(
    app: Flask, runner: FlaskCliRunner, as_admin: Any
) -> None:
    with app.app_context():
        ts_id = build_test_set("limits", {"q1": "x"}).id
    base = f"/test-sets/{ts_id}/endpoints/"
    form = as_admin.get(base).get_data(as_text=True)
    for name, value in (("concurrency", "4"), ("requests_per_minute", "0"), ("timeout", "30.0")):
        assert f'name="{name}"' in form and f'value="{value}"' in form, name
    added = as_admin.post(
        base, data=_add_form(concurrency="8", requests_per_minute="120", timeout="45.5")
    )
    assert added.status_code == 302, added.get_data(as_text=True)
    assert _endpoint(app, "limits", "e") == (8, 120, 45.5)
    page = html.unescape(as_admin.get(base + "e").get_data(as_text=True))
    assert "8 queries at a time, at most 120 requests per minute, 45.5 s timeout" in page
    # Left empty, they take the command line's defaults (its --help: 4, no limit, 30 s).
    assert as_admin.post(base, data=_add_form(name="plain")).status_code == 302
    cli = runner.invoke(
        args=["endpoints", "add", "limits", "cli", "--url", URL, "--preset", "list"]
    )
    assert cli.exit_code == 0, cli.output
    assert _endpoint(app, "limits", "plain") == _endpoint(app, "limits", "cli") == (4, 0, 30.0)
    page = html.unescape(as_admin.get(base + "plain").get_data(as_text=True))
    assert "4 queries at a time, no limit on requests per minute, 30 s timeout" in page


CONCURRENCY = "concurrency must be a whole number from 1 to 64"
TIMEOUT = "the timeout must be more than 0 and at most 600 s"
LIMITS = [
    ("concurrency", "--concurrency", "0", f"{CONCURRENCY}, not 0"),
    ("concurrency", "--concurrency", "65", f"{CONCURRENCY}, not 65"),
    (
        "requests_per_minute", "--rpm", "-1",
        "requests per minute must be a whole number from 0 (no limit) to 2147483647, not -1",
    ),
    (
        "requests_per_minute", "--rpm", "2147483648",
        "requests per minute must be a whole number from 0 (no limit) to 2147483647, "
        "not 2147483648",
    ),
    ("timeout", "--timeout", "0", f"{TIMEOUT}, not 0"),
    ("timeout", "--timeout", "600.5", f"{TIMEOUT}, not 600.5"),
    ("timeout", "--timeout", ".5e3", f"{TIMEOUT}, not '.5e3'"),
]  # fmt: skip


def test_limits_out_of_range_are_refused_alike_in_the_browser_and_the_cli(
    app: Flask, runner: FlaskCliRunner, as_admin: Any
) -> None:
    with app.app_context():
        ts_id = build_test_set("bad limits", {"q1": "x"}).id
    base = f"/test-sets/{ts_id}/endpoints/"
    for field, flag, value, message in LIMITS:
        cli = runner.invoke(
            args=[
                "endpoints",
                "add",
                "bad limits",
                "e",
                "--url",
                URL,
                "--preset",
                "list",
                flag,
                value,
            ]
        )
        assert cli.exit_code == 1 and f"Error: {message}" in cli.output, (flag, value, cli.output)
        page = as_admin.post(base, data=_add_form(**{field: value}))
        text = html.unescape(page.get_data(as_text=True))
        # Said on the field itself, in the same words.
        assert page.status_code == 200 and f'id="{field}-error">{message}<' in text, (field, value)
    assert "No endpoint yet." in as_admin.get(base).get_data(as_text=True)
    for limit in ("concurrency=64", "requests_per_minute=2147483647", "timeout=600"):
        name, value = limit.split("=")
        assert as_admin.post(base, data=_add_form(name=name, **{name: value})).status_code == 302


# Not numbers at all: the range sentence of each limit, with what was typed, in the browser
# and on the command line alike (not WTForms' "Not a valid integer value." nor click's).
NOT_NUMBERS = [
    ("concurrency", "--concurrency", "four", f"{CONCURRENCY}, not 'four'"),
    ("concurrency", "--concurrency", "1.5", f"{CONCURRENCY}, not '1.5'"),
    (
        "requests_per_minute", "--rpm", "60/min",
        "requests per minute must be a whole number from 0 (no limit) to 2147483647, "
        "not '60/min'",
    ),
    ("timeout", "--timeout", "30s", f"{TIMEOUT}, not '30s'"),
    # float() read these as numbers (1e2 was saved as 100 s); the judge settings' reader
    # (services.read_number) takes plain decimals only, and the limits now read alike.
    ("timeout", "--timeout", "1e2", f"{TIMEOUT}, not '1e2'"),
    ("timeout", "--timeout", "1e3", f"{TIMEOUT}, not '1e3'"),
    ("timeout", "--timeout", "inf", f"{TIMEOUT}, not 'inf'"),
    ("timeout", "--timeout", "nan", f"{TIMEOUT}, not 'nan'"),
]  # fmt: skip


def test_limits_that_are_not_numbers_are_refused_in_the_range_words(
    app: Flask, runner: FlaskCliRunner, as_admin: Any
) -> None:
    with app.app_context():
        ts_id = build_test_set("typed limits", {"q1": "x"}).id
    base = f"/test-sets/{ts_id}/endpoints/"
    add = ["endpoints", "add", "typed limits", "e", "--url", URL, "--preset", "list"]
    for field, flag, value, message in NOT_NUMBERS:
        cli = runner.invoke(args=[*add, flag, value])
        assert cli.exit_code == 1 and f"Error: {message}" in cli.output, (flag, value, cli.output)
        page = as_admin.post(base, data=_add_form(**{field: value}))
        text = html.unescape(page.get_data(as_text=True))
        assert page.status_code == 200 and f'id="{field}-error">{message}<' in text, (field, value)
        assert "Not a valid" not in text
    assert "No endpoint yet." in as_admin.get(base).get_data(as_text=True)
    # A browser sends a number input's unreadable text as "" (the default, silently): the
    # fields are text inputs with a numeric keyboard, so what was typed reaches the check.
    form = as_admin.get(base).get_data(as_text=True)
    for field, mode in (("concurrency", "numeric"), ("requests_per_minute", "numeric")):
        assert f'inputmode="{mode}" name="{field}" type="text"' in form, field
    assert 'inputmode="decimal" name="timeout" type="text"' in form


def test_the_add_form_needs_its_csrf_token(app: Flask, as_admin: Any) -> None:
    with app.app_context():
        ts_id = build_test_set("csrf", {"q1": "x"}).id
    base = f"/test-sets/{ts_id}/endpoints/"
    app.config["WTF_CSRF_ENABLED"] = True  # off in the other tests (tests/factory.py)
    refused = as_admin.post(base, data=_add_form(concurrency="8"))
    assert refused.status_code == 400
    marker = 'name="csrf_token" type="hidden" value="'
    text = as_admin.get(base).get_data(as_text=True)
    token = text.split(marker, 1)[1].split('"', 1)[0]
    added = as_admin.post(base, data={**_add_form(concurrency="8"), "csrf_token": token})
    assert added.status_code == 302
    assert _endpoint(app, "csrf", "e") == (8, 0, 30.0)


def test_a_browser_try_stops_well_before_the_web_worker_would(
    app: Flask, runner: FlaskCliRunner, as_admin: Any, fake: Programmable
) -> None:
    # gunicorn kills a request after its --timeout (NDCG_WEB_TIMEOUT): here 4 s, so a browser
    # Try gives up after 2 s, while the endpoint's own 300 s stay for fetches and the CLI.
    # (Seconds, not fractions: on a loaded machine the request itself takes some.)
    app.config["NDCG_WEB_TIMEOUT"] = 4
    with app.app_context():
        ts_id = build_test_set("capped", {"q1": "x"}).id
    add = [
        "endpoints",
        "add",
        "capped",
        "e",
        "--url",
        fake.url + "/s?q={query}",
        "--preset",
        "list",
    ]
    assert runner.invoke(args=[*add, "--timeout", "300"]).exit_code == 0

    def slow(_request: Request) -> Response:
        time.sleep(4.0)
        return Response('[{"id": "d1", "score": 1}]', content_type="application/json")

    fake.answer = slow
    base = f"/test-sets/{ts_id}/endpoints/e"
    started = time.monotonic()
    page = as_admin.post(base, data={"try-query": "x", "try-submit": "Try"})
    took = time.monotonic() - started
    text = html.unescape(page.get_data(as_text=True))
    assert page.status_code == 200 and "no answer from" in text and took < 3.5, took
    assert "Tried with a 2 s limit; fetches use the endpoint's 300 s." in text
    # The command line waits for the endpoint's own timeout, and gets the answer.
    tried = runner.invoke(args=["endpoints", "try", "capped", "e", "x", "--json"])
    assert tried.exit_code == 0 and '"docid": "d1"' in tried.output, tried.output
    # Under the cap, nothing is said: the endpoint's timeout is the one used.
    assert runner.invoke(args=[*add[:3], "quick", *add[4:], "--timeout", "1.5"]).exit_code == 0
    fake.answer = lambda _request: Response("[]", content_type="application/json")
    quick = as_admin.post(base[:-1] + "quick", data={"try-query": "x", "try-submit": "Try"})
    text = quick.get_data(as_text=True)
    assert "0 results, as they would be stored" in text and "limit; fetches use" not in text


def test_serve_gives_gunicorn_the_configured_web_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    from ndcg_labeler.cli import main

    started: list[list[str]] = []

    class Child:
        def __init__(self, args: list[str]) -> None:
            started.append(args)

        def wait(self, timeout: float | None = None) -> int:
            return 0

        def poll(self) -> int:
            return 0

    monkeypatch.setattr(main.subprocess, "Popen", Child)
    monkeypatch.setattr(main.signal, "signal", lambda *_args: None)  # keep pytest's handlers
    for env, expected in (("", "120"), ("300", "300")):
        monkeypatch.setenv("NDCG_WEB_TIMEOUT", env)
        started.clear()
        result = CliRunner().invoke(main.serve, ["--no-migrate"])
        assert result.exit_code == 0, result.output
        gunicorn = next(args for args in started if "gunicorn" in args)
        assert gunicorn[gunicorn.index("--timeout") + 1] == expected


def test_after_cancel_no_query_reaches_the_endpoint_beyond_those_in_flight(
    app: Flask, runner: FlaskCliRunner, fake: Programmable
) -> None:
    from ndcg_labeler.services import endpoints, testsets
    from ndcg_labeler.services._progress import Cancelled

    with app.app_context():
        build_test_set("cancel", {f"q{n:02}": f"query {n}" for n in range(20)})
    add = ["endpoints", "add", "cancel", "e", "--url", fake.url + "/s?q={query}"]
    assert runner.invoke(args=[*add, "--preset", "list", "--concurrency", "3"]).exit_code == 0

    def slow(request: Request) -> Response:
        # The first query answers at once and the others take a while, so that when the cancel
        # comes (at the first answer) three are being asked: the two others of the first three,
        # and the one the first query's thread takes next.
        if request.args["q"] != "query 0":
            time.sleep(0.3)
        return Response('[{"id": "d1", "score": 1}]', content_type="application/json")

    at_cancel: list[int] = []

    def cancel_at_once(*_report: Any) -> None:
        at_cancel.append(len(fake.seen))
        raise Cancelled()

    fake.answer = slow
    with app.app_context():
        test_set = testsets.require_by_name("cancel")
        endpoint = endpoints.require_endpoint(test_set, "e")
        with pytest.raises(Cancelled):
            endpoints.fetch_run(test_set, endpoint, "r", progress=cancel_at_once)
    after = len(fake.seen)
    time.sleep(0.7)  # two answers' time: a query still queued would have arrived by now
    # Four (three on a busy machine, if a thread had not taken its next query yet), of twenty.
    assert at_cancel and len(fake.seen) == after and 3 <= after <= 4, (at_cancel, after)


def test_adding_an_endpoint_leaves_an_audit_entry_without_header_values(
    app: Flask, runner: FlaskCliRunner, as_admin: Any
) -> None:
    import sqlalchemy as sa

    from ndcg_labeler.extensions import db
    from ndcg_labeler.models import AuditEvent

    with app.app_context():
        ts_id = build_test_set("audited", {"q1": "x"}).id
    form = _add_form(headers="X-Tenant: acme-private")
    assert as_admin.post(f"/test-sets/{ts_id}/endpoints/", data=form).status_code == 302
    cli = runner.invoke(
        args=["endpoints", "add", "audited", "cli", "--url", URL, "--preset", "list"]
    )
    assert cli.exit_code == 0, cli.output
    with app.app_context():
        stmt = sa.select(AuditEvent).where(AuditEvent.action == "endpoint.add")
        events = db.session.scalars(stmt.order_by(AuditEvent.id)).all()
        seen = [(e.actor_name, e.details["name"], e.details["headers"]) for e in events]
        assert seen == [("admin", "e", ["X-Tenant"]), ("cli", "cli", [])]
        assert all(e.details["url"] == URL for e in events)
        assert "acme-private" not in str([e.details for e in events])
