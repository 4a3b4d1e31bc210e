"""Field parsers: what counts as a score, grade, rank and id."""

import pytest

from ndcg_labeler.formats.errors import FormatError
from ndcg_labeler.formats.fields import check_id, parse_grade, parse_rank, parse_score, split_ws


@pytest.mark.parametrize(
    ("token", "value"),
    [
        ("1", 1.0),
        ("-1.5e-3", -0.0015),
        ("+.5", 0.5),
        ("5.", 5.0),
        ("7E2", 700.0),
        ("1.7976931348623157e308", 1.7976931348623157e308),  # the largest double
    ],
)
def test_scores(token, value):
    assert parse_score(token, "f", 1) == value


def test_infinite_scores_are_refused():
    for token in ("inf", "-Infinity", "+inf", "1e999", "-1e309"):
        with pytest.raises(FormatError, match=r"^f:1: score '.*' is not a finite number$"):
            parse_score(token, "f", 1)


@pytest.mark.parametrize("token", ["nan", "NaN", "1_0", " 1", "1 ", "١", "0x10", "1e", "", "1,5"])
def test_not_scores(token):
    with pytest.raises(FormatError, match=r"^f:1: score '.*' is not a number$"):
        parse_score(token, "f", 1)


def test_grades_and_ranks():
    assert [parse_grade(t, "f", 1) for t in ("3", "-1", "+2", "007")] == [3, -1, 2, 7]
    assert parse_rank("0012", "f", 1) == 12
    for bad in ("1.0", "x", "١", "1_0"):
        with pytest.raises(FormatError, match="is not an integer"):
            parse_grade(bad, "f", 1)
    for bad in ("-1", "+1", "1.0"):
        with pytest.raises(FormatError, match="is not a non-negative integer"):
            parse_rank(bad, "f", 1)


def test_ids():
    assert check_id("  d#1 ", "docid", "f", 1) == "d#1"
    assert check_id("é\u00a0x", "docid", "f", 1) == "é\u00a0x"  # not ASCII whitespace
    for bad, reason in (("", "empty docid"), ("a b", "contains whitespace"), ("a\tb", "contains")):
        with pytest.raises(FormatError, match=reason):
            check_id(bad, "docid", "f", 1)


def test_split_ws_is_ascii_only():
    assert split_ws(" a\tb\x0bc\x0cd\r ") == ["a", "b", "c", "d"]
    assert split_ws("a\u00a0b c") == ["a\u00a0b", "c"]
    assert split_ws(" \t ") == []
