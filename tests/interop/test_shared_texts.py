"""Two qids that share one query text, exported in a peer's shape, which names queries by text.

Quepid keeps one query per text in a case (its ratings import finds or creates the query by its
text, and stores each row as a rating of it): the export writes each (text, docid) once, and a
text alone only when none of its queries has a grade. Grades the two queries give one docid
differently cannot be one rating: the export is refused, naming them.
"""

from __future__ import annotations

import json
from pathlib import Path

import sqlalchemy as sa
from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Query, TestSet, User
from ndcg_labeler.services import interop, runs
from ndcg_labeler.services.accounts import create_token

QUERIES = "q1\tred dress\nq2\tred  dress\nq3\tgreen hat\nq4\tgreen hat\nq5\tblue shoes\n"
# q1 and q2 share "red dress" (whitespace folds) and agree on d2; q3 and q4 have no grade.
QRELS = "q1 0 d1 3\nq1 0 d2 0\nq2 0 d2 0\nq2 0 d3 2\nq5 0 d4 1\n"


def _ok(result) -> str:
    assert result.exit_code == 0, result.output + (result.stderr or "")
    return result.stdout


def _set_up(runner: FlaskCliRunner, tmp_path: Path, name: str, qrels: str) -> None:
    (tmp_path / "q.tsv").write_text(QUERIES)
    (tmp_path / "r.qrels").write_text(qrels)
    _ok(runner.invoke(args=["testset", "create", name]))
    args = ["testset", "import", name, "--queries", str(tmp_path / "q.tsv")]
    _ok(runner.invoke(args=[*args, "--qrels", str(tmp_path / "r.qrels")]))


def _triples(app: Flask, name: str) -> set[tuple[str, str | None, int | None]]:
    with app.app_context():
        test_set = db.session.scalar(sa.select(TestSet).where(TestSet.name == name))
        return set(interop.judgment_rows(test_set))


def _query_count(app: Flask, name: str) -> int:
    with app.app_context():
        stmt = sa.select(sa.func.count()).select_from(Query).join(TestSet)
        return db.session.scalar(stmt.where(TestSet.name == name))


def test_a_shared_text_is_one_query_in_each_export_and_round_trips(
    app: Flask, runner: FlaskCliRunner, tmp_path: Path
) -> None:
    _set_up(runner, tmp_path, "A", QRELS)
    out = tmp_path / "quepid.csv"
    _ok(runner.invoke(args=["testset", "export", "A", "--format", "quepid", "-o", str(out)]))
    # By hand: q1's d1, d2 then q2's d3 (its d2 is q1's, agreeing), "green hat" once, alone.
    assert out.read_text().splitlines() == [
        "query,docid,rating",
        "red dress,d1,3",
        "red dress,d2,0",
        "red dress,d3,2",
        "green hat,,",
        "blue shoes,d4,1",
    ]
    srw = tmp_path / "srw.json"
    _ok(runner.invoke(args=["testset", "export", "A", "--format", "srw-judgments", "-o", str(srw)]))
    entries = json.loads(srw.read_text())["judgmentRatings"]
    assert [(e["query"], [r["docId"] for r in e["ratings"]]) for e in entries] == [
        ("red dress", ["d1", "d2", "d3"]),
        ("green hat", []),
        ("blue shoes", ["d4"]),
    ]
    expected = {
        ("red dress", "d1", 3),
        ("red dress", "d2", 0),
        ("red dress", "d3", 2),
        ("green hat", None, None),
        ("blue shoes", "d4", 1),
    }
    for fmt, file in (("quepid", out), ("srw-judgments", srw)):
        name = f"B-{fmt}"
        _ok(runner.invoke(args=["testset", "create", name]))
        _ok(runner.invoke(args=["testset", "import", name, f"--{fmt}", str(file)]))
        assert _triples(app, name) == expected, fmt
        assert _query_count(app, name) == 3, fmt  # one query per text, as in Quepid


CONFLICT = "queries q1 and q2 share the text 'red dress' and grade docid 'd2' differently (0 and 1)"


def test_a_shared_text_grading_one_docid_two_ways_is_refused_everywhere(
    app: Flask,
    runner: FlaskCliRunner,
    client: FlaskClient,
    as_admin: FlaskClient,
    admin_id: int,
    tmp_path: Path,
) -> None:
    _set_up(runner, tmp_path, "A", QRELS.replace("q2 0 d2 0", "q2 0 d2 1"))
    for fmt in ("quepid", "srw-judgments"):
        refused = runner.invoke(args=["testset", "export", "A", "--format", fmt])
        assert refused.exit_code == 1 and CONFLICT in refused.stderr, refused.stderr
        assert "give one of them another text" in refused.stderr
    with app.app_context():
        set_id = db.session.scalar(sa.select(TestSet.id).where(TestSet.name == "A"))
        token = create_token(db.session.get_one(User, admin_id))
    api = client.get(
        f"/api/testsets/{set_id}/export?format=quepid",
        headers={"Authorization": f"Bearer {token}"},
    )
    assert api.status_code == 400 and CONFLICT in api.json["detail"]
    page = as_admin.get(f"/test-sets/{set_id}/dashboard/export/quepid-judgments.csv")
    assert page.status_code == 400
    assert CONFLICT.replace("'", "&#39;") in page.get_data(as_text=True)
    # The query set holds texts only: nothing to disagree on, one entry per text.
    queries = as_admin.get(f"/test-sets/{set_id}/dashboard/export/srw-query-set.json")
    texts = [q["queryText"] for q in json.loads(queries.data)["querySetQueries"]]
    assert texts == ["red dress", "green hat", "blue shoes"]


def test_a_shared_text_ranked_once_is_one_query_of_the_snapshot(
    app: Flask,
    runner: FlaskCliRunner,
    client: FlaskClient,
    as_admin: FlaskClient,
    admin_id: int,
    tmp_path: Path,
) -> None:
    _set_up(runner, tmp_path, "A", QRELS)
    # q1 and q2 ("red dress") rank alike; q3 ("green hat") is ranked, q4 is not.
    same = "q1 Q0 d2 1 9 r\nq1 Q0 d1 2 8 r\nq2 Q0 d2 1 9 r\nq2 Q0 d1 2 8 r\nq3 Q0 d5 1 1 r\n"
    (tmp_path / "same.trec").write_text(same)
    _ok(runner.invoke(args=["run", "upload", "A", str(tmp_path / "same.trec"), "--name", "s"]))
    out = tmp_path / "snap.csv"
    _ok(runner.invoke(args=["run", "export", "A", "s", "-o", str(out)]))
    rows = [line.split(",")[3:6] for line in out.read_text().splitlines()[1:]]
    # By hand: "red dress" once (Quepid groups a snapshot's rows by text), then "green hat".
    assert rows == [["red dress", "d2", "1"], ["red dress", "d1", "2"], ["green hat", "d5", "1"]]
    # Into a set with one query per text, as Quepid would hold them: the same ranking.
    judgments = tmp_path / "j.csv"
    _ok(runner.invoke(args=["testset", "export", "A", "--format", "quepid", "-o", str(judgments)]))
    _ok(runner.invoke(args=["testset", "create", "B"]))
    _ok(runner.invoke(args=["testset", "import", "B", "--quepid", str(judgments)]))
    args = ["run", "upload", "B", str(out), "--format", "quepid-snapshot", "--name", "s"]
    _ok(runner.invoke(args=args))
    with app.app_context():
        test_set = db.session.scalar(sa.select(TestSet).where(TestSet.name == "B"))
        lists = runs.ranked_lists(runs.require_run(test_set, "s"))
    assert {q: [d for d, _ in v] for q, v in lists.items()} == {
        interop.text_qid("red dress"): ["d2", "d1"],
        interop.text_qid("green hat"): ["d5"],
    }
    # Ranked differently, the two cannot be one query of a snapshot: refused, saying why.
    (tmp_path / "other.trec").write_text(same.replace("q2 Q0 d2 1 9", "q2 Q0 d2 3 7"))
    _ok(runner.invoke(args=["run", "upload", "A", str(tmp_path / "other.trec"), "--name", "o"]))
    said = "queries q1 and q2 share the text 'red dress' and run o ranks them differently"
    refused = runner.invoke(args=["run", "export", "A", "o"])
    assert refused.exit_code == 1 and said in refused.stderr, refused.stderr
    with app.app_context():
        test_set = db.session.scalar(sa.select(TestSet).where(TestSet.name == "A"))
        set_id, run_id = test_set.id, runs.require_run(test_set, "o").id
        token = create_token(db.session.get_one(User, admin_id))
    api = client.get(
        f"/api/testsets/{set_id}/runs/o/export", headers={"Authorization": f"Bearer {token}"}
    )
    assert api.status_code == 400 and said in api.json["detail"]
    page = as_admin.get(f"/test-sets/{set_id}/dashboard/export/runs/{run_id}/quepid-snapshot.csv")
    assert page.status_code == 400 and said.replace("'", "&#39;") in page.get_data(as_text=True)
