"""Mapping a search engine's JSON response to ranked hits with JMESPath expressions.

Pure: a parsed JSON document and expressions in, hits out, or a HitsError that says exactly
which expression gave what. Presets cover the response shapes of common engines.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ndcg_labeler.formats.fields import ASCII_WS


class HitsError(ValueError):
    """The response does not fit the mapping; the message names the expression and the hit."""


@dataclass(frozen=True)
class Hit:
    """One result: the docid, its score (None: use the rank order) and its text (optional)."""

    docid: str
    score: float | None
    text: str | None


@dataclass(frozen=True)
class Mapping:
    """Where the hits are and, per hit, the docid, score and text (JMESPath expressions)."""

    hits: str
    id: str
    score: str = ""
    text: str = ""


def preset(name: str, text_field: str = "") -> Mapping:
    """The mapping of a known engine's response (text from `text_field` when given)."""
    if name in ("elasticsearch", "opensearch"):
        return Mapping("hits.hits", "_id", "_score", f"_source.{text_field}" if text_field else "")
    if name == "solr":
        return Mapping("response.docs", "id", "score", text_field)
    if name == "vespa":
        text = f"fields.{text_field}" if text_field else ""
        return Mapping("root.children", "fields.documentid || id", "relevance", text)
    if name == "list":
        return Mapping("@", "id", "score", text_field)
    raise HitsError(
        f"unknown preset '{name}': choose elasticsearch, opensearch, solr, vespa or list"
    )


PRESETS = ("elasticsearch", "opensearch", "solr", "vespa", "list")


def check_mapping(mapping: Mapping) -> None:
    """Refuse expressions that do not compile (said before anything is fetched)."""
    import jmespath
    from jmespath.exceptions import JMESPathError

    for what, expression in (("hits", mapping.hits), ("id", mapping.id)):
        if not expression:
            raise HitsError(f"the {what} expression is required")
    for what, expression in vars(mapping).items():
        if expression:
            try:
                jmespath.compile(expression)
            except JMESPathError as exc:
                raise HitsError(
                    f"the {what} expression '{expression}' is not JMESPath: {exc}"
                ) from None


def map_hits(document: Any, mapping: Mapping) -> list[Hit]:
    """The hits of one response, in the engine's order."""
    import jmespath

    found = jmespath.search(mapping.hits, document)
    if not isinstance(found, list):
        kind = "null" if found is None else type(found).__name__
        raise HitsError(f"the hits expression '{mapping.hits}' gave {kind}, not a list")
    hits = []
    for n, item in enumerate(found, start=1):
        value = jmespath.search(mapping.id, item)
        docid = "" if value is None or isinstance(value, (dict, list)) else str(value).strip()
        if not docid:
            raise HitsError(f"hit {n}: the id expression '{mapping.id}' gave no docid")
        if any(ch in docid for ch in ASCII_WS):
            # As in an uploaded run or corpus: a run file separates its fields by whitespace.
            raise HitsError(f"hit {n}: the docid '{docid}' contains whitespace")
        score = None
        if mapping.score:
            value = jmespath.search(mapping.score, item)
            if value is not None:
                if isinstance(value, bool) or not isinstance(value, (int, float)):
                    raise HitsError(
                        f"hit {n}: the score expression '{mapping.score}' gave {value!r}"
                    )
                if not math.isfinite(float(value)):
                    raise HitsError(f"hit {n}: the score is not a finite number ({value!r})")
                score = float(value)
        text = None
        if mapping.text:
            value = jmespath.search(mapping.text, item)
            if isinstance(value, list):
                value = " ".join(str(v) for v in value)
            text = None if value is None else str(value)
        hits.append(Hit(docid, score, text))
    return hits
