"""Creating a test set and importing its files are in the audit trail: what, how many, by whom,
written in the transaction of the change (a refused import leaves no event)."""

from __future__ import annotations

import io
from pathlib import Path

import sqlalchemy as sa
from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner

from ndcg_labeler.extensions import db
from ndcg_labeler.models import TestSet, User
from ndcg_labeler.services.accounts import create_token
from tests.audit.test_audit_actions import events
from tests.factory import make_test_set

QUERIES = b"qid,text\nq1,first query\nq2,second query\n"
CORPUS = b"docid,text\nd1,one\nd2,two\nd3,three\n"
QRELS = b"q1 0 d1 2\nq2 0 d2 1\nq2 0 d3 0\n"
POOL = b"qid,docid\nq1,d2\n"


def _imports(app: Flask) -> list[tuple[str, str, dict]]:
    """(action, actor, details) of the import events, oldest first."""
    return [
        (e["action"], e["actor"], e["details"])
        for e in events(app)
        if e["action"].startswith("import.")
    ]


def _set_id(app: Flask, name: str) -> int:
    with app.app_context():
        return db.session.scalars(sa.select(TestSet.id).where(TestSet.name == name)).one()


def test_creating_a_test_set_on_the_page_and_the_cli(
    app: Flask, as_admin: FlaskClient, admin_id: int, runner: FlaskCliRunner
) -> None:
    response = as_admin.post("/test-sets/new", data={"name": "Made here", "scale": "4"})
    assert response.status_code == 302
    assert runner.invoke(args=["testset", "create", "Made there"]).exit_code == 0
    assert (
        as_admin.post("/test-sets/new", data={"name": "Made here", "scale": "3"}).status_code == 200
    )
    made = [
        (e["actor"], e["actor_id"], e["target"], e["details"])
        for e in events(app, "testset.create")
    ]
    assert made == [
        (
            "admin",
            admin_id,
            ("test_set", _set_id(app, "Made here")),
            {"name": "Made here", "scale_max": 4},
        ),
        (
            "cli",
            None,
            ("test_set", _set_id(app, "Made there")),
            {"name": "Made there", "scale_max": 3},
        ),
    ]


def test_a_page_import_records_each_file_with_its_counts(
    app: Flask, as_admin: FlaskClient, admin_id: int
) -> None:
    ts = make_test_set(app, "Imported")
    data = {
        "queries": (io.BytesIO(QUERIES), "queries.csv"),
        "corpus": (io.BytesIO(CORPUS), "corpus.csv"),
        "qrels": (io.BytesIO(QRELS), "gold.qrels"),
        "source": "gold",
    }
    response = as_admin.post(
        f"/test-sets/{ts}/import", data=data, content_type="multipart/form-data"
    )
    assert response.status_code == 200 and "nothing was imported" not in response.get_data(
        as_text=True
    )
    found = [e for e in events(app) if e["action"].startswith("import.")]
    assert {e["target"] for e in found} == {("test_set", ts)}
    assert _imports(app) == [
        (
            "import.queries",
            "admin",
            {
                "test_set": "Imported",
                "file": "queries.csv",
                "rows": 2,
                "created": 2,
                "updated": 0,
                "unchanged": 0,
            },
        ),
        (
            "import.corpus",
            "admin",
            {
                "test_set": "Imported",
                "file": "corpus.csv",
                "rows": 3,
                "created": 3,
                "updated": 0,
                "unchanged": 0,
            },
        ),
        (
            "import.qrels",
            "admin",
            {
                "test_set": "Imported",
                "file": "gold.qrels",
                "source": "gold",
                "rows": 3,
                "created": 3,
                "updated": 0,
                "unchanged": 0,
            },
        ),
    ]
    # The same files again: nothing new, and the trail says so.
    data = {"queries": (io.BytesIO(QUERIES), "queries.csv")}
    as_admin.post(f"/test-sets/{ts}/import", data=data, content_type="multipart/form-data")
    again = {"rows": 2, "created": 0, "updated": 0, "unchanged": 2}
    assert _imports(app)[-1][2] == {"test_set": "Imported", "file": "queries.csv", **again}


def test_a_refused_import_leaves_no_event(app: Flask, as_admin: FlaskClient, admin_id: int) -> None:
    ts = make_test_set(app, "Refused")
    data = {
        "queries": (io.BytesIO(QUERIES), "queries.csv"),
        "qrels": (io.BytesIO(b"q1 0 d1 2\nq9 0 d1 1\n"), "bad.qrels"),  # q9: no such query
    }
    response = as_admin.post(
        f"/test-sets/{ts}/import", data=data, content_type="multipart/form-data"
    )
    assert "nothing was imported" in response.get_data(as_text=True)
    assert _imports(app) == []


def test_the_cli_and_the_api_record_their_imports(
    app: Flask, client: FlaskClient, runner: FlaskCliRunner, admin_id: int, tmp_path: Path
) -> None:
    ts = make_test_set(app, "Both ways")
    (tmp_path / "q.csv").write_bytes(QUERIES)
    (tmp_path / "pool.csv").write_bytes(POOL)
    done = runner.invoke(
        args=[
            "testset",
            "import",
            "Both ways",
            "--queries",
            str(tmp_path / "q.csv"),
            "--pool",
            str(tmp_path / "pool.csv"),
        ]
    )
    assert done.exit_code == 0, done.output
    with app.app_context():
        token = create_token(db.session.get_one(User, admin_id))
    response = client.post(
        f"/api/testsets/{ts}/import",
        data={"corpus": (io.BytesIO(CORPUS), "chunks.csv")},
        headers={"Authorization": f"Bearer {token}"},
        content_type="multipart/form-data",
    )
    assert response.status_code == 201, response.get_data(as_text=True)
    assert [(a, who, d["file"], d["rows"]) for a, who, d in _imports(app)] == [
        ("import.queries", "cli", "q.csv", 2),
        ("import.pool", "cli", "pool.csv", 1),
        ("import.corpus", "admin", "chunks.csv", 3),
    ]
