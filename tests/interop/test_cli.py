"""`flask testset import --quepid/--srw-*`, `testset export`, `run upload/export` for Quepid.

Each export is imported into a new test set and must give back the same data: the same query
texts, the same (text, docid, grade) triples, the same ranking per query.
"""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa
from flask import Flask
from flask.testing import FlaskCliRunner

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Judgment, Query, TestSet
from ndcg_labeler.services import interop, runs

QUEPID = 'query,docid,rating\nred dress,d1,3\nred dress,d2,0\n"blue  shoes",d3,2\ngreen hat,,\n'


def _ok(result) -> str:
    assert result.exit_code == 0, result.output + (result.stderr or "")
    return result.stdout


def _triples(app: Flask, name: str) -> set[tuple[str, str | None, int | None]]:
    with app.app_context():
        test_set = db.session.scalar(sa.select(TestSet).where(TestSet.name == name))
        return set(interop.judgment_rows(test_set))


def _texts(app: Flask, name: str) -> set[str]:
    with app.app_context():
        rows = db.session.scalars(sa.select(Query.text).join(TestSet).where(TestSet.name == name))
        return set(rows)


def test_quepid_import_maps_texts_and_round_trips(
    app: Flask, runner: FlaskCliRunner, tmp_path: Path
) -> None:
    file = tmp_path / "case_1_judgements.csv"
    file.write_text(QUEPID)
    _ok(runner.invoke(args=["testset", "create", "A"]))
    out = _ok(runner.invoke(args=["testset", "import", "A", "--quepid", str(file)]))
    assert "queries: 3 created" in out and "judgments of source 'case_1_judgements.csv'" in out
    expected = {
        ("red dress", "d1", 3),
        ("red dress", "d2", 0),
        ("blue shoes", "d3", 2),  # whitespace runs fold: Quepid's text is the query
        ("green hat", None, None),
    }
    assert _triples(app, "A") == expected
    with app.app_context():
        qid = db.session.scalar(sa.select(Query.qid).where(Query.text == "red dress"))
    assert qid == interop.text_qid("red dress") and qid.startswith("t-")
    # Again: nothing changes (stable qids, idempotent upserts).
    again = _ok(runner.invoke(args=["testset", "import", "A", "--quepid", str(file)]))
    assert "queries:" not in again  # no new text, so no queries to write
    assert "judgments of source 'case_1_judgements.csv': 0 created, 0 updated, 3 unchanged" in (
        again
    )
    # Export, import into a new set: the same triples.
    exported = tmp_path / "out.csv"
    _ok(runner.invoke(args=["testset", "export", "A", "--format", "quepid", "-o", str(exported)]))
    assert exported.read_text().splitlines()[0] == "query,docid,rating"
    _ok(runner.invoke(args=["testset", "create", "B"]))
    _ok(runner.invoke(args=["testset", "import", "B", "--quepid", str(exported)]))
    assert _triples(app, "B") == expected


def test_rating_map_scale_and_pairs(app: Flask, runner: FlaskCliRunner, tmp_path: Path) -> None:
    file = tmp_path / "ten.csv"
    # 0–10 onto 0–3: floor(r * 3 / 10 + 0.5): 0→0, 1→0, 2→1, 5→2 (1.5 rounds up), 8→2, 10→3.
    file.write_text("query,docid,rating\nq,a,0\nq,b,1\nq,c,2\nq,d,5\nq,e,8\nq,f,10\n")
    _ok(runner.invoke(args=["testset", "create", "A"]))
    refused = runner.invoke(args=["testset", "import", "A", "--quepid", str(file)])
    assert refused.exit_code == 1
    assert "ten.csv:5: docid 'd': rating 5 is not a grade of this test set's scale 0–3" in (
        refused.stderr
    )
    assert "rating map" in refused.stderr
    assert _texts(app, "A") == set()  # all or nothing: not even the query
    _ok(
        runner.invoke(
            args=["testset", "import", "A", "--quepid", str(file), "--rating-map", "0-10"]
        )
    )
    grades = {d: g for _, d, g in _triples(app, "A")}
    assert grades == {"a": 0, "b": 0, "c": 1, "d": 2, "e": 2, "f": 3}
    four = tmp_path / "four.csv"
    four.write_text("query,docid,rating\nq,a,1\nq,b,4\n")
    _ok(runner.invoke(args=["testset", "create", "C"]))
    args = ["testset", "import", "C", "--quepid", str(four), "--rating-map", "1=0,2=1,3=2"]
    bad = runner.invoke(args=args)
    assert "four.csv:3: docid 'b': rating 4 is not in the rating map (it lists 1, 2, 3)" in (
        bad.stderr
    )
    args[-1] = "1=0,2=1,3=2,4=3"
    _ok(runner.invoke(args=args))
    assert {d: g for _, d, g in _triples(app, "C")} == {"a": 0, "b": 3}


def test_a_bad_line_imports_nothing(app: Flask, runner: FlaskCliRunner, tmp_path: Path) -> None:
    file = tmp_path / "bad.csv"
    file.write_text("query,docid,rating\nq1,a,1\nq2,b,x\n")
    _ok(runner.invoke(args=["testset", "create", "A"]))
    result = runner.invoke(args=["testset", "import", "A", "--quepid", str(file)])
    assert result.exit_code == 1 and "bad.csv:3: rating 'x' is not a number" in result.stderr
    with app.app_context():
        assert db.session.scalar(sa.select(sa.func.count()).select_from(Judgment)) == 0
    assert _texts(app, "A") == set()


def test_peer_files_go_alone(app: Flask, runner: FlaskCliRunner, tmp_path: Path) -> None:
    file = tmp_path / "j.csv"
    file.write_text(QUEPID)
    _ok(runner.invoke(args=["testset", "create", "A"]))
    args = ["testset", "import", "A", "--quepid", str(file), "--srw-queries", str(file)]
    result = runner.invoke(args=args)
    assert result.exit_code == 1 and "on its own" in result.stderr


SRW = """{
  "name": "Imported", "description": "x", "type": "IMPORT_JUDGMENT",
  "judgmentRatings": [
    {"query": "red dress", "ratings": [{"docId": "d1", "rating": "3.000"},
                                      {"docId": "d2", "rating": 1}]},
    {"query": "tv", "ratings": []}
  ]
}"""


def test_srw_judgments_and_query_sets_round_trip(
    app: Flask, runner: FlaskCliRunner, tmp_path: Path
) -> None:
    judgments = tmp_path / "srw.json"
    judgments.write_text(SRW)
    _ok(runner.invoke(args=["testset", "create", "A"]))
    _ok(runner.invoke(args=["testset", "import", "A", "--srw-judgments", str(judgments)]))
    expected = {("red dress", "d1", 3), ("red dress", "d2", 1), ("tv", None, None)}
    assert _triples(app, "A") == expected
    queries = tmp_path / "qs.jsonl"
    queries.write_text('{"queryText": "led tv"}\n{"queryText": "tv"}\n')
    _ok(runner.invoke(args=["testset", "import", "A", "--srw-queries", str(queries)]))
    assert _texts(app, "A") == {"red dress", "tv", "led tv"}
    again = _ok(runner.invoke(args=["testset", "import", "A", "--srw-queries", str(queries)]))
    assert again == "nothing new: every query is in the test set already, and no ratings\n"
    for fmt in ("srw-judgments", "srw-queries"):
        out = tmp_path / f"{fmt}.json"
        _ok(runner.invoke(args=["testset", "export", "A", "--format", fmt, "-o", str(out)]))
    _ok(runner.invoke(args=["testset", "create", "B"]))
    args = ["testset", "import", "B", "--srw-queries", str(tmp_path / "srw-queries.json")]
    _ok(runner.invoke(args=args))
    assert _texts(app, "B") == {"red dress", "tv", "led tv"}
    args = ["testset", "import", "B", "--srw-judgments", str(tmp_path / "srw-judgments.json")]
    _ok(runner.invoke(args=args))
    assert _triples(app, "B") == _triples(app, "A")


SNAPSHOT = (
    "Snapshot Name,Snapshot Time,Case ID,Query Text,Doc ID,Doc Position,title\n"
    "base,2026-01-01,7,red dress,d2,2,Two\n"
    "base,2026-01-01,7,red dress,d1,1,One\n"
    "base,2026-01-01,7,red dress,d9,3,Nine\n"
    "base,2026-01-01,7,blue shoes,d3,1,Three\n"
)


def test_quepid_snapshot_is_a_run_and_round_trips(
    app: Flask, runner: FlaskCliRunner, tmp_path: Path
) -> None:
    judgments = tmp_path / "j.csv"
    judgments.write_text(QUEPID)
    snapshot = tmp_path / "snap.csv"
    snapshot.write_text(SNAPSHOT)
    _ok(runner.invoke(args=["testset", "create", "A"]))
    _ok(runner.invoke(args=["testset", "import", "A", "--quepid", str(judgments)]))
    args = ["run", "upload", "A", str(snapshot), "--format", "quepid-snapshot", "--name", "s"]
    out = _ok(runner.invoke(args=args))
    assert "2 queries, 4 ranked entries (format quepid-snapshot, depth" in out
    with app.app_context():
        test_set = db.session.scalar(sa.select(TestSet).where(TestSet.name == "A"))
        lists = runs.ranked_lists(runs.require_run(test_set, "s"))
    red, blue = interop.text_qid("red dress"), interop.text_qid("blue shoes")
    assert [d for d, _ in lists[red]] == ["d1", "d2", "d9"]
    assert [d for d, _ in lists[blue]] == ["d3"]
    exported = tmp_path / "back.csv"
    _ok(runner.invoke(args=["run", "export", "A", "s", "-o", str(exported)]))
    lines = exported.read_text().splitlines()
    assert lines[0] == "Snapshot Name,Snapshot Time,Case ID,Query Text,Doc ID,Doc Position"
    args = ["run", "upload", "A", str(exported), "--format", "quepid-snapshot", "--name", "t"]
    _ok(runner.invoke(args=args))
    with app.app_context():
        test_set = db.session.scalar(sa.select(TestSet).where(TestSet.name == "A"))
        again = runs.ranked_lists(runs.require_run(test_set, "t"))
    assert {q: [d for d, _ in v] for q, v in again.items()} == {
        q: [d for d, _ in v] for q, v in lists.items()
    }
