"""Reading a grade out of an LLM judge's answer: the `##final score: N` line and its variants.

Pure: text in, grade (or None) out. An answer we cannot read is None ("unparsed"), never 0:
guessing 0 would count as a judged non-relevant chunk and lower every score silently.
"""

from __future__ import annotations

import re

# Most specific first. Each captures the grade in group "g"; the last match in the text wins
# (models often restate the scale before they answer).
_PATTERNS = (
    re.compile(r"#+\s*final\s*score\s*[:=]?\s*\**\s*(?P<g>-?\d+(?:\.\d+)?)", re.IGNORECASE),
    re.compile(
        r"final\s*(?:score|grade|answer|rating)\s*[:=]\s*\**\s*(?P<g>-?\d+(?:\.\d+)?)", re.I
    ),
    re.compile(
        r"^\s*(?:score|grade|relevance)\s*[:=]\s*\**\s*(?P<g>-?\d+(?:\.\d+)?)\s*\**\s*$",
        re.I | re.M,
    ),
    re.compile(r'"(?:score|grade|final_score|relevance)"\s*:\s*(?P<g>-?\d+(?:\.\d+)?)', re.I),
)
_BARE = re.compile(r"^\s*\**\s*(?P<g>\d)\s*\**\s*\.?\s*$")


def parse_answer_grade(answer: str, scale_max: int) -> int | None:
    """The grade the answer gives on 0..scale_max, or None when it gives none we can trust.

    Accepts `##final score: 2` (UMBRELA's line), `Final score: 2`, `Score: 2` alone on a
    line, `{"score": 2}` and an answer that is nothing but a digit. A fractional or
    out-of-scale value is None: it is not a grade on this test set's scale.
    """
    text = answer or ""
    for pattern in _PATTERNS:
        found = list(pattern.finditer(text))
        if found:
            return _grade(found[-1].group("g"), scale_max)
    bare = _BARE.match(text)
    return _grade(bare.group("g"), scale_max) if bare else None


def unparsed_reason(answer: str, scale_max: int) -> str:
    """Why parse_answer_grade reads no grade in the answer, for people reading it: the grade it
    stated is off the scale or not whole, or it stated none in a form we read."""
    text = answer or ""
    for pattern in _PATTERNS:
        found = list(pattern.finditer(text))
        if found:
            value = found[-1].group("g")
            whole, _, fraction = value.partition(".")
            if fraction.strip("0"):
                return f"grade {value} is not a whole grade of the scale 0 to {scale_max}"
            return f"grade {whole[:12]} is off the test set's scale of 0 to {scale_max}"
    return f"no grade found: the answer should end with '##final score: N', N from 0 to {scale_max}"


def _grade(value: str, scale_max: int) -> int | None:
    if "." in value:
        whole, _, fraction = value.partition(".")
        if fraction.strip("0"):
            return None
        value = whole
    value = value.lstrip("0") or "0"
    if len(value) > 3:  # no scale goes that far; int() refuses past 4,300 digits
        return None
    grade = int(value)
    return grade if 0 <= grade <= scale_max else None
