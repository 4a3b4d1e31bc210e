"""The /audit page (admins only, filters, one pager), its CSV/JSON downloads and the CLI export."""

from __future__ import annotations

import csv
import io
import json

import pytest
import sqlalchemy as sa
from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner

from ndcg_labeler.extensions import db
from ndcg_labeler.models import AuditEvent, User
from ndcg_labeler.services import audit
from ndcg_labeler.services.audit.listing import PER_PAGE


@pytest.fixture
def as_admin(app: Flask, as_admin: FlaskClient) -> FlaskClient:
    """The admin's client, its own sign-in left out of the trail these tests count."""
    with app.app_context():
        db.session.execute(sa.delete(AuditEvent))
        db.session.commit()
    return as_admin


def _seed(app: Flask, admin_id: int, count: int = 3, *, username: str = "ann") -> None:
    """`count` role changes by the admin and one CLI backup-like event, through the helper."""
    with app.app_context():
        admin = db.session.get_one(User, admin_id)
        for i in range(count):
            audit.record(admin, "user.role", "user", 99, username=username, old="a", new=str(i))
        audit.record(None, "member.grant", "test_set", 7, test_set="T", username="=HYPERLINK(1)")
        db.session.commit()


def test_audit_page_is_admin_only(client: FlaskClient, as_annotator: FlaskClient) -> None:
    for url in ("/audit/", "/audit/audit.csv", "/audit/audit.json"):
        assert as_annotator.get(url).status_code == 403


def test_audit_page_lists_newest_first_and_filters(
    app: Flask, as_admin: FlaskClient, admin_id: int
) -> None:
    _seed(app, admin_id, username="<b>ann</b>")
    page = as_admin.get("/audit/").get_data(as_text=True)
    assert "4 events" in page
    assert page.index("<td>member.grant</td>") < page.index("<td>user.role</td>")  # newest first
    only_roles = as_admin.get("/audit/?action=user.role").get_data(as_text=True)
    assert "3 events" in only_roles
    by_cli = as_admin.get("/audit/?user=cli").get_data(as_text=True)
    assert "1 event" in by_cli and "username: =HYPERLINK(1)" in by_cli
    assert "Audit</a>" in page  # in the admin's menu
    assert "username: &lt;b&gt;ann&lt;/b&gt;" in page and "<b>ann" not in page


def test_audit_page_uses_the_pager(app: Flask, as_admin: FlaskClient, admin_id: int) -> None:
    _seed(app, admin_id, count=PER_PAGE + 5)
    first = as_admin.get("/audit/?action=user.role").get_data(as_text=True)
    assert "Page 1 of 2" in first
    assert "/audit/?action=user.role&amp;page=2" in first
    second = as_admin.get("/audit/?action=user.role&page=2").get_data(as_text=True)
    assert second.count("<td>user.role</td>") == 5


def test_csv_export_defuses_formulas(app: Flask, as_admin: FlaskClient, admin_id: int) -> None:
    _seed(app, admin_id, count=1, username="@SUM(A1)")
    response = as_admin.get("/audit/audit.csv")
    assert response.headers["Content-Disposition"] == 'attachment; filename="audit.csv"'
    rows = list(csv.DictReader(io.StringIO(response.get_data(as_text=True))))
    assert [r["action"] for r in rows] == ["member.grant", "user.role"]
    assert rows[1]["actor"] == "admin" and rows[0]["actor"] == "cli"
    # The details cell is JSON text starting with "{", so it is safe as it is; a cell that
    # starts like a formula would get a leading apostrophe (formats.safe_cell).
    assert json.loads(rows[1]["details"])["username"] == "@SUM(A1)"
    with app.app_context():
        admin = db.session.get_one(User, admin_id)
        admin.username = "=cmd|'/c calc'!A0"
        audit.record(admin, "token.create", "user", admin_id, username="x", replaced=False)
        db.session.commit()
    rows = list(
        csv.DictReader(io.StringIO(as_admin.get("/audit/audit.csv").get_data(as_text=True)))
    )
    assert rows[0]["actor"] == "'=cmd|'/c calc'!A0"


def test_json_export_and_filter(app: Flask, as_admin: FlaskClient, admin_id: int) -> None:
    _seed(app, admin_id, count=2)
    data = as_admin.get("/audit/audit.json?action=member.grant").get_json()
    assert len(data) == 1
    assert data[0]["actor"] == "cli" and data[0]["target_type"] == "test_set"
    assert data[0]["details"] == {"test_set": "T", "username": "=HYPERLINK(1)"}  # verbatim
    assert data[0]["created_at"].endswith("+00:00")


def test_cli_export_csv_and_json(app: Flask, runner: FlaskCliRunner, admin_id: int) -> None:
    _seed(app, admin_id, count=2)
    result = runner.invoke(args=["audit", "export"])
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader(io.StringIO(result.output)))
    assert [r["action"] for r in rows] == ["member.grant", "user.role", "user.role"]
    result = runner.invoke(args=["audit", "export", "--json", "--action", "user.role"])
    assert result.exit_code == 0
    assert [e["details"]["new"] for e in json.loads(result.output)] == ["1", "0"]


def test_unknown_action_is_refused(app: Flask, admin_id: int) -> None:
    import pytest

    with app.app_context(), pytest.raises(ValueError, match="unknown audit action"):
        audit.record(None, "user.typo", "user", 1)


def test_cli_export_refuses_an_action_the_trail_does_not_know(
    app: Flask, runner: FlaskCliRunner, admin_id: int
) -> None:
    # A typo used to print the header alone, as if nobody had ever changed a role.
    _seed(app, admin_id, count=2)
    result = runner.invoke(args=["audit", "export", "--action", "user.roles"])
    assert result.exit_code == 1
    message = result.output.strip()
    assert message.startswith("Error: the audit trail has no action 'user.roles' (did you mean ")
    assert "user.role" in message and "user.create, user.role, user.active" in message


def _dated(app: Flask, admin_id: int) -> None:
    """One role change on each of 1, 2 and 3 March 2026 (UTC), at 23:30."""
    from datetime import UTC, datetime

    with app.app_context():
        admin = db.session.get_one(User, admin_id)
        for day in (1, 2, 3):
            event = audit.record(
                admin, "user.role", "user", 9, username="ann", old="a", new=str(day)
            )
            event.created_at = datetime(2026, 3, day, 23, 30, tzinfo=UTC)
        db.session.commit()


def test_the_trail_is_cut_to_a_span_of_days(
    app: Flask, as_admin: FlaskClient, runner: FlaskCliRunner, admin_id: int
) -> None:
    # An incident between two dates: the trail of those days, not every event since install.
    _dated(app, admin_id)
    result = runner.invoke(
        args=["audit", "export", "--json", "--since", "2026-03-02", "--until", "2026-03-02"]
    )
    assert result.exit_code == 0, result.output
    assert [e["details"]["new"] for e in json.loads(result.output)] == ["2"]
    result = runner.invoke(args=["audit", "export", "--json", "--since", "2026-03-02"])
    assert [e["details"]["new"] for e in json.loads(result.output)] == ["3", "2"]
    page = as_admin.get("/audit/?since=2026-03-02&until=2026-03-02").get_data(as_text=True)
    assert "1 event" in page and 'value="2026-03-02"' in page
    assert "/audit/audit.csv?since=2026-03-02&amp;until=2026-03-02" in page
    data = as_admin.get("/audit/audit.json?until=2026-03-01").get_json()
    assert [e["details"]["new"] for e in data] == ["1"]
    bad = as_admin.get("/audit/?since=2026-13-01").get_data(as_text=True)
    assert "“2026-13-01” is not a date (YYYY-MM-DD): the trail is shown without it." in bad
    assert "3 events" in bad


def test_an_unknown_action_in_the_address_is_said(
    app: Flask, as_admin: FlaskClient, admin_id: int
) -> None:
    # A typo in a bookmarked address showed every event as if they were the filter's.
    _dated(app, admin_id)
    page = as_admin.get("/audit/?action=user.roles").get_data(as_text=True)
    assert "“user.roles” is not an action of the trail: every action is shown." in page
    assert "3 events" in page
    fine = as_admin.get("/audit/?action=user.role").get_data(as_text=True)
    assert "is not an action of the trail" not in fine
    hostile = as_admin.get("/audit/?action=<b>x</b>").get_data(as_text=True)
    assert "“&lt;b&gt;x&lt;/b&gt;” is not an action" in hostile


def test_downloads_are_streamed_a_batch_at_a_time(
    app: Flask, as_admin: FlaskClient, admin_id: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A year of sign-ins is ~500,000 events: built as one string, the JSON download took
    # 1.5 GB of the worker. Rows now leave in batches while the next are read.
    from ndcg_labeler.services.audit import listing

    monkeypatch.setattr(listing, "BATCH", 2, raising=False)
    _seed(app, admin_id, count=4)  # 5 events: 3 batches
    for url in ("/audit/audit.csv", "/audit/audit.json"):
        response = as_admin.get(url, buffered=False)
        assert response.is_streamed
        pieces = list(response.response)
        assert len(pieces) >= 3, url
    text = as_admin.get("/audit/audit.csv").get_data(as_text=True)
    assert next(r["details"] for r in csv.DictReader(io.StringIO(text))) == (
        '{"test_set": "T", "username": "=HYPERLINK(1)"}'
    )
    data = as_admin.get("/audit/audit.json").get_json()
    assert [e["action"] for e in data] == ["member.grant"] + ["user.role"] * 4
    assert [e["details"].get("new") for e in data] == [None, "3", "2", "1", "0"]


def test_the_json_download_reads_as_before(
    app: Flask, as_admin: FlaskClient, admin_id: int
) -> None:
    """Streamed, the array is byte for byte what json.dumps(indent=1) of the list gives."""
    _seed(app, admin_id, count=2)
    text = as_admin.get("/audit/audit.json").get_data(as_text=True)
    assert text == json.dumps(json.loads(text), ensure_ascii=False, indent=1)
    with app.app_context():
        db.session.execute(sa.delete(AuditEvent))
        db.session.commit()
    assert as_admin.get("/audit/audit.json").get_data(as_text=True) == "[]"


def test_cli_export_writes_as_it_reads(
    app: Flask, runner: FlaskCliRunner, admin_id: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ndcg_labeler.services.audit import listing

    monkeypatch.setattr(listing, "BATCH", 2, raising=False)
    _seed(app, admin_id, count=4)
    written: list[str] = []
    real_echo = __import__("click").echo

    def echo(message: str | None = None, **kwargs: object) -> None:
        written.append(message or "")
        real_echo(message, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr("ndcg_labeler.cli.maintenance.click.echo", echo)
    result = runner.invoke(args=["audit", "export", "--json"])
    assert result.exit_code == 0, result.output
    assert len([w for w in written if w]) >= 3
    news = [e["details"].get("new") for e in json.loads(result.output)]
    assert news == [None, "3", "2", "1", "0"]
    assert result.output.endswith("]\n")
    result = runner.invoke(args=["audit", "export"])
    rows = list(csv.DictReader(io.StringIO(result.output)))
    assert [r["action"] for r in rows] == ["member.grant"] + ["user.role"] * 4


def test_actor_names_are_each_name_once_in_order(app: Flask, admin_id: int) -> None:
    with app.app_context():
        db.session.execute(sa.delete(AuditEvent))
        assert audit.actor_names() == []
        for name in ("zed", "cli", "ann", "zed", "(anonymous)", "ann", "bob"):
            event = audit.record(None, "logout", "user", None)
            event.actor_name = name
        db.session.commit()
        assert audit.actor_names() == ["(anonymous)", "ann", "bob", "cli", "zed"]
