"""Each admin action leaves one audit event (who, what, on what), in the action's transaction."""

from __future__ import annotations

import io
import re
from typing import Any

import pytest
import sqlalchemy as sa
from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner

from ndcg_labeler.extensions import db
from ndcg_labeler.models import AuditEvent, Run, TestSet, User
from ndcg_labeler.services import ServiceError
from ndcg_labeler.services import runs as run_service
from tests.factory import PASSWORD, build, build_runs, make_test_set, pair_ids, trec

# The sign-in actions: the fixtures' own logins make them, so the tests of the other actions
# leave them out (tests/audit/test_login_audit.py is about them).
SIGNING = ("login.password", "login.failed", "login.sso", "logout")


def events(app: Flask, action: str | None = None, *, signing: bool = False) -> list[dict[str, Any]]:
    """The audit events (oldest first) as dicts; sign-ins and outs only with `signing`."""
    with app.app_context():
        stmt = sa.select(AuditEvent).order_by(AuditEvent.id)
        if action:
            stmt = stmt.where(AuditEvent.action == action)
        elif not signing:
            stmt = stmt.where(AuditEvent.action.not_in(SIGNING))
        return [
            {
                "actor": e.actor_name,
                "actor_id": e.actor_id,
                "action": e.action,
                "target": (e.target_type, e.target_id),
                "details": e.details,
            }
            for e in db.session.scalars(stmt)
        ]


def test_user_creation_role_active_and_password_reset(
    app: Flask, as_admin: FlaskClient, admin_id: int
) -> None:
    response = as_admin.post(
        "/users/", data={"username": "zoe", "role": "annotator", "password": "long-enough-1"}
    )
    assert response.status_code == 302
    with app.app_context():
        zoe = db.session.scalar(sa.select(User.id).where(User.username == "zoe"))
    (created,) = events(app, "user.create")
    assert created["actor"] == "admin" and created["actor_id"] == admin_id
    assert created["target"] == ("user", zoe)
    assert created["details"] == {"username": "zoe", "role": "annotator"}

    as_admin.post(f"/users/{zoe}", data={"role": "admin", "active": "y"})
    assert [e["details"] for e in events(app, "user.role")] == [
        {"username": "zoe", "old": "annotator", "new": "admin"}
    ]
    assert events(app, "user.active") == [] and events(app, "user.password_reset") == []

    as_admin.post(f"/users/{zoe}", data={"role": "admin", "password": "brand-new-pw-2"})
    (deactivated,) = events(app, "user.active")
    assert deactivated["details"] == {"username": "zoe", "old": True, "new": False}
    (reset,) = events(app, "user.password_reset")
    assert reset["target"] == ("user", zoe) and reset["actor"] == "admin"
    assert "brand-new-pw-2" not in str(events(app))  # never the password itself


def test_refused_change_is_not_audited(app: Flask, as_admin: FlaskClient, admin_id: int) -> None:
    before = len(events(app))
    as_admin.post(f"/users/{admin_id}", data={"role": "annotator", "active": "y"})
    assert len(events(app)) == before


def test_grant_and_revoke_on_the_web(app: Flask, as_admin: FlaskClient, annotator_id: int) -> None:
    ts = make_test_set(app, "Granted")
    as_admin.post(f"/test-sets/{ts}/annotators", data={"annotators": [annotator_id]})
    as_admin.post(f"/test-sets/{ts}/annotators", data={})
    grant, revoke = events(app, "member.grant"), events(app, "member.revoke")
    assert [e["details"] for e in grant] == [
        {"test_set": "Granted", "user_id": annotator_id, "username": "ann"}
    ]
    assert grant[0]["target"] == ("test_set", ts) and grant[0]["actor"] == "admin"
    assert [e["details"]["username"] for e in revoke] == ["ann"]


def test_grant_and_revoke_from_the_cli(
    app: Flask, runner: FlaskCliRunner, annotator_id: int
) -> None:
    make_test_set(app, "Cli set")
    assert runner.invoke(args=["testset", "grant", "Cli set", "ann"]).exit_code == 0
    assert runner.invoke(args=["testset", "revoke", "Cli set", "ann"]).exit_code == 0
    found = [
        (e["action"], e["actor"], e["actor_id"]) for e in events(app) if "member" in e["action"]
    ]
    assert found == [("member.grant", "cli", None), ("member.revoke", "cli", None)]


def test_token_creation_and_revocation(
    app: Flask, as_annotator: FlaskClient, annotator_id: int
) -> None:
    as_annotator.post("/account/api-token/")
    as_annotator.post("/account/api-token/")
    as_annotator.post("/account/api-token/revoke")
    as_annotator.post("/account/api-token/revoke")  # nothing left to revoke: no event
    found = [(e["action"], e["actor"], e["target"], e["details"]) for e in events(app)]
    assert found == [
        ("token.create", "ann", ("user", annotator_id), {"username": "ann", "replaced": False}),
        ("token.create", "ann", ("user", annotator_id), {"username": "ann", "replaced": True}),
        ("token.revoke", "ann", ("user", annotator_id), {"username": "ann"}),
    ]


def test_own_password_change(app: Flask, as_annotator: FlaskClient, annotator_id: int) -> None:
    # Someone who took over a session and changed the password locks the owner out: the trail
    # must say when, as it does for a password an admin sets.
    new = "tulip-ember-quartz-91"
    data = {"pw-current": "wrong-one-entirely", "pw-new": new, "pw-confirm": new, "pw-submit": "y"}
    # A wrong current password is refused and recorded, like a failed login: a taken-over
    # session guessing it shows in the trail. A weak new one is refused without an event.
    as_annotator.post("/account", data=data)
    weak = {**data, "pw-current": PASSWORD, "pw-new": "password123", "pw-confirm": "password123"}
    assert b"too easy to guess" in as_annotator.post("/account", data=weak).data
    assert as_annotator.post("/account", data={**data, "pw-current": PASSWORD}).status_code == 302
    found = [(e["action"], e["actor"], e["target"], e["details"]) for e in events(app)]
    assert found == [
        (
            "user.password_wrong",
            "ann",
            ("user", annotator_id),
            {"username": "ann", "address": "127.0.0.1"},
        ),
        ("user.password_change", "ann", ("user", annotator_id), {"username": "ann"}),
    ]


def test_run_deletion(app: Flask, as_admin: FlaskClient) -> None:
    built = build(app, "With run")
    with app.app_context():
        test_set = db.session.get_one(TestSet, built.test_set_id)
        run = run_service.upload_run(
            test_set, io.BytesIO(trec({"q1": ["d1"]})), "r.trec", "Doomed", None
        )
        run_id, sha = run.id, run.sha256
    response = as_admin.post(f"/test-sets/{built.test_set_id}/runs/{run_id}/delete")
    assert response.status_code == 302
    (deleted,) = events(app, "run.delete")
    assert deleted["target"] == ("run", run_id) and deleted["actor"] == "admin"
    assert deleted["details"] == {
        "test_set_id": built.test_set_id,
        "name": "Doomed",
        "filename": "r.trec",
        "sha256": sha,
    }


def test_event_is_rolled_back_with_its_action(
    app: Flask, admin_id: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Same transaction: when the deletion fails, neither the deletion nor its event remain."""
    from ndcg_labeler.services.runs import catalog

    team = build_runs(app)
    with app.app_context():
        run = db.session.scalars(sa.select(Run).where(Run.test_set_id == team.id)).first()
        run_id = run.id

        def broken(*_args: object, **_kwargs: object) -> None:
            raise RuntimeError("disk full")

        monkeypatch.setattr(catalog, "bump_versions", broken)
        with pytest.raises(RuntimeError):
            run_service.delete_run(run, db.session.get(User, admin_id))
    with app.app_context():
        assert db.session.get(Run, run_id) is not None
    assert events(app, "run.delete") == []


def test_adjudication_set_and_removed(app: Flask, as_admin: FlaskClient) -> None:
    team = build_runs(app)
    query_id, chunk_id = pair_ids(app, team.id, "q1", "d1")
    url = f"/test-sets/{team.id}/review/{query_id}/{chunk_id}"
    page = as_admin.get(url).get_data(as_text=True)
    seen = re.search(r'name="seen" type="hidden" value="([^"]*)"', page)
    assert seen is not None
    form = {"grade": "2", "note": "per guideline 3", "seen": seen.group(1)}
    assert as_admin.post(url, data=form).status_code == 302
    as_admin.post(url + "/remove")
    # (The scenario's runs were uploaded first: their run.upload events are not this test's.)
    found = [
        (e["action"], e["target"], e["details"])
        for e in events(app)
        if e["action"].startswith("adjudication.")
    ]
    common = {"qid": "q1", "docid": "d1", "query_id": query_id, "chunk_id": chunk_id}
    assert found == [
        (
            "adjudication.set",
            ("test_set", team.id),
            {**common, "old_grade": None, "new_grade": 2, "note": "per guideline 3"},
        ),
        (
            "adjudication.remove",
            ("test_set", team.id),
            {**common, "old_grade": 2, "new_grade": None, "note": ""},
        ),
    ]


def _settings(**change: str) -> dict[str, str]:
    data = {
        "name": "Set",
        "guidelines": "",
        "aggregation": "median",
        "relevance_threshold": "1",
        "judgments_per_pair": "1",
        "disagreement_threshold": "2",
    }
    for grade, name in enumerate(["Irrelevant", "Related", "Relevant", "Perfect"]):
        data[f"grades-{grade}-name"] = name
        data[f"grades-{grade}-definition"] = "d"
    data.update(change)
    return data


def test_settings_changes_list_old_and_new(app: Flask, as_admin: FlaskClient) -> None:
    ts = make_test_set(app, "Set")
    assert as_admin.post(f"/test-sets/{ts}/settings", data=_settings()).status_code == 302
    events_before = len(events(app, "testset.settings"))  # grade definitions changed: one event
    assert events_before == 1
    as_admin.post(f"/test-sets/{ts}/settings", data=_settings())  # no change: no event
    assert len(events(app, "testset.settings")) == 1
    as_admin.post(
        f"/test-sets/{ts}/settings", data=_settings(judgments_per_pair="3", aggregation="max")
    )
    last = events(app, "testset.settings")[-1]
    assert last["target"] == ("test_set", ts) and last["actor"] == "admin"
    assert last["details"] == {
        "name": "Set",
        "changes": {
            "judgments_per_pair": {"old": 1, "new": 3},
            "aggregation": {"old": "median", "new": "max"},
        },
    }


def test_a_login_is_audited_as_a_sign_in_only(app: Flask, client: FlaskClient) -> None:
    """A sanity check of the fixture password: logging in is a sign-in, no admin action."""
    from tests.factory import make_user

    make_user(app, "admin", "admin")
    client.post("/login", data={"username": "admin", "password": PASSWORD})
    assert events(app) == []
    assert [e["action"] for e in events(app, signing=True)] == ["login.password"]


def test_run_uploads_are_recorded_from_the_web_and_the_cli(
    app: Flask, as_admin: FlaskClient, runner: FlaskCliRunner, tmp_path
) -> None:
    built = build(app, "Uploads")
    body = trec({"q1": ["d1", "d2"], "q2": ["d3"]})
    response = as_admin.post(
        f"/test-sets/{built.test_set_id}/runs/upload",
        data={"file": (io.BytesIO(body), "bm25.trec"), "name": "bm25"},
        content_type="multipart/form-data",
    )
    assert response.status_code in (302, 303), response.get_data(as_text=True)[:500]
    path = tmp_path / "dense.trec"
    path.write_bytes(body)
    result = runner.invoke(args=["run", "upload", "Uploads", str(path), "--name", "dense"])
    assert result.exit_code == 0, result.output
    with app.app_context():
        runs = {r.name: r for r in db.session.scalars(sa.select(Run))}
        ids = {name: (r.id, r.sha256) for name, r in runs.items()}
    web, cli = events(app, "run.upload")
    assert (web["actor"], web["target"]) == ("admin", ("run", ids["bm25"][0]))
    assert (cli["actor"], cli["actor_id"], cli["target"]) == ("cli", None, ("run", ids["dense"][0]))
    assert web["details"] == {
        "test_set_id": built.test_set_id,
        "name": "bm25",
        "filename": "bm25.trec",
        "sha256": ids["bm25"][1],
        "format": "trec",
        "queries": 2,
        "entries": 3,
    }


def test_a_refused_upload_leaves_no_event(app: Flask) -> None:
    built = build(app, "Refused")
    with app.app_context():
        test_set = db.session.get_one(TestSet, built.test_set_id)
        with pytest.raises(ServiceError):
            run_service.upload_run(test_set, io.BytesIO(trec({"zz": ["d1"]})), "r.trec", "r", None)
    assert events(app, "run.upload") == []


def test_judge_creation_is_recorded_without_the_key(
    app: Flask, as_admin: FlaskClient, runner: FlaskCliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JUDGE_API_KEY", "sk-secret-value")
    response = as_admin.post(
        "/judges/",
        data={
            "name": "gpt",
            "base_url": "http://127.0.0.1:9/v1",
            "model": "m",
            "api_key_env": "JUDGE_API_KEY",
            "temperature": "0",
            "max_tokens": "16",
            "timeout": "5",
            "concurrency": "1",
            "requests_per_minute": "0",
        },
    )
    assert response.status_code == 302, response.get_data(as_text=True)[:500]
    result = runner.invoke(
        args=["judges", "add", "local", "--base-url", "http://127.0.0.1:9/v1", "--model", "m"]
    )
    assert result.exit_code == 0, result.output
    web, cli = events(app, "judge.create")
    assert web["actor"] == "admin" and cli["actor"] == "cli"
    assert web["details"] == {
        "name": "gpt",
        "base_url": "http://127.0.0.1:9/v1",
        "model": "m",
        "api_key_env": "JUDGE_API_KEY",
        "few_shot": 0,
    }
    assert "sk-secret-value" not in str(events(app))
