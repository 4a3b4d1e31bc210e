"""OpenAPI pieces of the series: the list of a test set's series and one series' trend."""

from __future__ import annotations

from typing import Any

from ndcg_labeler.views.openapi_schemas import ref

_NUMBER = {"type": ["number", "null"]}
_TEXT = {"type": ["string", "null"]}
_WHOLE = {"type": ["integer", "null"]}

SCHEMAS: dict[str, Any] = {
    "SeriesList": {
        "type": "object",
        "required": ["series"],
        "properties": {
            "series": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["series", "runs", "latest", "latest_id"],
                    "properties": {
                        "series": {"type": "string"},
                        "runs": {"type": "integer", "minimum": 1},
                        "latest": {"type": "string", "description": "The newest run's name."},
                        "latest_id": {"type": "integer"},
                    },
                },
            }
        },
    },
    "SeriesTrend": {
        "type": "object",
        "description": "`flask run series SET NAME --json`, with the latest checks.",
        "required": ["series", "k", "alpha", "test", "points", "left_out", "baseline", "checks"],
        "properties": {
            "series": {"type": "string"},
            "k": {"type": "integer"},
            "alpha": {"type": "number"},
            "test": {"type": "string"},
            "points": {
                "type": "array",
                "description": "The series' runs in upload order, each scored at k.",
                "items": {
                    "type": "object",
                    "required": ["run", "run_id", "mean_ndcg", "n", "delta", "significant"],
                    "properties": {
                        "run": {"type": "string"},
                        "run_id": {"type": "integer"},
                        "uploaded_at": _TEXT,
                        "mean_ndcg": _NUMBER,
                        "n": {"type": "integer"},
                        "ci_low": _NUMBER,
                        "ci_high": _NUMBER,
                        "ci_method": _TEXT,
                        "mean_judged": _NUMBER,
                        "previous": {**_TEXT, "description": "The run compared against."},
                        "delta": {**_NUMBER, "description": "Mean change against previous."},
                        "p_value": _NUMBER,
                        "paired_queries": {"type": "integer"},
                        "significant": {"type": "boolean"},
                    },
                },
            },
            "left_out": {
                "type": "array",
                "description": "Runs archived shallower than k: they cannot score at k.",
                "items": {
                    "type": "object",
                    "properties": {
                        "run": {"type": "string"},
                        "run_id": {"type": "integer"},
                        "kept_depth": _WHOLE,
                    },
                },
            },
            "baseline": {
                "type": "object",
                "description": "The run scheduled runs are gated against, and why.",
                "required": ["run", "why"],
                "properties": {"run": _TEXT, "why": {"type": "string"}},
            },
            "checks": {
                "type": "array",
                "description": "The series' scheduled checks, newest first.",
                "items": {
                    "type": "object",
                    "required": ["outcome", "run_id", "baseline_run_id", "summary"],
                    "properties": {
                        "outcome": {"type": "string"},
                        "endpoint": {"type": "string"},
                        "endpoint_id": _WHOLE,
                        "endpoint_current": _TEXT,
                        "slot": _TEXT,
                        "run_id": _WHOLE,
                        "baseline_run_id": _WHOLE,
                        "summary": {"type": "string"},
                        "alert": _TEXT,
                        "alert_error": _TEXT,
                        "created_at": _TEXT,
                    },
                },
            },
        },
    },
}


def series_paths(test_set: dict[str, Any], errors: Any) -> dict[str, Any]:
    """The series paths, given the spec's test-set parameter and its error responses."""
    name = {
        "name": "name",
        "in": "path",
        "required": True,
        "description": "The series' name (runs join it at upload: the multipart field series).",
        "schema": {"type": "string", "minLength": 1},
        "example": "nightly",
    }
    k = {
        "name": "k",
        "in": "query",
        "description": "The cutoff of NDCG@k.",
        "schema": {"type": "integer", "minimum": 1, "default": 10},
        "example": 10,
    }
    return {
        "/api/testsets/{test_set}/series": {
            "parameters": [test_set],
            "get": {
                "operationId": "listSeries",
                "summary": "The test set's series, each with its run count and latest run "
                "(`flask run series SET --json`).",
                "responses": {
                    "200": _json(ref("SeriesList"), "The series by name."),
                    **errors(401, 404),
                },
            },
        },
        "/api/testsets/{test_set}/series/{name}": {
            "parameters": [test_set, name],
            "get": {
                "operationId": "seriesTrend",
                "summary": "One series over time: each run's mean NDCG@k with its 95% interval "
                "and its change against the previous run (paired t-test), the baseline and the "
                "latest scheduled checks (`flask run series SET NAME --json`).",
                "parameters": [k],
                "responses": {
                    "200": _json(ref("SeriesTrend"), "The trend."),
                    **errors(
                        400,
                        401,
                        404,
                        missing="No such test set (or not visible to you), or no such series "
                        "in it.",
                    ),
                },
            },
        },
    }


def _json(schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}
