"""Use cases: load from the database, call scoring/formats, write back."""

import re
from collections.abc import Callable
from typing import Any, Protocol, TypeVar


class ServiceError(ValueError):
    """A use case refused the input; the message is shown to the user as is.

    `field`, when given, names the input the refusal is about (e.g. a setting's name), so that
    a form can show the message under that field rather than at the top.
    """

    def __init__(self, *args: object, field: str | None = None) -> None:
        super().__init__(*args)
        self.field = field


# Endpoint and judge names go into URLs (/endpoints/<name>) and command lines (fill:JUDGE), so
# they keep to characters that need no escaping there: no '/', '?', '#', '%' or ':'.
_URL_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9 ._-]*")


def url_name(kind: str, name: str | None, limit: int) -> str:
    """`name` with its runs of spaces made one, or a ServiceError naming the allowed characters."""
    name = " ".join((name or "").split())
    if len(name) > limit or not _URL_NAME.fullmatch(name):
        raise ServiceError(
            f"{kind} name must be 1–{limit} characters: the letters A–Z and a–z (no accents), "
            f"digits 0–9, spaces, '.', '_' or '-', starting with a letter or digit "
            f"(not '{name[:limit]}')"
        )
    return name


# PostgreSQL's INTEGER, the type of the id, count and depth columns: a larger number names
# nothing stored, and binding one past 2**63 fails in the driver (a 500, not an answer).
MAX_WHOLE = 2**31 - 1


def whole_number(text: str, name: str, low: int = 0, high: int = MAX_WHOLE) -> int:
    """`text` as a whole number from `low` to `high`, or a ServiceError that names `name`."""
    text = text.strip()
    # ASCII digits only: str.isdigit() takes '²', which int() refuses, and int() takes '٣',
    # '+1' and '1_0'. The length check keeps int() off a 5,000-digit string (ValueError).
    digits = text.isascii() and text.isdigit()
    if digits and len(text) <= 12 and low <= int(text) <= high:
        return int(text)
    if high != MAX_WHOLE or digits:  # out of range: say the range, however wide
        wanted = f"from {low} to {high}"
    else:
        wanted = f"of at least {low}" if low else "of 0 or more"
    raise ServiceError(f"{name} must be a whole number {wanted}, not '{text[:40]}'")


# Numbers as typed in a form or on a command line: ASCII digits with an optional sign and point
# (int() and float() would also take '٣', '1_0', 'nan' and 'inf'); long enough for any
# out-of-range value to be said as a number.
_WHOLE_TYPED = re.compile(r"[+-]?[0-9]{1,20}")
_DECIMAL_TYPED = re.compile(r"[+-]?(?:[0-9]{1,20}(?:\.[0-9]{0,20})?|\.[0-9]{1,20})")


def read_number(typed: Any, whole: bool = False) -> int | float | str:
    """A number as typed (or given): an int or float, or the text as typed when it is none.
    With `whole`, a text must be a whole number (a float given as such is left to the range)."""
    if not isinstance(typed, str):
        return typed
    text = typed.strip()
    if _WHOLE_TYPED.fullmatch(text):
        return int(text)
    if not whole and _DECIMAL_TYPED.fullmatch(text):
        return float(text)
    return text


def noun(count: int, singular: str, plural: str = "") -> str:
    """The noun for `count` things: `singular` for 1, else `plural` (default singular + "s");
    "1 of 1 query", "0 queries", "3 entries"."""
    return singular if count == 1 else plural or f"{singular}s"


def shown(value: Any) -> str:
    """A refused value as a refusal says it: a number as a number, a text quoted."""
    if isinstance(value, str):
        return f"'{value[:40]}'"
    return f"{value:g}" if isinstance(value, float) else str(value)


def counted(count: int, singular: str, plural: str = "") -> str:
    """A count with its noun (see `noun`): "1 pair", "2 pairs", "1,234 questions"."""
    return f"{count:,} {noun(count, singular, plural)}"


def read_whole(typed: int | str, what: str, low: int, high: int, why: str = "") -> int:
    """A whole number from `low` to `high` as typed (or given), or a ServiceError in one
    sentence for text and numbers alike: "{what} must be a whole number from low to high{why},
    not 'four'" (a number said as a number)."""
    n = read_number(typed, whole=True)
    if isinstance(n, (str, bool, float)) or not low <= n <= high:
        raise ServiceError(
            f"{what} must be a whole number from {low} to {high}{why}, not {shown(n)}"
        )
    return n


class Named(Protocol):
    """What a reference can name: a stored row with an id and a name."""

    id: Any
    name: Any


NamedT = TypeVar("NamedT", bound=Named)
# The explicit forms of a reference: `id:17` is the object with id 17, `name:17` the one named
# "17"; either is read so whatever else exists (a name starting "id:" is reached by name:id:…).
REF_FORMS = ("id", "name")


def _ref_id(text: str) -> int | None:
    """`text` as an id when it is ASCII digits within the id column's range, else None."""
    if text.isascii() and text.isdigit() and len(text) <= 10 and int(text) <= MAX_WHOLE:
        return int(text)
    return None


def resolve_ref(
    kind: str,
    ref: str,
    by_id: Callable[[int], NamedT | None],
    by_name: Callable[[str], NamedT | None],
) -> NamedT | None:
    """The object `ref` names: `id:N` by id alone, `name:X` by exact name alone; otherwise its
    exact name or, all digits, its id. None when none; a ServiceError when the name is one
    object's and the id another's (docs: reference/http-api.md, "References")."""
    text = ref.strip()
    form, colon, rest = text.partition(":")
    if colon and form in REF_FORMS:
        if form == "name":
            return by_name(rest.strip())
        ident = _ref_id(rest.strip())
        return None if ident is None else by_id(ident)
    ident = _ref_id(text)
    found = None if ident is None else by_id(ident)
    named = by_name(text) if text else None
    if found is not None and named is not None and found.id != named.id:
        raise ServiceError(
            f"'{text}' names two {kind}s: {kind} {found.id} ('{found.name}') by its id and "
            f"{kind} {named.id} by its name; write id:{text} or name:{text}"
        )
    return named if named is not None else found


from ndcg_labeler.services._db import paginate, read_page  # noqa: E402  (after ServiceError: no cycle)
from ndcg_labeler.services._progress import Cancelled, Progress, no_progress  # noqa: E402

__all__ = [
    "MAX_WHOLE",
    "REF_FORMS",
    "Cancelled",
    "Progress",
    "ServiceError",
    "counted",
    "no_progress",
    "noun",
    "paginate",
    "read_number",
    "read_page",
    "read_whole",
    "resolve_ref",
    "shown",
    "url_name",
    "whole_number",
]
