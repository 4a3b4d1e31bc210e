"""Quepid and OpenSearch SRW readers and writers, and the rating map (hand-computed values)."""

from __future__ import annotations

import io
import json

import pytest
from hypothesis import HealthCheck, given, settings

from ndcg_labeler.formats import (
    FormatError,
    RatingMap,
    RatingMapError,
    read_quepid_judgments,
    read_quepid_snapshot,
    read_srw_judgments,
    read_srw_query_set,
    write_quepid_judgments,
    write_quepid_snapshot,
    write_srw_judgments,
    write_srw_query_set,
)
from tests.formats.fuzz_inputs import FUZZ_INPUT


def _src(text: str) -> io.BytesIO:
    return io.BytesIO(text.encode())


def test_rating_map_forms() -> None:
    assert RatingMap.parse("", 3).grade(2) == 2
    assert RatingMap.parse(None, 4).grade(4.0) == 4
    # 1..4 onto 0..3: (r − 1) / 3 × 3 = r − 1.
    assert [RatingMap.parse("1-4", 3).grade(r) for r in (1, 2, 3, 4)] == [0, 1, 2, 3]
    # 0..1 onto 0..4 (SRW's implicit judgments): 0.12 → 0.48 → 0; 0.13 → 0.52 → 1; 0.5 → 2.
    scale = RatingMap.parse("0..1", 4)
    assert [scale.grade(r) for r in (0.0, 0.12, 0.13, 0.5, 1.0)] == [0, 0, 1, 2, 4]
    assert RatingMap.parse("1=0, 2=0, 3=1, 4=3", 3).grade(4) == 3


@pytest.mark.parametrize(
    ("text", "rating", "reason"),
    [
        ("", 2.5, "rating 2.5 is not a grade of this test set's scale 0–3"),
        ("", 4, "rating 4 is not a grade"),
        ("0-10", 11, "rating 11 is outside the rating scale 0-10"),
        ("1=0,2=1", 3, "rating 3 is not in the rating map (it lists 1, 2)"),
    ],
)
def test_rating_map_refuses_what_it_cannot_place(text: str, rating: float, reason: str) -> None:
    with pytest.raises(RatingMapError, match=reason.replace("(", r"\(").replace(")", r"\)")):
        RatingMap.parse(text, 3).grade(rating)


@pytest.mark.parametrize(
    ("text", "reason"),
    [("5-1", "low end must be below"), ("a,b", "cannot read the rating map"), ("1=7", "outside")],
)
def test_rating_map_refuses_bad_maps(text: str, reason: str) -> None:
    with pytest.raises(RatingMapError, match=reason):
        RatingMap.parse(text, 3)


def test_quepid_judgments_read_as_quepid_writes_them() -> None:
    text = 'query,docid,rating\n" =sum",a,1\nred  dress,b,\nlonely,,\nred dress,c,2.0\n'
    got = list(read_quepid_judgments(_src(text), "j.csv"))
    assert [(line, tuple(j)) for line, j in got] == [
        (2, ("=sum", "a", 1.0)),  # Quepid's leading space before a formula is dropped
        (3, ("red dress", "b", None)),  # an unrated document
        (4, ("lonely", None, None)),  # a query without ratings
        (5, ("red dress", "c", 2.0)),
    ]
    written = write_quepid_judgments([("=sum", "a", 1), ("lonely", None, None)])
    assert written == "query,docid,rating\n =sum,a,1\nlonely,,\n"


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("query,rating\nq,1\n", "j.csv:1: header lacks column 'docid'"),
        ("query,docid,rating\nq,a,1\nq,a,2\n", "j.csv:3: docid 'a' is rated twice"),
        ("query,docid,rating\n,a,1\n", "j.csv:2: empty query text"),
        ("query,docid,rating\nq,,1\n", "j.csv:2: a rating without a docid"),
    ],
)
def test_quepid_judgments_errors(text: str, where: str) -> None:
    with pytest.raises(FormatError, match=where):
        list(read_quepid_judgments(_src(text), "j.csv"))


def test_an_unrated_row_does_not_conflict_with_a_rating_of_the_same_pair() -> None:
    # Quepid lists a document unrated and, further down, rated: one rating, no conflict.
    text = "query,docid,rating\nq,a,\nq,a,2\nq,a,\nq,a,2\n"
    got = [(line, tuple(j)) for line, j in read_quepid_judgments(_src(text), "j.csv")]
    assert got == [
        (2, ("q", "a", None)),
        (3, ("q", "a", 2.0)),
        (4, ("q", "a", None)),
        (5, ("q", "a", 2.0)),
    ]
    with pytest.raises(
        FormatError, match=r"j\.csv:4: docid 'a' is rated twice .* \(line 3 and here\)"
    ):
        list(read_quepid_judgments(_src("query,docid,rating\nq,a,\nq,a,2\nq,a,1\n"), "j.csv"))


def test_quepid_snapshot_rows_and_errors() -> None:
    head = "Snapshot Name,Snapshot Time,Case ID,Query Text,Doc ID,Doc Position,title\n"
    rows = list(read_quepid_snapshot(_src(head + "s,t,1,q,d2,2,x\ns,t,1,q,d1,1,y\n"), "s.csv"))
    assert [tuple(r) for _, r in rows] == [("q", "d2", 2), ("q", "d1", 1)]
    with pytest.raises(FormatError, match=r"s\.csv:3: position 1 appears twice"):
        list(read_quepid_snapshot(_src(head + "s,t,1,q,a,1,x\ns,t,1,q,b,1,x\n"), "s.csv"))
    with pytest.raises(FormatError, match="header lacks column 'doc position'"):
        list(read_quepid_snapshot(_src("Query Text,Doc ID\nq,a\n"), "s.csv"))


def test_srw_judgments_in_all_three_shapes() -> None:
    listed = {
        "judgmentRatings": [
            {"query": "tv", "ratings": [{"docId": "B1", "rating": "3.000"}]},
            {"query": "led  tv", "ratings": [{"docId": 7, "rating": 0.25}]},
        ]
    }
    mapped = {"judgmentRatings": {"tv": [{"docId": "B1", "rating": "3.000"}]}}
    answer = {"hits": {"hits": [{"_id": "x", "_source": listed}]}}
    expected = [("tv", "B1", 3.0), ("led tv", "7", 0.25)]
    assert [tuple(j) for j in read_srw_judgments(_src(json.dumps(listed)), "a.json")] == expected
    assert [tuple(j) for j in read_srw_judgments(_src(json.dumps(answer)), "a.json")] == expected
    assert [tuple(j) for j in read_srw_judgments(_src(json.dumps(mapped)), "a.json")] == [
        expected[0]
    ]


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ({"name": "x"}, "expected a JSON object with 'judgmentRatings'"),
        ({"judgmentRatings": [{"query": "", "ratings": []}]}, r"judgmentRatings\[0\]: the query"),
        (
            {"judgmentRatings": [{"query": "q", "ratings": [{"docId": "a", "rating": "hi"}]}]},
            r"judgmentRatings\[0\].ratings\[0\]: rating 'hi' is not a number",
        ),
        (
            {"judgmentRatings": [{"query": "q", "ratings": [{"docId": "a"}]}]},
            r"judgmentRatings\[0\].ratings\[0\]: expected",
        ),
    ],
)
def test_srw_judgments_errors_name_the_place(value: object, reason: str) -> None:
    with pytest.raises(FormatError, match=reason):
        read_srw_judgments(_src(json.dumps(value)), "a.json")


def test_srw_query_sets_as_document_or_json_lines() -> None:
    document = {"name": "TVs", "sampling": "manual", "querySetQueries": [{"queryText": "tv"}]}
    assert read_srw_query_set(_src(json.dumps(document)), "q.json") == ["tv"]
    lines = (
        '{"queryText": "tv", "referenceAnswer": "x"}\n\n{"queryText": "tv"}\n{"queryText": "a"}\n'
    )
    assert read_srw_query_set(_src(lines), "q.jsonl") == ["tv", "a"]
    with pytest.raises(FormatError, match=r"q\.jsonl:2: expected"):
        read_srw_query_set(_src('{"queryText": "tv"}\n{"text": "no"}\n'), "q.jsonl")
    with pytest.raises(FormatError, match=r"q\.jsonl:2: invalid JSON"):
        read_srw_query_set(_src('{"queryText": "tv"}\n{oops\n'), "q.jsonl")


def test_srw_writers_give_srw_bodies_that_read_back() -> None:
    body = json.loads(write_srw_judgments("n", "d", [("tv", "B1", 2), ("led tv", None, None)]))
    assert body == {
        "name": "n",
        "description": "d",
        "type": "IMPORT_JUDGMENT",
        "judgmentRatings": [
            {"query": "tv", "ratings": [{"docId": "B1", "rating": "2.000"}]},
            {"query": "led tv", "ratings": []},
        ],
    }
    back = read_srw_judgments(_src(json.dumps(body)), "b.json")
    assert [tuple(j) for j in back] == [("tv", "B1", 2.0), ("led tv", None, None)]
    queries = write_srw_query_set("n", "d", ["tv", "led tv"])
    assert read_srw_query_set(_src(queries), "q.json") == ["tv", "led tv"]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(FUZZ_INPUT)
def test_peer_readers_parse_or_refuse_with_a_located_message(data: bytes) -> None:
    readers = (read_quepid_judgments, read_quepid_snapshot, read_srw_judgments, read_srw_query_set)
    for reader in readers:
        try:
            found = reader(io.BytesIO(data), "fuzz.txt", max_bytes=1 << 20)
            if hasattr(found, "__next__"):
                for _ in found:
                    pass
        except FormatError as exc:
            assert str(exc).startswith("fuzz.txt"), exc


@pytest.mark.parametrize(
    "text",
    [
        '{"hits": {"hits": ["_source"]}}',
        '{"hits": {"hits": [{"_source": 3}]}}',
        "[" * 100_000,
        '{"judgmentRatings": [{"query": "q", "ratings": [{"docId": "a", "rating": NaN}]}]}',
        '{"judgmentRatings": [{"query": "q", "ratings": [{"docId": "a b", "rating": 1}]}]}',
    ],
)
def test_hostile_srw_documents_are_refused_with_a_message(text: str) -> None:
    with pytest.raises(FormatError, match=r"^a\.json"):
        read_srw_judgments(_src(text), "a.json")
    with pytest.raises(FormatError, match=r"^a\.json"):
        read_srw_query_set(_src(text), "a.json")


def test_docids_and_texts_starting_like_formulas_round_trip_behind_quepids_space() -> None:
    rows = [("=SUM(A1)", "=d3", 2), ("+q", "@d1", 0), ("-q", "-d2", 1)]
    written = write_quepid_judgments(rows)
    # No cell starts like a formula (Quepid's guard: a leading space) ...
    cells = [cell for line in written.splitlines()[1:] for cell in line.split(",")]
    assert not [cell for cell in cells if cell[:1] in "=+-@"], written
    # ... and reading strips it again.
    got = [(j.query, j.docid, j.rating) for _, j in read_quepid_judgments(_src(written), "j.csv")]
    assert got == rows
    snapshot = write_quepid_snapshot("s", "2026-11-26", "1", [("=q", "@d1", 1), ("=q", "=d2", 2)])
    assert [(r.query, r.docid, r.position) for _, r in read_quepid_snapshot(_src(snapshot))] == [
        ("=q", "@d1", 1),
        ("=q", "=d2", 2),
    ]


@pytest.mark.parametrize("bom", ["", "\ufeff"])
def test_a_quepid_snapshot_read_as_a_run_says_what_it_is(bom: str) -> None:
    from ndcg_labeler.formats import read_run

    snapshot = (
        f"{bom}Snapshot Name,Snapshot Time,Case ID,Query Text,Doc ID,Doc Position\n"
        "base,2026-01-01T00:00:00Z,1,red dress,d1,1\n"
    )
    with pytest.raises(FormatError) as caught:
        read_run(_src(snapshot), "snap.csv")
    # Not "score 'Text,Doc' is not a number": its header split on blanks as a TREC line.
    assert str(caught.value) == (
        "snap.csv:1: this is a Quepid case snapshot, not a run file: upload it as a snapshot "
        "(flask run upload --format quepid-snapshot, the API's format=quepid-snapshot, or the "
        "upload page's File format)"
    )
