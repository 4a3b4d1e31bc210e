"""Field-level checks shared by the parsers: ids, numbers, whitespace splitting, JSON values."""

from __future__ import annotations

import math
import re
from typing import Any

from .errors import FormatError

ASCII_WS = " \t\n\r\v\f"
"""C's isspace() in the C locale: what trec_eval splits columns on (not Unicode spaces)."""

_WS_RE = re.compile(r"[ \t\n\r\v\f]+")
_FLOAT_RE = re.compile(
    r"[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|inf(?:inity)?)", re.ASCII | re.IGNORECASE
)
_NAN = float("nan")
_MISSING = object()
_INT_RE = re.compile(r"[+-]?\d+", re.ASCII)
_RANK_RE = re.compile(r"\d+", re.ASCII)


HASH_HINT = "; trec_eval v10 has no comment lines: '#' is data"


def width_error(tokens: list[str], expected: str, filename: str, line: int) -> FormatError:
    """The error for a whitespace line with the wrong number of columns."""
    reason = f"expected {expected}, found {len(tokens)}"
    if tokens and tokens[0].startswith("#"):
        reason += HASH_HINT
    return FormatError(filename, line, reason)


def hash_hint(exc: FormatError, tokens: list[str]) -> FormatError:
    """Add the no-comments hint to a field error on a line that starts with '#'."""
    if tokens and tokens[0].startswith("#") and not exc.reason.endswith(HASH_HINT):
        return FormatError(exc.filename, exc.line, exc.reason + HASH_HINT)
    return exc


def split_ws(line: str) -> list[str]:
    """Split a line on runs of ASCII whitespace, as trec_eval does; [] for a blank line."""
    stripped = line.strip(ASCII_WS)
    return _WS_RE.split(stripped) if stripped else []


def parse_score(token: str, filename: str, line: int | None, what: str = "score") -> float:
    """Parse a finite decimal double (exponents and signs allowed; NaN, ±inf, values past the
    double range such as 1e309, and '1_0' are not). trec_eval would read ±inf; we refuse it:
    an infinite score ranks nothing a finite one could not, and it breaks every JSON export."""
    try:
        value = float(token)
    except ValueError:
        value = _NAN
    # float() also reads '1_0', ' 1', 'nan' and non-ASCII digits, so only a plain ASCII token
    # skips the pattern (all else float() accepts, the pattern does too).
    plain = value == value and token.isascii() and "_" not in token and token.strip() == token
    if not plain and not _FLOAT_RE.fullmatch(token):
        raise FormatError(filename, line, f"{what} '{token}' is not a number")
    value = float(token)
    if not math.isfinite(value):
        raise FormatError(filename, line, f"{what} '{token}' is not a finite number")
    return value


def parse_grade(token: str, filename: str, line: int | None) -> int:
    """Parse an integer relevance grade (negative allowed: judged non-relevant)."""
    if not _INT_RE.fullmatch(token):
        raise FormatError(filename, line, f"grade '{token}' is not an integer")
    return int(token)


def parse_rank(token: str, filename: str, line: int | None) -> int:
    """Parse a rank: a non-negative integer written in plain digits."""
    if not _RANK_RE.fullmatch(token):
        raise FormatError(filename, line, f"rank '{token}' is not a non-negative integer")
    return int(token)


def check_id(value: str, what: str, filename: str, line: int | None) -> str:
    """Strip an external id and reject it when empty or when it contains whitespace."""
    value = value.strip()
    if not value:
        raise FormatError(filename, line, f"empty {what}")
    # isprintable() is False for TAB, LF, CR, VT and FF: the slow check only runs when needed.
    if (" " in value or not value.isprintable()) and any(ch in value for ch in ASCII_WS):
        raise FormatError(filename, line, f"{what} '{value}' contains whitespace")
    return value


def json_id(obj: dict[str, Any], keys: tuple[str, ...], filename: str, line: int) -> str:
    """Read an id from the first present key of a JSON object: a string or an integer."""
    for key in keys:
        value = obj.get(key, _MISSING)
        if value is not _MISSING:
            if type(value) is str:
                return check_id(value, "id" if key == "_id" else key, filename, line)
            if isinstance(value, bool) or not isinstance(value, int):
                kind = type(value).__name__
                raise FormatError(filename, line, f'"{key}" must be a string, not {kind}')
            return check_id(str(value), "id" if key == "_id" else key, filename, line)
    names = " or ".join(f'"{k}"' for k in keys)
    raise FormatError(filename, line, f"missing key {names}")


def json_text(
    obj: dict[str, Any], key: str, filename: str, line: int, *, required: bool
) -> str | None:
    """Read an optional or required string value from a JSON object (null counts as missing)."""
    value = obj.get(key)
    if value is None:
        if required:
            raise FormatError(filename, line, f'missing key "{key}"')
        return None
    if not isinstance(value, str):
        kind = type(value).__name__
        raise FormatError(filename, line, f'"{key}" must be a string, not {kind}')
    if "\x00" in value:
        raise FormatError(filename, line, f'"{key}" contains a NUL character')
    return value


def json_number(obj: dict[str, Any], key: str, filename: str, line: int) -> float:
    """Read a finite-or-infinite JSON number (not a bool, not a string)."""
    value = obj.get(key, _MISSING)
    if type(value) is float:
        return value
    if value is _MISSING:
        raise FormatError(filename, line, f'missing key "{key}"')
    if isinstance(value, bool) or not isinstance(value, int | float):
        kind = type(value).__name__
        raise FormatError(filename, line, f'"{key}" must be a number, not {kind}')
    return float(value)


QRELS_NOT_RUN = (
    "this looks like a qrels file (qid 0 docid grade), not a run (qid Q0 docid rank score tag); "
    "import it as qrels instead"
)
_WHOLE = re.compile(r"-?\d+")


def looks_like_qrels(line: str) -> bool:
    """A line of four columns ending in a whole number: a qrels line (qid iter docid grade)."""
    tokens = split_ws(line)
    return len(tokens) == 4 and _WHOLE.fullmatch(tokens[3]) is not None


_DIGIT_RUN = re.compile(r"\d+")


def _number(match: re.Match[str]) -> str:
    digits = match.group().lstrip("0") or "0"
    return f"{min(len(digits), 99):02d}{digits}"


def natural_key(text: str) -> str:
    """A key that sorts ids as people read them: q2 before q10, doc-9 before doc-10.

    Each run of digits becomes its length (two digits) and its value without leading zeros,
    so byte order of the keys is numeric order of the runs; other characters are unchanged.
    """
    return _DIGIT_RUN.sub(_number, text)
