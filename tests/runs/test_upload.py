"""The run upload service: every format, trec_eval order, depth, validation, all or nothing."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import math
import tempfile

import pytest
import sqlalchemy as sa

from ndcg_labeler.extensions import db
from ndcg_labeler.formats import FormatError, decode_ranked
from ndcg_labeler.models import Run, RunQuery, TestSet
from ndcg_labeler.services import ServiceError, live
from ndcg_labeler.services import runs as run_service
from ndcg_labeler.services.runs.upload import name_from_file
from tests.factory import build_test_set
from tests.runs.helpers import counts, stored

QUERIES = {"q1": "first query", "q2": "second query"}
# q1: d3 and d1 tie at 2.0, so trec_eval puts d3 (larger docid) first; q2 in file order.
EXPECTED = {"q1": ["d2", "d3", "d1"], "q2": ["d9", "d5"]}

TREC = (
    "q1 Q0 d1 1 2.0 sys\n"
    "q1 Q0 d2 2 5.5 sys\n"
    "q1 Q0 d3 3 2.0 sys\n"
    "q2 Q0 d5 1 0.25 sys\n"
    "q2 Q0 d9 2 0.5 sys\n"
)
# Rank-only formats: the rank decides (score = -rank); same final order as above.
RANKED = [("q1", "d2", 1), ("q1", "d3", 2), ("q1", "d1", 3), ("q2", "d9", 1), ("q2", "d5", 2)]
SCORED = [
    ("q1", "d1", 2.0),
    ("q1", "d2", 5.5),
    ("q1", "d3", 2.0),
    ("q2", "d5", 0.25),
    ("q2", "d9", 0.5),
]

FORMATS = {
    "trec": TREC,
    "csv-score": "qid,docid,score\n" + "".join(f"{q},{d},{s}\n" for q, d, s in SCORED),
    "csv-rank": "qid,docid,rank\n" + "".join(f"{q},{d},{r}\n" for q, d, r in RANKED),
    "tsv-score": "qid\tdocid\tscore\n" + "".join(f"{q}\t{d}\t{s}\n" for q, d, s in SCORED),
    "jsonl-score": "".join(
        json.dumps({"qid": q, "docid": d, "score": s}) + "\n" for q, d, s in SCORED
    ),
    "jsonl-ranking": json.dumps({"qid": "q1", "ranking": ["d2", "d3", "d1"]})
    + "\n"
    + json.dumps({"qid": "q2", "ranking": ["d9", "d5"]})
    + "\n",
    "msmarco": "".join(f"{q}\t{d}\t{r}\n" for q, d, r in RANKED),
}


@pytest.fixture
def test_set(ctx) -> TestSet:
    return build_test_set("runs", QUERIES, [("q1", "d2", 3)], corpus={"d1": "one", "d2": "two"})


def upload(test_set: TestSet, text: str | bytes, name: str = "r", **kw) -> Run:
    data = text.encode() if isinstance(text, str) else text
    return run_service.upload_run(test_set, io.BytesIO(data), "run.txt", name, None, **kw)


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_every_format_stores_trec_eval_order(test_set: TestSet, fmt: str) -> None:
    version = test_set.runs_version
    run = upload(test_set, FORMATS[fmt], name=fmt)
    assert run.format == fmt
    assert stored(run) == EXPECTED
    assert (run.num_queries, run.num_entries) == (2, 5)
    assert run.sha256 == hashlib.sha256(FORMATS[fmt].encode()).hexdigest()
    db.session.refresh(test_set)
    assert test_set.runs_version == version + 1


def test_ties_follow_the_docids_bytes_below_the_newline_too(test_set: TestSet) -> None:
    # The parser hands the docids over newline-ended; a control byte below "\n" (0x0A) in an
    # id must still order ties as trec_eval's strcmp does, descending: "b" > "a\x05" (0x05 >
    # 0x01) > "a\x01b" (longer, same prefix) > "a".
    ids = ["a", "a\x01b", "b", "a\x05"]
    run = upload(test_set, "".join(f"q1 Q0 {d} {i} 1.0 sys\n" for i, d in enumerate(ids)))
    assert stored(run) == {"q1": ["b", "a\x05", "a\x01b", "a"]}


def test_gzip_and_scores_as_float64(test_set: TestSet) -> None:
    data = gzip.compress(TREC.encode())
    run = upload(test_set, data)
    assert run.format == "trec"
    # The hash is of the uploaded bytes (compressed), as a user would compute it.
    assert run.sha256 == hashlib.sha256(data).hexdigest()
    row = db.session.scalar(
        sa.select(RunQuery).where(RunQuery.run_id == run.id).order_by(RunQuery.id).limit(1)
    )
    assert decode_ranked(row.docids, row.scores)[1].tolist() == [5.5, 2.0, 2.0]


def test_upload_from_a_path(test_set: TestSet, tmp_path) -> None:
    path = tmp_path / "bm25.trec"
    path.write_text(TREC)
    run = run_service.upload_run(test_set, path, None, "from disk", None)
    assert run.filename == "bm25.trec"
    assert stored(run) == EXPECTED
    # Files are hashed in a background thread while they are parsed: same digest.
    assert run.sha256 == hashlib.sha256(TREC.encode()).hexdigest()


def test_upload_from_a_spooled_file_and_a_bad_one(test_set: TestSet, tmp_path) -> None:
    with tempfile.TemporaryFile() as fh:
        fh.write(b"ignored prefix|" + gzip.compress(TREC.encode()))
        fh.seek(len(b"ignored prefix|"))
        run = run_service.upload_run(test_set, fh, "upload.gz", "spooled", None)
        fh.seek(len(b"ignored prefix|"))
        assert run.sha256 == hashlib.sha256(fh.read()).hexdigest()
    bad = tmp_path / "bad.trec"
    bad.write_text("q1 Q0 d1 1 1.0 s\n" * 2 + TREC * 2000)
    with pytest.raises(FormatError, match=r"^bad.trec:2: docid 'd1' appears twice"):
        run_service.upload_run(test_set, bad, None, "bad", None)
    assert counts() == (1, 2)


def test_depth_keeps_the_top_of_each_query(test_set: TestSet) -> None:
    run = upload(test_set, TREC, depth=2)
    assert stored(run) == {"q1": ["d2", "d3"], "q2": ["d9", "d5"]}
    assert run.depth == 2
    assert run.report["entries_in_file"] == 5
    assert run.report["entries_stored"] == 4


def test_default_depth_comes_from_the_config(test_set: TestSet, ctx) -> None:
    ctx.config["NDCG_RUN_DEPTH"] = 1
    run = upload(test_set, TREC)
    assert stored(run) == {"q1": ["d2"], "q2": ["d9"]}


def test_unknown_queries_are_reported_and_left_out(test_set: TestSet) -> None:
    extra = "".join(f"x{i:02d} Q0 d1 1 1.0 sys\n" for i in range(12))
    run = upload(test_set, TREC + extra)
    assert set(stored(run)) == {"q1", "q2"}
    unknown = run.report["unknown_queries"]
    assert unknown["count"] == 12
    assert unknown["examples"] == [f"x{i:02d}" for i in range(10)]


def test_missing_queries_and_unknown_docids(test_set: TestSet) -> None:
    run = upload(test_set, "q1 Q0 nowhere 1 1.0 sys\n")
    # A docid the corpus lacks is kept (it counts as unjudged); q2 is reported missing.
    assert stored(run) == {"q1": ["nowhere"]}
    assert run.report["missing_queries"] == {"count": 1, "examples": ["q2"]}


@pytest.mark.parametrize(
    ("text", "where", "reason"),
    [
        ("q1 Q0 d1 1 1.0 s\nq1 Q0 d2 2 2.0 s\nq1 Q0 d1 3 0.5 s\n", "run.txt:3:", "twice"),
        ("q1 Q0 d1 1 1.0 s\nq1 Q0 d2 2 high s\n", "run.txt:2:", "not a number"),
        ("q1 Q0 d1 1 1.0 s\nq1 Q0 d2 2\n", "run.txt:2:", "columns"),
        ('{"qid": "q1", "docid": "d1", "score": 1}\n{"qid": "q1"\n', "run.txt:2:", "JSON"),
    ],
)
def test_bad_files_change_nothing(test_set: TestSet, text: str, where: str, reason: str) -> None:
    version = test_set.runs_version
    with pytest.raises(FormatError) as info:
        upload(test_set, text)
    assert str(info.value).startswith(where)
    assert reason in str(info.value)
    db.session.refresh(test_set)
    assert counts() == (0, 0)
    assert test_set.runs_version == version


def test_a_bad_line_deep_in_a_gzipped_file(test_set: TestSet) -> None:
    lines = [f"q1 Q0 d{i} {i} {1000 - i}.0 s\n" for i in range(5000)]
    lines[4321] = "q1 Q0 d1 4321 1.0 s\n"  # d1 again
    with pytest.raises(FormatError, match=r"^run.txt:4322: docid 'd1' appears twice"):
        upload(test_set, gzip.compress("".join(lines).encode()))
    assert counts() == (0, 0)


def test_duplicate_name_is_refused(test_set: TestSet) -> None:
    upload(test_set, TREC, name="bm25")
    with pytest.raises(ServiceError, match="already has a run named 'bm25'"):
        upload(test_set, TREC, name="  bm25 ")
    assert counts() == (1, 2)


def test_same_name_in_another_test_set_is_fine(test_set: TestSet) -> None:
    other = build_test_set("other", QUERIES)
    upload(test_set, TREC, name="bm25")
    upload(other, TREC, name="bm25")
    assert counts() == (2, 4)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"name": " "}, "needs a name"),
        ({"name": "x" * 201}, "at most 200"),
        ({"depth": 0}, "depth"),
        ({"depth": "10"}, "depth"),
    ],
)
def test_refused_settings(test_set: TestSet, kwargs: dict, message: str) -> None:
    args = {"name": "r", **kwargs}
    with pytest.raises(ServiceError, match=message):
        upload(test_set, TREC, **args)
    assert counts() == (0, 0)


def test_a_run_with_no_known_query_is_refused(test_set: TestSet) -> None:
    with pytest.raises(ServiceError, match=r"the run's one query is not in test set '.*' \(zz\)"):
        upload(test_set, "zz Q0 d1 1 1.0 s\n")
    assert counts() == (0, 0)


def test_delete_and_list(test_set: TestSet) -> None:
    first = upload(test_set, TREC, name="a")
    upload(test_set, TREC, name="b")
    assert [r.name for r in run_service.list_runs(test_set)] == ["a", "b"]
    version = db.session.get(TestSet, test_set.id).runs_version
    run_service.delete_run(first)
    assert [r.name for r in run_service.list_runs(test_set)] == ["b"]
    assert counts() == (1, 2)
    assert db.session.get(TestSet, test_set.id).runs_version == version + 1


@pytest.mark.parametrize(
    ("filename", "name"),
    [
        ("bm25.trec", "bm25"),
        ("bm25.trec.gz", "bm25"),
        ("runs/dense-e5.run", "dense-e5"),
        ("C:\\Users\\me\\hybrid.tsv.GZ", "hybrid"),
        ("colbert.v2.jsonl", "colbert.v2"),  # a dot inside the name stays
        ("msmarco", "msmarco"),
        (".trec", ".trec"),  # nothing would be left: the name is kept as it is
    ],
)
def test_a_file_suggests_its_run_name(filename: str, name: str) -> None:
    assert name_from_file(filename) == name


def test_an_empty_name_is_the_file_name(test_set: TestSet) -> None:
    assert run_service.clean_name("", "bm25.trec.gz") == "bm25"
    assert run_service.clean_name("  ", "bm25.trec") == "bm25"
    assert run_service.clean_name("mine", "bm25.trec") == "mine"
    with pytest.raises(ServiceError, match="the run needs a name"):
        run_service.clean_name("", "")


def test_a_run_listed_best_first_keeps_trec_eval_order_and_scores_right(ctx) -> None:
    """The usual file lists each query best first, its ties in any docid order: trec_eval's
    order is then put in place by moving the tied entries alone (ids of different lengths, one
    that stays between two that swap). Stored lists, scores and the first NDCG must be right."""
    test_set = build_test_set(
        "best first",
        {"q1": "one", "q2": "two"},
        [("q1", "ccc", 3), ("q1", "a", 1), ("q2", "m1", 2)],
    )
    text = (
        "q1 Q0 x 1 5.0 s\nq1 Q0 a 2 2.0 s\nq1 Q0 bb 3 2.0 s\nq1 Q0 ccc 4 2.0 s\n"
        "q1 Q0 d 5 1.0 s\nq2 Q0 m1 1 1.0 s\nq2 Q0 m22 2 1.0 s\nq2 Q0 z 3 0.5 s\n"
    )
    run = upload(test_set, text)
    assert stored(run) == {"q1": ["x", "ccc", "bb", "a", "d"], "q2": ["m22", "m1", "z"]}
    rows = db.session.execute(
        sa.select(RunQuery.docids, RunQuery.scores)
        .where(RunQuery.run_id == run.id)
        .order_by(RunQuery.id)
    ).all()
    assert [decode_ranked(d, s)[1].tolist() for d, s in rows] == [
        [5.0, 2.0, 2.0, 2.0, 1.0],
        [1.0, 1.0, 0.5],
    ]
    # trec_eval's ndcg_cut_10 by hand: gain = grade, discount log2(rank + 1).
    q1 = (3 / math.log2(3) + 1 / math.log2(5)) / (3 + 1 / math.log2(3))
    q2 = (2 / math.log2(3)) / 2
    result = live.score_run(run, live.ScoreOptions(k=10))
    assert result.mean_ndcg == pytest.approx((q1 + q2) / 2, abs=1e-12)
