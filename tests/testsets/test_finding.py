"""Finding things: natural order (q2 before q10), search and grade-state filters, both through
the service and on the pages; imports and ORM inserts both store the sort key."""

from __future__ import annotations

import io
import re

import pytest
from flask import Flask

from ndcg_labeler.extensions import db
from ndcg_labeler.formats.fields import natural_key
from ndcg_labeler.models import TestSet
from ndcg_labeler.services import ServiceError
from ndcg_labeler.services import testsets as service
from ndcg_labeler.services.imports import ImportFile, import_files
from tests.factory import build, judge, person


@pytest.mark.parametrize(
    ("ids", "ordered"),
    [
        (["q10", "q2", "q1", "q11"], ["q1", "q2", "q10", "q11"]),
        (["doc-9.2", "doc-10.1", "doc-9.10"], ["doc-9.2", "doc-9.10", "doc-10.1"]),
        (["a", "B", "10", "9"], ["9", "10", "B", "a"]),  # digits, then bytes: upper before lower
        (["q007", "q10", "q8"], ["q007", "q8", "q10"]),  # leading zeros count by value
        (["x" + "9" * 30, "x" + "1" + "0" * 30], ["x" + "9" * 30, "x" + "1" + "0" * 30]),
    ],
)
def test_natural_keys_order_ids_as_people_read_them(ids: list[str], ordered: list[str]) -> None:
    assert sorted(ids, key=natural_key) == ordered


def _qids(app: Flask, test_set_id: int, **kwargs) -> list[str]:
    with app.app_context():
        test_set = db.session.get_one(TestSet, test_set_id)
        return [row[0].qid for row in service.queries_page(test_set, 1, **kwargs).items]


def _docids(app: Flask, test_set_id: int, **kwargs) -> list[str]:
    with app.app_context():
        test_set = db.session.get_one(TestSet, test_set_id)
        return [chunk.docid for chunk in service.chunks_page(test_set, 1, **kwargs).items]


@pytest.fixture
def finding(app: Flask):
    """q1..q11 (q10 has d10 and d2, q2 has d1; other queries one chunk each), two graders."""
    pool = {f"q{i}": [f"d{i}"] for i in (1, 3, 11)}
    pool |= {"q10": ["d10", "d2"], "q2": ["d1"]}
    built = build(app, "Finding", pool=pool, texts={"d10": "Parental LEAVE: 100% paid"})
    alice = person(app, "alice")
    judge(app, built.test_set_id, "q10", "d10", "alice", "graded", 2)  # q10 partly graded
    judge(app, built.test_set_id, "q2", "d1", "alice", "graded", 0)  # q2 fully graded
    judge(app, built.test_set_id, "q3", "d3", "alice", "skipped", None)  # skip is not a grade
    assert alice
    return built


def test_lists_are_in_natural_order(app: Flask, finding) -> None:
    assert _qids(app, finding.test_set_id) == ["q1", "q2", "q3", "q10", "q11"]
    assert _docids(app, finding.test_set_id) == ["d1", "d2", "d3", "d10", "d11"]


def test_imports_store_the_sort_key(app: Flask) -> None:
    with app.app_context():
        test_set = service.create_test_set("Imported")
        queries = b"q10\tten\nq9\tnine\nq100\thundred\n"
        import_files(
            test_set,
            queries=ImportFile(io.BytesIO(queries), "q.tsv"),
            pool=ImportFile(io.BytesIO(b"q9,d20\nq9,d3\n"), "pool.csv"),
        )
        test_set_id = test_set.id
    assert _qids(app, test_set_id) == ["q9", "q10", "q100"]
    assert _docids(app, test_set_id) == ["d3", "d20"]  # created without text by the pool


def test_search_finds_ids_and_words_in_any_case(app: Flask, finding) -> None:
    ts = finding.test_set_id
    assert _qids(app, ts, search="Q1") == ["q1", "q10", "q11"]
    assert _qids(app, ts, search="text of q2") == ["q2"]
    assert _docids(app, ts, search="leave") == ["d10"]
    assert _docids(app, ts, search="100%") == ["d10"]  # % is taken literally
    assert _qids(app, ts, search="q_") == []  # and so is _ (no qid has "q_" in it)
    assert _docids(app, ts, search="parent paid") == ["d10"]  # every word, each a prefix
    assert _docids(app, ts, search="-9") == []  # no docid has it, and it holds no word
    assert _docids(app, ts, search="title d1") == ["d1", "d10", "d11"]


def test_search_folds_the_case_of_any_letter(app: Flask) -> None:
    """SQLite's lower() and LIKE fold ASCII letters only: the query 'Ärger im Büro' (typed as
    shown) was not found by 'ärger' nor its qid 'Straße-Ä1' by 'straße-ä'. Chunk words go
    through FTS5's unicode61 tokenizer, which folds any letter already."""
    built = build(app, "Folding", pool={"Straße-Ä1": ["Ä-doc"], "q2": ["d2"]})
    texts = {"Ä-doc": "ÄRGER über das CAFÉ", "d2": "Σπίτι και ärger"}
    with app.app_context():
        from ndcg_labeler.models import Chunk, Query

        query = db.session.get_one(Query, built.queries["Straße-Ä1"])
        query.text, query.narrative = "Ärger im Büro", "ÉTÉ"
        for docid, text in texts.items():
            db.session.get_one(Chunk, built.chunks[docid]).text = text
        db.session.commit()
    ts = built.test_set_id
    for search in ("ärger", "ÄRGER", "Ärger im büro", "straße-ä", "été"):
        assert _qids(app, ts, search=search) == ["Straße-Ä1"], search
    assert _qids(app, ts, search="%") == []  # still literal
    for search in ("ärger", "Ärger", "ÄRGER"):
        assert _docids(app, ts, search=search) == ["d2", "Ä-doc"], search
    assert _docids(app, ts, search="café") == ["Ä-doc"]
    assert _docids(app, ts, search="σπίτι") == ["d2"]
    assert _docids(app, ts, search="Ä-doc") == ["Ä-doc"]  # a docid prefix, as typed


def test_filters_by_grade_state(app: Flask, finding) -> None:
    ts = finding.test_set_id
    assert _qids(app, ts, state="graded") == ["q2"]
    assert _qids(app, ts, state="partly") == ["q10"]
    assert _qids(app, ts, state="ungraded") == ["q1", "q3", "q11"]
    assert _docids(app, ts, state="graded") == ["d1", "d10"]
    assert _docids(app, ts, state="ungraded") == ["d2", "d3", "d11"]
    assert _qids(app, ts, state="ungraded", search="q1") == ["q1", "q11"]
    with app.app_context(), pytest.raises(ServiceError, match="unknown filter 'odd'"):
        service.queries_page(db.session.get_one(TestSet, ts), 1, state="odd")


def test_pages_search_filter_and_keep_them_across_pages(as_admin, finding) -> None:
    base = f"/test-sets/{finding.test_set_id}"
    page = as_admin.get(f"{base}/queries?q=q1&state=ungraded").get_data(as_text=True)
    assert re.findall(r"<code>(q\d+)</code>", page) == ["q1", "q11"]
    assert 'value="q1"' in page and '<option value="ungraded" selected>' in page
    page = as_admin.get(f"{base}/chunks?state=graded").get_data(as_text=True)
    assert re.findall(r"<code>(d\d+)</code>", page) == ["d1", "d10"]
    missing = as_admin.get(f"{base}/chunks?q=nothing-like-this").get_data(as_text=True)
    assert 'id="nothing-found"' in missing
    assert as_admin.get(f"{base}/queries?state=odd").status_code == 400


def test_a_search_with_too_many_hits_to_count_filters_and_says_more_than(
    as_admin, finding, app: Flask, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past MANY_HITS the chunk list walks the natural order: the grade filter still applies,
    and the page says "more than" with no last page instead of a total."""
    from ndcg_labeler.services.testsets import listing

    monkeypatch.setattr(listing, "MANY_HITS", 1)
    ts = finding.test_set_id
    assert _docids(app, ts, search="title", state="ungraded") == ["d2", "d3", "d11"]
    assert _docids(app, ts, search="d1", state="graded") == ["d1", "d10"]
    page = as_admin.get(f"/test-sets/{ts}/chunks?q=title").get_data(as_text=True)
    assert "More than 1 chunks found, by docid" in page
    assert re.findall(r"<code>(d\d+)</code>", page) == ["d1", "d2", "d3", "d10", "d11"]


def test_a_search_with_a_nul_character_finds_as_without_it(as_admin, finding, app: Flask) -> None:
    """PostgreSQL refuses NUL in a text parameter: the lists drop it rather than answer 500."""
    ts = finding.test_set_id
    assert _docids(app, ts, search="leave\x00") == ["d10"]
    assert _qids(app, ts, search="q1\x00") == ["q1", "q10", "q11"]
    for page in ("chunks", "queries"):
        assert as_admin.get(f"/test-sets/{ts}/{page}?q=x%00").status_code == 200
