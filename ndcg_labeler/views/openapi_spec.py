"""The OpenAPI 3.1 document of the JSON API (served at /api/openapi.json, shown at /api/docs)."""

from __future__ import annotations

from typing import Any

from ndcg_labeler.services import live
from ndcg_labeler.views.openapi_means import (
    INTERVAL,
    INTERVAL_KEYS,
    MEANS,
    MEANS_KEYS,
    NUMBER_OR_NULL,
)

OUTCOME = {"type": "string", "enum": ["pass", "fail", "inconclusive"]}
_REF = "#/components/schemas/"


def _ref(name: str) -> dict[str, str]:
    return {"$ref": _REF + name}


def _json(schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _errors(*codes: int) -> dict[str, Any]:
    text = {
        400: "Bad input (a malformed parameter or file; file uploads add file, line, reason).",
        401: "No valid bearer token.",
        403: "Only admins may do this.",
        404: "No such test set (or not visible to you), or no such run in it.",
        409: "The test set already has a run of this name.",
        413: "The upload is larger than the server accepts.",
    }
    return {str(code): _json(_ref("Error"), text[code]) for code in codes}


TEST_SET = {
    "name": "test_set",
    "in": "path",
    "required": True,
    "description": "Test set id or exact name (an all-digit value is tried as an id first).",
    "schema": {"type": "string", "minLength": 1},
    "example": "demo",
}
RUN = {
    "name": "run",
    "in": "path",
    "required": True,
    "description": "Run id or exact name within the test set.",
    "schema": {"type": "string", "minLength": 1},
    "example": "A",
}

SCHEMAS: dict[str, Any] = {
    "Error": {
        "type": "object",
        "required": ["error", "detail"],
        "properties": {
            "error": {"type": "string", "description": "The HTTP status's name."},
            "detail": {"type": "string", "description": "What went wrong, for a person."},
            "file": {"type": ["string", "null"]},
            "line": {"type": ["integer", "null"]},
            "reason": {"type": ["string", "null"]},
        },
    },
    "Run": {
        "type": "object",
        "required": [
            "id",
            "name",
            "filename",
            "format",
            "sha256",
            "depth",
            "num_queries",
            "num_entries",
            "uploaded_at",
            "notes",
            "scores_url",
            "k",
            "mean_ndcg",
            *INTERVAL_KEYS,
            *MEANS_KEYS,
        ],
        "properties": {
            "id": {"type": "integer"},
            "name": {"type": "string"},
            "filename": {"type": "string"},
            "format": {"type": "string"},
            "sha256": {"type": "string"},
            "depth": {"type": "integer"},
            "num_queries": {"type": "integer"},
            "num_entries": {"type": "integer"},
            "uploaded_at": {"type": "string"},
            "notes": {"type": "string"},
            "scores_url": {"type": "string"},
            "k": {"type": "integer", "description": "The cutoff of the mean (10)."},
            "mean_ndcg": {
                **NUMBER_OR_NULL,
                "description": "Mean NDCG@10 under the default options (`flask run list`).",
            },
            **INTERVAL,
            **MEANS,
            "report": {
                "type": ["object", "null"],
                "description": "Upload validation report: lines, queries and entries read and "
                "stored, `unknown_queries` and `missing_queries` (count, examples), and "
                "`docids_not_in_corpus` (count, entries, examples, corpus: ranked docids no "
                "chunk with text has; kept, unjudged).",
            },
        },
    },
    "RunList": {
        "type": "object",
        "required": ["runs"],
        "properties": {"runs": {"type": "array", "items": _ref("Run")}},
    },
    "QueryScore": {
        "type": "object",
        "required": ["qid", "ndcg", "dcg", "idcg", "gap", "judged_at_k", "num_rel"],
        "properties": {
            "qid": {"type": "string"},
            "ndcg": {**NUMBER_OR_NULL, "description": "null where IDCG@k is 0 (undefined)."},
            "dcg": {"type": "number"},
            "idcg": {"type": "number"},
            "gap": {"type": "number"},
            "judged_at_k": {"type": "number"},
            "num_rel": {"type": "integer"},
        },
    },
    "Scores": {
        "type": "object",
        "required": [
            "testset",
            "run",
            "k",
            "gain",
            "ideal",
            "judged_only",
            "aggregation",
            "labels",
            "mean_ndcg",
            *INTERVAL_KEYS,
            *MEANS_KEYS,
            "queries",
        ],
        "properties": {
            "testset": {"type": "string"},
            "run": {"type": "string"},
            "k": {"type": "integer"},
            "gain": {"type": "string"},
            "ideal": {"type": "string"},
            "judged_only": {"type": "boolean"},
            "aggregation": {
                "type": "string",
                "description": "The policy that combined several people's grades of a pair.",
            },
            "labels": {
                "type": "string",
                "description": "Whose grades the scores rest on: human, machine:JUDGE or "
                "fill:JUDGE.",
            },
            "mean_ndcg": {
                **NUMBER_OR_NULL,
                "description": "Mean NDCG@k over the queries with a defined value "
                "(`queries_in_mean`).",
            },
            **INTERVAL,
            **MEANS,
            "queries": {"type": "array", "items": _ref("QueryScore")},
        },
    },
    "GateRequest": {
        "type": "object",
        "required": ["baseline", "candidate"],
        "properties": {
            "baseline": {"type": "string", "description": "Run id or name."},
            "candidate": {"type": "string", "description": "Run id or name."},
            "measure": {
                "oneOf": [
                    {"type": "string"},
                    {"type": "array", "items": {"type": "string"}},
                ],
                "description": "ndcg_cut_K, P_K, recall_K, map, recip_rank (default ndcg_cut_10).",
            },
            "max_drop": {"type": "number", "minimum": 0, "default": 0.01},
            "alpha": {"type": "number", "minimum": 0, "maximum": 1, "default": 0.05},
            "labels": {
                "type": "string",
                "default": "human",
                "description": "human, machine:JUDGE or fill:JUDGE.",
            },
        },
        "example": {"baseline": "A", "candidate": "B", "measure": ["ndcg_cut_10", "map"]},
    },
    "GateMeasure": {
        "type": "object",
        "required": [
            "measure",
            "outcome",
            "baseline",
            "candidate",
            "delta",
            "delta_sd",
            "queries",
            "paired_queries",
            "p_value",
            "p_adjusted",
            "p_noninferiority",
            "regressed",
            "queries_needed",
            "note",
            "sample_size",
        ],
        "properties": {
            "measure": {"type": "string"},
            "outcome": OUTCOME,
            "baseline": NUMBER_OR_NULL,
            "candidate": NUMBER_OR_NULL,
            "delta": NUMBER_OR_NULL,
            "delta_sd": NUMBER_OR_NULL,
            "queries": {"type": "integer", "minimum": 0},
            "paired_queries": {
                "type": "integer",
                "minimum": 0,
                "description": "Queries where both runs have a defined value: the pairs the "
                "tests use (the same number as `queries`).",
            },
            "p_value": NUMBER_OR_NULL,
            "p_adjusted": NUMBER_OR_NULL,
            "p_noninferiority": NUMBER_OR_NULL,
            "regressed": {"type": "boolean", "description": "outcome is fail."},
            "queries_needed": {
                "type": ["integer", "null"],
                "description": "Paired queries that would decide an inconclusive measure.",
            },
            "note": {"type": "string"},
            "sample_size": {
                "type": "object",
                "required": ["power", "observed_delta", "delta", "delta_queries"],
                "properties": {
                    "power": {"type": "number"},
                    "observed_delta": {"type": ["integer", "null"]},
                    "delta": {"type": "number"},
                    "delta_queries": {"type": ["integer", "null"]},
                },
            },
        },
    },
    "GateResult": {
        "type": "object",
        "required": [
            "testset",
            "baseline",
            "candidate",
            "labels",
            "machine_labels",
            "max_drop",
            "alpha",
            "outcome",
            "passed",
            "paired_queries",
            "measures",
        ],
        "properties": {
            "testset": {"type": "string"},
            "baseline": {"type": "string"},
            "candidate": {"type": "string"},
            "labels": {"type": "string"},
            "machine_labels": {"type": "boolean"},
            "max_drop": {"type": "number"},
            "alpha": {"type": "number"},
            "outcome": OUTCOME,
            "passed": {"type": "boolean", "description": "outcome is pass."},
            "paired_queries": {
                "type": "integer",
                "minimum": 0,
                "description": "The fewest paired queries any measure was decided on.",
            },
            "measures": {"type": "array", "items": _ref("GateMeasure")},
        },
    },
}

PATHS: dict[str, Any] = {
    "/api/testsets/{test_set}/runs": {
        "parameters": [TEST_SET],
        "get": {
            "operationId": "listRuns",
            "summary": "List the test set's runs, oldest first.",
            "responses": {"200": _json(_ref("RunList"), "The runs."), **_errors(401, 404)},
        },
        "post": {
            "operationId": "uploadRun",
            "summary": "Upload a run (admins): TREC, CSV/TSV, JSONL or MS MARCO, gzip or not.",
            "requestBody": {
                "required": True,
                "content": {
                    "multipart/form-data": {
                        "schema": {
                            "type": "object",
                            "required": ["file"],
                            "properties": {
                                "file": {"type": "string", "format": "binary"},
                                "name": {
                                    "type": "string",
                                    "description": "Default: the file's name without extensions.",
                                },
                                "depth": {"type": "integer", "minimum": 1},
                                "notes": {"type": "string"},
                            },
                        }
                    }
                },
            },
            "responses": {
                "201": _json(_ref("Run"), "The stored run with its validation report."),
                **_errors(400, 401, 403, 404, 409, 413),
            },
        },
    },
    "/api/testsets/{test_set}/runs/{run}/scores": {
        "parameters": [TEST_SET, RUN],
        "get": {
            "operationId": "runScores",
            "summary": "The run's current NDCG@k per query and its mean (`flask run score`).",
            "parameters": [
                {
                    "name": "k",
                    "in": "query",
                    "schema": {"type": "integer", "default": 10},
                    "example": 10,
                },
                {
                    "name": "gain",
                    "in": "query",
                    "schema": {"type": "string", "enum": ["linear", "exp"]},
                    "example": "exp",
                },
                {
                    "name": "ideal",
                    "in": "query",
                    "schema": {"type": "string", "enum": ["judged", "retrieved"]},
                    "example": "judged",
                },
                {
                    "name": "judged_only",
                    "in": "query",
                    "description": "true (or 1, on, yes): drop unjudged chunks from each "
                    "ranking first (condensed lists).",
                    "schema": {"type": "boolean", "default": False},
                    "example": False,
                },
                {
                    "name": "aggregation",
                    "in": "query",
                    "description": "How several people's grades of a pair combine "
                    "(default: the test set's policy).",
                    "schema": {"type": "string", "enum": list(live.policies())},
                    "example": "median",
                },
                {
                    "name": "labels",
                    "in": "query",
                    "description": "Whose grades: human (default), machine:JUDGE (that "
                    "judge's only) or fill:JUDGE (human where a pair has one, the judge's "
                    "elsewhere).",
                    "schema": {"type": "string", "default": "human"},
                    "example": "human",
                },
            ],
            "responses": {
                "200": _json(_ref("Scores"), "The scores."),
                **_errors(400, 401, 403, 404),
            },
        },
    },
    "/api/testsets/{test_set}/gate": {
        "parameters": [TEST_SET],
        "post": {
            "operationId": "gate",
            "summary": "Release gate: pass, fail or inconclusive against a baseline (`flask gate`)",
            "description": (
                "Per measure, on the paired queries with d = candidate − baseline: fail when "
                "mean d < −max_drop and the Holm-adjusted two-sided paired t-test has p < "
                "alpha; pass when not failing and the one-sided test of H0: mean d ≤ −max_drop "
                "has p_noninferiority < alpha; inconclusive otherwise, with queries_needed. "
                "The run passes when every measure passes. "
                "`format=junit` or `format=markdown` return the CI reports instead of JSON."
            ),
            "parameters": [
                {
                    "name": "format",
                    "in": "query",
                    "schema": {"type": "string", "enum": ["json", "junit", "markdown"]},
                    "example": "json",
                }
            ],
            "requestBody": {
                "required": True,
                "content": {"application/json": {"schema": _ref("GateRequest")}},
            },
            "responses": {
                "200": {
                    "description": "The verdict (HTTP 200 whether it passed or not).",
                    "content": {
                        "application/json": {"schema": _ref("GateResult")},
                        "application/xml": {"schema": {"type": "string"}},
                        "text/markdown": {"schema": {"type": "string"}},
                    },
                },
                **_errors(400, 401, 404),
            },
        },
    },
    "/api/openapi.json": {
        "get": {
            "operationId": "openapi",
            "summary": "This document.",
            "security": [],
            "responses": {"200": _json({"type": "object"}, "The OpenAPI 3.1 document.")},
        }
    },
    "/api/docs": {
        "get": {
            "operationId": "reference",
            "summary": "This document as a readable page.",
            "security": [],
            "responses": {
                "200": {
                    "description": "HTML reference.",
                    "content": {"text/html": {"schema": {"type": "string"}}},
                }
            },
        }
    },
}


def openapi_document(server_url: str) -> dict[str, Any]:
    """The whole document, with this server's base URL."""
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "ndcg-labeler API",
            "version": "1",
            "description": (
                "Upload retriever runs, read their live scores and gate releases on them. "
                "Authenticate with a personal token from the Account page: "
                '`Authorization: Bearer <token>`. Errors are JSON `{"error", "detail"}`.'
            ),
        },
        "servers": [{"url": server_url.rstrip("/") or "/"}],
        "security": [{"bearer": []}],
        "paths": PATHS,
        "components": {
            "schemas": SCHEMAS,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
    }
