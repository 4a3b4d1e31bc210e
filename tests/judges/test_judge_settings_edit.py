"""A judge's base URL, concurrency, timeout and requests per minute changed after it was
added: by `flask judges edit`, the judge's settings page and the API, checked in add's words,
audited, the stored answers left as they were. Offline: fake LLM servers on 127.0.0.1."""

from __future__ import annotations

import html
import io
import json
from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner

from ndcg_labeler.extensions import db
from ndcg_labeler.models import AuditEvent, MachineJudgment, User
from ndcg_labeler.services import ensembles, judges
from ndcg_labeler.services.accounts import create_token
from ndcg_labeler.services.imports import ImportFile, import_files
from tests.factory import build_test_set, make_user, trec
from tests.judges.fake_llm import FakeLLM

CORPUS = {"d1": "ANSWER3 refunds", "d2": "ANSWER1 opening hours"}
POOL = {"q1": ["d1", "d2"]}
TYPO = "http://127.0.0.1:9/v1"  # nothing listens on port 9 (discard): every request fails
CONCURRENCY = "concurrency must be a whole number from 1 to 64"
TIMEOUT = "the timeout must be more than 0 and at most 600 s"
RPM = "requests per minute must be a whole number from 0 (no limit) to 100000"
URL = "the base URL must start with http:// or https://"


@pytest.fixture
def llm() -> Iterator[FakeLLM]:
    server = FakeLLM().start()
    yield server
    server.stop()


@pytest.fixture
def typo(app: Flask, monkeypatch: pytest.MonkeyPatch) -> int:
    """Test set `ts` and judge `gpt` added with a base URL nobody answers at; the judge's id."""
    monkeypatch.setattr("ndcg_labeler.services.judges.client.BACKOFF", 0.01)
    with app.app_context():
        test_set = build_test_set("ts", {"q1": "refunds"}, corpus=CORPUS)
        import_files(test_set, pool=ImportFile(io.BytesIO(trec(POOL)), "pool.trec"))
        return judges.add_judge("gpt", TYPO, "m", timeout=2, concurrency=2).id


def _settings(app: Flask) -> tuple[str, int, float, int]:
    with app.app_context():
        judge = judges.require_judge("gpt")
        return (judge.base_url, judge.concurrency, judge.timeout, judge.requests_per_minute)


def _answers(app: Flask) -> list[tuple[int, str, int | None]]:
    with app.app_context():
        rows = db.session.execute(
            sa.select(
                MachineJudgment.chunk_id, MachineJudgment.status, MachineJudgment.grade
            ).order_by(MachineJudgment.chunk_id)
        )
        return [tuple(row) for row in rows]


def _events(app: Flask) -> list[tuple[str, str, dict]]:
    with app.app_context():
        rows = db.session.execute(
            sa.select(AuditEvent.action, AuditEvent.actor_name, AuditEvent.details)
            .where(AuditEvent.action == "judge.settings")
            .order_by(AuditEvent.id)
        )
        return [tuple(row) for row in rows]


def test_cli_fixes_a_typo_keeping_the_answers_and_the_next_run_asks_the_new_url(
    app: Flask, runner: FlaskCliRunner, llm: FakeLLM, typo: int
) -> None:
    first = runner.invoke(args=["judges", "run", "ts", "--judge", "gpt"])
    assert first.exit_code == 0, first.output
    failed = _answers(app)
    assert [status for _, status, _ in failed] == ["failed", "failed"]
    fixed = runner.invoke(
        args=[
            "judges",
            "edit",
            "gpt",
            "--base-url",
            llm.url + "/",
            "--concurrency",
            "3",
            "--timeout",
            "12.5",
            "--rpm",
            "600",
            "--json",
        ]
    )
    assert fixed.exit_code == 0, fixed.output
    assert json.loads(fixed.output) == {
        "judge": "gpt",
        "changed": {
            "base_url": [TYPO, llm.url],  # the trailing slash dropped, as at creation
            "concurrency": [2, 3],
            "timeout": [2.0, 12.5],
            "requests_per_minute": [0, 600],
        },
    }
    assert _settings(app) == (llm.url, 3, 12.5, 600)
    assert _answers(app) == failed  # the settings changed, not a stored answer
    (event,) = _events(app)
    assert event[:2] == ("judge.settings", "cli")
    assert event[2]["changed"]["base_url"] == [TYPO, llm.url]
    # Its history kept: asking the failed pairs again reaches the fixed URL.
    again = runner.invoke(args=["judges", "ask-again", "ts", "--judge", "gpt", "--json"])
    assert again.exit_code == 0, again.output
    assert [(s, g) for _, s, g in _answers(app)] == [("labeled", 3), ("labeled", 1)]
    assert len(llm.requests) == 2
    # Nothing given, or the same values: unchanged, no event.
    same = runner.invoke(args=["judges", "edit", "gpt", "--concurrency", "3"])
    assert same.exit_code == 0 and "Judge gpt unchanged." in same.output
    assert len(_events(app)) == 1


@pytest.mark.parametrize(
    ("flag", "typed", "message"),
    [
        ("--concurrency", "four", f"{CONCURRENCY}, not 'four'"),
        ("--concurrency", "65", f"{CONCURRENCY}, not 65"),
        ("--timeout", "30s", f"{TIMEOUT}, not '30s'"),
        ("--timeout", "0", f"{TIMEOUT}, not 0"),
        ("--rpm", "-1", f"{RPM}, not -1"),
        ("--base-url", "ftp://x", URL),
    ],
)
def test_cli_refuses_in_the_words_of_judges_add(
    app: Flask, runner: FlaskCliRunner, typo: int, flag: str, typed: str, message: str
) -> None:
    before = _settings(app)
    added = runner.invoke(
        args=["judges", "add", "x", "--base-url", TYPO, "--model", "m", flag, typed]
    )
    assert added.exit_code == 1 and f"Error: {message}" in added.output, added.output
    edited = runner.invoke(args=["judges", "edit", "gpt", flag, typed])
    assert edited.exit_code == 1 and f"Error: {message}" in edited.output, edited.output
    assert _settings(app) == before and _events(app) == []


def test_the_settings_page_shows_checks_and_saves(
    app: Flask, as_admin: FlaskClient, llm: FakeLLM, typo: int
) -> None:
    assert f'href="/judges/{typo}/edit"' in as_admin.get("/judges/").get_data(as_text=True)
    page = as_admin.get(f"/judges/{typo}/edit").get_data(as_text=True)
    assert f'value="{TYPO}"' in page and 'value="2"' in page
    assert 'name="csrf_token"' in page
    wrong = as_admin.post(
        f"/judges/{typo}/edit",
        data={"base_url": TYPO, "timeout": "30s", "concurrency": "65", "requests_per_minute": "0"},
    )
    text = html.unescape(wrong.get_data(as_text=True))
    assert wrong.status_code == 200
    assert f"id=\"timeout-error\">{TIMEOUT}, not '30s'<" in text
    assert f'id="concurrency-error">{CONCURRENCY}, not 65<' in text
    bad_url = as_admin.post(f"/judges/{typo}/edit", data={"base_url": "127.0.0.1:8000/v1"})
    assert URL in html.unescape(bad_url.get_data(as_text=True))
    assert _settings(app) == (TYPO, 2, 2.0, 0) and _events(app) == []
    saved = as_admin.post(
        f"/judges/{typo}/edit",
        data={"base_url": llm.url, "timeout": "5", "concurrency": "4", "requests_per_minute": ""},
    )
    assert saved.status_code == 302
    assert _settings(app) == (llm.url, 4, 5.0, 0)  # empty: kept
    ((_action, actor, details),) = _events(app)
    assert actor == "admin" and set(details["changed"]) == {"base_url", "timeout", "concurrency"}


def test_an_ensembles_settings_are_its_members(
    app: Flask, as_admin: FlaskClient, runner: FlaskCliRunner, typo: int
) -> None:
    with app.app_context():
        judges.add_judge("other", TYPO, "m")
        both = ensembles.add_ensemble("both", ["gpt", "other"], "median").id
    assert as_admin.get(f"/judges/{both}/edit").status_code == 404
    refused = runner.invoke(args=["judges", "edit", "both", "--concurrency", "2"])
    assert refused.exit_code == 1
    assert "both is an ensemble: change the settings of its members" in refused.output


def _token(app: Flask, user_id: int) -> dict[str, str]:
    with app.app_context():
        token = create_token(db.session.get_one(User, user_id))
        db.session.remove()
    return {"Authorization": f"Bearer {token}"}


def test_the_api_changes_settings_for_admins_only(
    app: Flask, client: FlaskClient, admin_id: int, llm: FakeLLM, typo: int
) -> None:
    url = "/api/judges/gpt/settings"
    annotator = _token(app, make_user(app, "ann"))
    assert client.post(url, json={"concurrency": 3}, headers=annotator).status_code == 404
    admin = _token(app, admin_id)
    empty = client.post(url, json={}, headers=admin)
    assert empty.status_code == 400
    wrong = client.post(url, json={"concurrency": "four", "timeout": 0}, headers=admin)
    assert wrong.status_code == 400
    assert wrong.get_json()["detail"] == f"{CONCURRENCY}, not 'four'; {TIMEOUT}, not 0"
    model = client.post(url, json={"model": "other"}, headers=admin)
    assert model.status_code == 400 and "model cannot be changed" in model.get_json()["detail"]
    assert _settings(app) == (TYPO, 2, 2.0, 0) and _events(app) == []
    done = client.post(
        f"/api/judges/{typo}/settings",
        json={"base_url": llm.url, "requests_per_minute": 120, "timeout": "7.5"},
        headers=admin,
    )
    assert done.status_code == 200, done.get_json()
    assert done.get_json() == {
        "judge": "gpt",
        "changed": {
            "base_url": [TYPO, llm.url],
            "timeout": [2.0, 7.5],
            "requests_per_minute": [0, 120],
        },
        "settings": {
            "base_url": llm.url,
            "concurrency": 2,
            "timeout": 7.5,
            "requests_per_minute": 120,
        },
    }
    assert [actor for _, actor, _ in _events(app)] == ["admin"]
