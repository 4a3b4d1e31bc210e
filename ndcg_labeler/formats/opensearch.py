"""OpenSearch Search Relevance Workbench (SRW): judgment lists and query sets as JSON.

Shapes as SRW's REST API takes and returns them (`_plugins/_search_relevance/...`):
- a judgment list: ``{"name", "description", "type": "IMPORT_JUDGMENT", "judgmentRatings":
  [{"query": text, "ratings": [{"docId": id, "rating": "3.000"}, ...]}, ...]}``; the rating may
  be a string or a number; the older map form ``"judgmentRatings": {text: [...]}`` is read too,
  as is a GET answer (``{"hits": {"hits": [{"_source": {...}}]}}`` or ``{"_source": {...}}``);
- a query set: ``{"name", "description", "sampling": "manual", "querySetQueries":
  [{"queryText": text}, ...]}`` (or a GET answer), or JSON lines ``{"queryText": text}`` as the
  SRW dashboards upload them. ``referenceAnswer`` and custom fields are not kept.

JSON has no useful line numbers: errors name the place, such as ``judgmentRatings[2].ratings[0]``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from .errors import FormatError
from .fields import check_id, parse_score
from .quepid import TextJudgment, clean_text
from .tabular import iter_json_objects
from .textio import DEFAULT_MAX_BYTES, Source, open_source


def _read(source: Source, filename: str | None, max_bytes: int) -> tuple[str, str]:
    """The file's name and its whole text (the size guard of every import applies)."""
    with open_source(source, filename, max_bytes=max_bytes) as opened:
        data = opened.stream.read()
    try:
        return opened.filename, data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FormatError(opened.filename, None, f"not UTF-8 text (byte {exc.start})") from None


def _load(source: Source, filename: str | None, max_bytes: int) -> tuple[str, Any]:
    """The file's name and its one JSON value."""
    name, text = _read(source, filename, max_bytes)
    try:
        return name, json.loads(text)
    except json.JSONDecodeError as exc:
        reason = f"invalid JSON: {exc.msg} (column {exc.colno})"
        raise FormatError(name, exc.lineno, reason) from None
    except RecursionError:
        raise FormatError(name, None, "invalid JSON: nested too deeply") from None


def _unwrap(value: Any, name: str, key: str) -> dict[str, Any]:
    """The document itself, out of a GET answer if it is one."""
    if isinstance(value, dict) and "hits" in value and key not in value:
        hits = value.get("hits", {}).get("hits") if isinstance(value["hits"], dict) else None
        if not isinstance(hits, list) or len(hits) != 1:
            raise FormatError(name, None, "a search answer must hold exactly one hit")
        value = hits[0]
    if isinstance(value, dict) and isinstance(value.get("_source"), dict) and key not in value:
        value = value["_source"]
    if not isinstance(value, dict) or key not in value:
        raise FormatError(name, None, f"expected a JSON object with '{key}'")
    return value


def _text(value: Any, name: str, where: str) -> str:
    if not isinstance(value, str) or not clean_text(value):
        raise FormatError(name, None, f"{where}: the query must be non-empty text")
    return clean_text(value)


def read_srw_judgments(
    source: Source, filename: str | None = None, *, max_bytes: int = DEFAULT_MAX_BYTES
) -> list[TextJudgment]:
    """Every rating of an SRW judgment list, in file order; a pair rated twice is an error."""
    name, value = _load(source, filename, max_bytes)
    ratings = _unwrap(value, name, "judgmentRatings")["judgmentRatings"]
    if isinstance(ratings, dict):  # the older form {query text: [ratings]}
        ratings = [{"query": q, "ratings": r} for q, r in ratings.items()]
    if not isinstance(ratings, list):
        raise FormatError(name, None, "judgmentRatings must be a list")
    out: list[TextJudgment] = []
    seen: set[tuple[str, str]] = set()
    for i, entry in enumerate(ratings):
        where = f"judgmentRatings[{i}]"
        if not isinstance(entry, dict) or not isinstance(entry.get("ratings"), list):
            raise FormatError(name, None, f'{where}: expected {{"query", "ratings": [...]}}')
        text = _text(entry.get("query"), name, where)
        if not entry["ratings"]:
            out.append(TextJudgment(text, None, None))
        for j, rating in enumerate(entry["ratings"]):
            at = f"{where}.ratings[{j}]"
            if not isinstance(rating, dict) or "docId" not in rating or "rating" not in rating:
                raise FormatError(name, None, f'{at}: expected {{"docId", "rating"}}')
            docid = check_id(str(rating["docId"]), f"{at}: docId", name, None)
            raw = rating["rating"]
            if isinstance(raw, bool) or not isinstance(raw, str | int | float):
                raise FormatError(name, None, f"{at}: rating must be a number")
            score = parse_score(str(raw).strip(), name, None, f"{at}: rating")
            if (text, docid) in seen:
                raise FormatError(
                    name, None, f"{at}: docId '{docid}' is rated twice for this query"
                )
            seen.add((text, docid))
            out.append(TextJudgment(text, docid, score))
    return out


def read_srw_query_set(
    source: Source, filename: str | None = None, *, max_bytes: int = DEFAULT_MAX_BYTES
) -> list[str]:
    """The query texts of an SRW query set (JSON document or JSON lines), repeats dropped."""
    name, text = _read(source, filename, max_bytes)
    texts: list[str] = []
    try:
        value = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        value = None  # not one JSON value: JSON lines, one {"queryText": …} per line
    if value is None or (isinstance(value, dict) and "queryText" in value):
        numbered = enumerate(text.split("\n"), 1)
        for line, obj in iter_json_objects(numbered, name):
            if not isinstance(obj.get("queryText"), str) or not clean_text(obj["queryText"]):
                raise FormatError(name, line, 'expected {"queryText": text} with non-empty text')
            texts.append(clean_text(obj["queryText"]))
    else:
        queries = _unwrap(value, name, "querySetQueries")["querySetQueries"]
        if not isinstance(queries, list):
            raise FormatError(name, None, "querySetQueries must be a list")
        for i, entry in enumerate(queries):
            where = f"querySetQueries[{i}]"
            if not isinstance(entry, dict):
                raise FormatError(name, None, f'{where}: expected {{"queryText": text}}')
            texts.append(_text(entry.get("queryText"), name, where))
    if not texts:
        raise FormatError(name, None, "the query set has no queries")
    return list(dict.fromkeys(texts))


def write_srw_judgments(
    name: str, description: str, rows: Iterable[tuple[str, str | None, int | float | None]]
) -> str:
    """An SRW judgment list (the body of PUT judgments) from (query text, docid, rating) rows."""
    grouped: dict[str, list[dict[str, str]]] = {}
    for text, docid, rating in rows:
        ratings = grouped.setdefault(text, [])
        if docid is not None and rating is not None:
            ratings.append({"docId": docid, "rating": f"{float(rating):.3f}"})
    body = {
        "name": name,
        "description": description,
        "type": "IMPORT_JUDGMENT",
        "judgmentRatings": [{"query": q, "ratings": r} for q, r in grouped.items()],
    }
    return json.dumps(body, ensure_ascii=False, indent=2) + "\n"


def write_srw_query_set(name: str, description: str, texts: Iterable[str]) -> str:
    """An SRW query set (the body of PUT query_sets, sampling manual)."""
    body = {
        "name": name,
        "description": description,
        "sampling": "manual",
        "querySetQueries": [{"queryText": text} for text in texts],
    }
    return json.dumps(body, ensure_ascii=False, indent=2) + "\n"
