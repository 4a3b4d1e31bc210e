"""OpenAPI pieces of the run lists and retention (the list's parameters, archive, tags) and the
token check's 429, which every operation behind a token shares."""

from __future__ import annotations

from typing import Any

from ndcg_labeler.views.openapi_schemas import ref


def _query(name: str, description: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": name,
        "in": "query",
        "required": False,
        "description": description,
        "schema": schema,
    }


def _json(schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


THROTTLED: dict[str, Any] = {
    **_json(
        ref("Error"),
        "Too many failed API tokens from this address (NDCG_API_AUTH_LIMIT): refused, "
        "whatever the token, until Retry-After seconds have passed.",
    ),
    "headers": {
        "Retry-After": {
            "description": "Seconds until this address may try a token again.",
            "schema": {"type": "integer", "minimum": 0},
        }
    },
}

_ERRORS = {
    "400": _json(ref("Error"), "Bad input (a malformed parameter or body)."),
    "401": _json(ref("Error"), "No valid bearer token."),
    "403": _json(ref("Error"), "Only admins may do this."),
    "404": _json(ref("Error"), "No such test set (or not visible to you), or no such run in it."),
    "429": THROTTLED,
}

LIST_PARAMETERS = [
    _query("q", "Text in the run's name or notes (case-insensitive).", {"type": "string"}),
    _query("tag", "Only runs with this tag.", {"type": "string"}),
    _query(
        "archived",
        "yes: archived runs only; no: whole runs only; all (default).",
        {"type": "string", "enum": ["yes", "no", "all"]},
    ),
    _query(
        "sort",
        "oldest (default), newest, name, best or worst (by the mean NDCG@10 stored when each "
        "run was last scored), entries.",
        {"type": "string", "enum": ["oldest", "newest", "name", "best", "worst", "entries"]},
    ),
    _query(
        "page",
        "Page number, from 1 (400 for anything else); past the last page: no runs, with the "
        "total and next_page null.",
        {"type": "integer", "minimum": 1},
    ),
    _query(
        "per_page",
        "Runs per page (default 50).",
        {"type": "integer", "minimum": 1, "maximum": 200},
    ),
]


def _body(schema: dict[str, Any]) -> dict[str, Any]:
    return {"required": True, "content": {"application/json": {"schema": schema}}}


ARCHIVE: dict[str, Any] = {
    "post": {
        "operationId": "archiveRun",
        "summary": "Archive a run (admins): keep its stored scores and top `keep` entries per "
        "query, drop the rest; it still scores at cutoffs up to `keep` (at least 10).",
        "requestBody": _body(
            {
                "type": "object",
                "required": ["keep"],
                "properties": {"keep": {"type": "integer", "minimum": 10}},
            }
        ),
        "responses": {
            "200": _json(ref("Run"), "The archived run, with entries_dropped."),
            **_ERRORS,
        },
    }
}

TAGS: dict[str, Any] = {
    "post": {
        "operationId": "tagRun",
        "summary": "Add and remove a run's tags and pin or unpin it (admins).",
        "requestBody": _body(
            {
                "type": "object",
                "properties": {
                    "add": {"type": "array", "items": {"type": "string"}},
                    "remove": {"type": "array", "items": {"type": "string"}},
                    "pinned": {"type": "boolean"},
                },
            }
        ),
        "responses": {"200": _json(ref("Run"), "The run."), **_ERRORS},
    }
}
