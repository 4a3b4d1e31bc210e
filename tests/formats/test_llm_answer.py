"""Reading a grade out of a judge's answer: UMBRELA's line, common variants, never a guessed 0."""

from __future__ import annotations

import pytest

from ndcg_labeler.formats.llm_answer import parse_answer_grade

CASES = [
    ("The passage answers it.\n##final score: 3", 3),
    ("##Final Score: 2", 2),
    ("# final score = 1", 1),
    ("**##final score: 2**", 2),
    ("Final score: 0", 0),
    ("Final grade: 1", 1),
    ("reasoning...\nScore: 2\n", 2),
    ('{"score": 3, "why": "direct answer"}', 3),
    ('{"final_score": 1}', 1),
    ("2", 2),
    ("**3**", 3),
    ("##final score: 2.0", 2),
    # the last statement wins: models restate the scale first
    ("Scale: ##final score: 0 means none.\n...\n##final score: 3", 3),
    # unreadable: None ("unparsed"), never 0
    ("I cannot judge this passage.", None),
    ("", None),
    ("##final score: 7", None),  # past a 0-3 scale
    ("##final score: -1", None),
    ("##final score: 2.5", None),  # not a grade on the scale
    ("The score is high", None),
    ("Scores from 0 to 3 are possible", None),
]


@pytest.mark.parametrize(("answer", "grade"), CASES)
def test_grades_are_read_or_left_unparsed(answer: str, grade: int | None) -> None:
    assert parse_answer_grade(answer, 3) == grade


def test_the_scale_bounds_the_grade() -> None:
    assert parse_answer_grade("##final score: 4", 4) == 4
    assert parse_answer_grade("##final score: 4", 3) is None


def test_a_grade_with_thousands_of_digits_is_unparsed_not_a_crash() -> None:
    # Python refuses int() of more than 4,300 digits; a model can write that many.
    assert parse_answer_grade("##final score: " + "9" * 5000, 3) is None
    assert parse_answer_grade("##final score: " + "0" * 5000 + "2", 3) == 2  # as int() reads it
