"""OpenAPI pieces of machine judges' settings: the request body, the answer and the path."""

from __future__ import annotations

from typing import Any

from ndcg_labeler.views.openapi_schemas import ref

# One setting, as a number or as text typed (read and refused as `flask judges edit` does).
_NUMBER_OR_TEXT = [{"type": "number"}, {"type": "string"}]

SETTINGS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "Give one or more; the others stay.",
    "minProperties": 1,
    "additionalProperties": False,
    "properties": {
        "base_url": {
            "type": "string",
            "description": "OpenAI-compatible base URL (http:// or https://, up to 500 chars).",
        },
        "concurrency": {"oneOf": _NUMBER_OR_TEXT, "description": "Whole number, 1 to 64."},
        "timeout": {"oneOf": _NUMBER_OR_TEXT, "description": "Seconds, more than 0, up to 600."},
        "requests_per_minute": {
            "oneOf": _NUMBER_OR_TEXT,
            "description": "Whole number, 0 (no limit) to 100000.",
        },
    },
}
SETTINGS_ANSWER: dict[str, Any] = {
    "type": "object",
    "required": ["judge", "changed", "settings"],
    "properties": {
        "judge": {"type": "string"},
        "changed": {
            "type": "object",
            "description": "Each setting changed: [old, new] (empty: nothing changed).",
            "additionalProperties": {"type": "array", "minItems": 2, "maxItems": 2},
        },
        "settings": {
            "type": "object",
            "description": "base_url, concurrency, timeout, requests_per_minute after the call.",
        },
    },
}


def judge_paths(judge: dict[str, Any], errors: Any) -> dict[str, Any]:
    """The judge settings path, given the spec's judge parameter and its error responses."""
    return {
        "/api/judges/{judge}/settings": {
            "parameters": [judge],
            "post": {
                "operationId": "judgeSettings",
                "summary": "Change a judge's base URL, concurrency, timeout or rate limit "
                "(admins; `flask judges edit`).",
                "description": (
                    "Audited (judge.settings). Stored answers stay as they are; the next run "
                    "uses the new settings. The base URL is checked as when the judge was "
                    "added, and each request still goes through the outbound policy. "
                    "An ensemble is refused (change its members). Non-admins get 404."
                ),
                "requestBody": {
                    "required": True,
                    "content": {"application/json": {"schema": ref("JudgeSettings")}},
                },
                "responses": {
                    "200": {
                        "description": "What changed, and the settings now.",
                        "content": {"application/json": {"schema": ref("JudgeSettingsAnswer")}},
                    },
                    **errors(400, 401, 404, missing="No such judge (or you are not an admin)."),
                },
            },
        }
    }
