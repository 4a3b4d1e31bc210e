"""The OpenAPI 3.1 document of the JSON API (served at /api/openapi.json, shown at /api/docs)."""

from __future__ import annotations

from typing import Any

from ndcg_labeler.views.openapi_estimates import (
    COMPARE_PATH,
    MEASURE,
    NEXT_LABELS_PARAMETERS,
    SCORE_PARAMETERS,
)
from ndcg_labeler.views.openapi_estimates import SCHEMAS as ESTIMATE_SCHEMAS
from ndcg_labeler.views.openapi_interop import (
    IMPORT_PEER_FIELDS,
    IMPORT_QUEUED,
    PREFER,
    RUN_FORMAT,
    UPLOAD_QUEUED,
    interop_paths,
)
from ndcg_labeler.views.openapi_judges import SETTINGS_ANSWER, SETTINGS_SCHEMA, judge_paths
from ndcg_labeler.views.openapi_runs import ARCHIVE, LIST_PARAMETERS, TAGS, THROTTLED
from ndcg_labeler.views.openapi_schemas import SCHEMAS, ref
from ndcg_labeler.views.openapi_series import SCHEMAS as SERIES_SCHEMAS
from ndcg_labeler.views.openapi_series import series_paths


def _json(schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _errors(*codes: int, blind: str | None = None, missing: str | None = None) -> dict[str, Any]:
    """The error responses; `blind`: the 403 is a blind test set's (what it withholds), not
    an action for admins only; `missing`: what a 404 did not find, when not a test set or run.
    A 401 brings its 429: the token check that answers one answers the other too."""
    forbidden = (
        f"The test set is judged blind (several judgments per pair) and you are not an admin: "
        f"{blind} are for admins."
        if blind
        else "Only admins may do this."
    )
    text = {
        400: "Bad input (a malformed parameter or file; file uploads add file, line, reason).",
        401: "No valid bearer token.",
        403: forbidden,
        404: missing or "No such test set (or not visible to you), or no such run in it.",
        409: "The test set already has a run of this name.",
        413: "The upload is larger than the server accepts.",
    }
    out = {str(code): _json(ref("Error"), text[code]) for code in codes}
    if 401 in codes:
        out["429"] = THROTTLED
    return out


TEST_SET = {
    "name": "test_set",
    "in": "path",
    "required": True,
    "description": "Test set id or exact name; `id:N` or `name:X` to choose when a plain "
    "value is one test set's id and another's name (400 then).",
    "schema": {"type": "string", "minLength": 1},
    "example": "demo",
}
RUN = {
    "name": "run",
    "in": "path",
    "required": True,
    "description": "Run id or exact name within the test set; `id:N` or `name:X` to choose "
    "when a plain value is one run's id and another's name (400 then).",
    "schema": {"type": "string", "minLength": 1},
    "example": "A",
}


_TEST_SETS = {
    "type": "object",
    "required": ["test_sets"],
    "properties": {
        "test_sets": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["id", "name", "scale_max", "queries", "chunks"],
                "properties": {
                    "id": {"type": "integer"},
                    "name": {"type": "string"},
                    "scale_max": {"type": "integer", "enum": [3, 4]},
                    "aggregation": {"type": "string"},
                    "queries": {"type": "integer"},
                    "chunks": {"type": "integer"},
                    "pairs": {"type": "integer"},
                    "judged_pairs": {"type": "integer"},
                    "graded_outside_pool": {
                        "type": "integer",
                        "description": "(query, chunk) pairs outside the pool with a grade "
                        "(given in place on the drill-down or compare page): they count in "
                        "scores, not in pairs or judged_pairs.",
                    },
                    "runs_url": {"type": "string"},
                },
            },
        }
    },
}
_QRELS = {
    "type": "object",
    "required": ["qrels"],
    "properties": {
        "qrels": {
            "type": "object",
            "description": "{qid: {docid: grade}}: the grades scoring uses (pytrec_eval's shape).",
            "additionalProperties": {
                "type": "object",
                "additionalProperties": {"type": "integer"},
            },
        }
    },
}
_IMPORT_FILES = {
    kind: {"type": "string", "format": "binary", "description": description}
    for kind, description in (
        ("queries", "Queries: TSV qid<TAB>text, CSV, JSONL or TREC topics."),
        ("corpus", "Chunks: CSV/TSV docid,text, JSONL or BEIR corpus.jsonl."),
        ("pool", "Pairs to judge: a TREC run or qid,docid pairs."),
        ("qrels", "Existing judgments: TREC qrels."),
    )
}
_QIDS = {"type": "array", "items": {"type": "string"}}
SCHEMAS["AuditSample"] = {
    "type": "object",
    "required": ["queries", "seed", "audited", "no_pool_pairs", "query_count"],
    "properties": {
        "queries": {**_QIDS, "description": "The sampled qids in draw order."},
        "seed": {
            "type": ["integer", "null"],
            "description": "The draw's seed; null before the first draw.",
        },
        "audited": {
            **_QIDS,
            "description": "Sampled qids whose every pool pair has a human grade (a person's "
            "judgment or an imported qrel; machine grades do not count).",
        },
        "no_pool_pairs": {**_QIDS, "description": "Sampled qids without pool pairs."},
        "query_count": {"type": "integer", "description": "The test set's queries."},
    },
}
SCHEMAS["AuditDraw"] = {
    "type": "object",
    "required": ["queries"],
    "properties": {
        "queries": {"type": "integer", "minimum": 1, "description": "N (the sample only grows)."},
        "seed": {"type": "integer", "minimum": 0, "description": "The first draw's seed."},
        "reseed": {"type": "boolean", "description": "Replace the sample by a new draw."},
    },
}
JUDGE = {
    "name": "judge",
    "in": "path",
    "required": True,
    "description": "Judge id or exact name; `id:N` or `name:X` to choose when a plain value "
    "is one judge's id and another's name (400 then).",
    "schema": {"type": "string", "minLength": 1},
    "example": "gpt",
}

PATHS: dict[str, Any] = {
    "/api/testsets": {
        "get": {
            "operationId": "listTestSets",
            "summary": "The test sets your token may see, with their sizes.",
            "responses": {"200": _json(_TEST_SETS, "The test sets."), **_errors(401)},
        },
    },
    "/api/testsets/{test_set}/qrels": {
        "parameters": [TEST_SET],
        "get": {
            "operationId": "qrels",
            "summary": "The grades scoring uses: JSON {qid: {docid: grade}}, or TREC qrels text.",
            "parameters": [
                {
                    "name": "format",
                    "in": "query",
                    "schema": {"type": "string", "enum": ["json", "trec"], "default": "json"},
                }
            ],
            "responses": {
                "200": {
                    "description": "The qrels.",
                    "content": {
                        "application/json": {"schema": _QRELS},
                        "text/plain": {"schema": {"type": "string"}},
                    },
                },
                **_errors(400, 401, 403, 404, blind="its grades"),
            },
        },
    },
    "/api/testsets/{test_set}/import": {
        "parameters": [TEST_SET],
        "post": {
            "operationId": "importFiles",
            "parameters": [PREFER],
            "summary": "Import queries, corpus, pool and/or qrels, or one peer's file or "
            "ir_datasets name (admins), all or nothing.",
            "requestBody": {
                "required": True,
                "content": {
                    "multipart/form-data": {
                        "schema": {
                            "type": "object",
                            "properties": {
                                **_IMPORT_FILES,
                                **IMPORT_PEER_FIELDS,
                                "source": {
                                    "type": "string",
                                    "description": "Who the qrels' judgments belong to.",
                                },
                                "only_referenced": {
                                    "type": "string",
                                    "enum": ["true", "false", "1", "0", "on", "off", "yes", "no"],
                                    "description": "Keep only the corpus chunks that the test "
                                    "set's pools, qrels and runs (or this import's) name.",
                                },
                            },
                        }
                    }
                },
            },
            "responses": {
                "201": _json(
                    {
                        "type": "object",
                        "required": ["report", "files"],
                        "properties": {
                            "report": {"type": "array", "items": {"type": "string"}},
                            "files": {"type": "array", "items": {"type": "string"}},
                            "nothing_new": {
                                "type": "boolean",
                                "description": "True when the import created and changed "
                                "nothing (report is empty), as a peer's file already imported.",
                            },
                            "message": {
                                "type": ["string", "null"],
                                "description": "With nothing_new: what `flask testset import` "
                                "prints then; else null.",
                            },
                        },
                    },
                    "What the import created, changed and found unchanged.",
                ),
                "202": IMPORT_QUEUED,
                **_errors(400, 401, 403, 404, 413),
            },
        },
    },
    "/api/testsets/{test_set}/runs": {
        "parameters": [TEST_SET],
        "get": {
            "operationId": "listRuns",
            "summary": "One page of the test set's runs (oldest first unless ?sort= says).",
            "parameters": LIST_PARAMETERS,
            "responses": {"200": _json(ref("RunList"), "The runs."), **_errors(400, 401, 404)},
        },
        "post": {
            "operationId": "uploadRun",
            "parameters": [PREFER],
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
                                "format": RUN_FORMAT,
                                "series": {
                                    "type": "string",
                                    "description": "The series the run joins (e.g. nightly).",
                                },
                            },
                        }
                    }
                },
            },
            "responses": {
                "201": _json(ref("Run"), "The stored run with its validation report."),
                "202": UPLOAD_QUEUED,
                **_errors(400, 401, 403, 404, 409, 413),
            },
        },
    },
    "/api/testsets/{test_set}/status": {
        "parameters": [TEST_SET],
        "get": {
            "operationId": "testSetStatus",
            "summary": "The test set's checklist and the next action for the token's owner.",
            "responses": {"200": _json(ref("Checklist"), "The checklist."), **_errors(401, 404)},
        },
    },
    "/api/testsets/{test_set}/runs/{run}/archive": {"parameters": [TEST_SET, RUN], **ARCHIVE},
    "/api/testsets/{test_set}/runs/{run}/tags": {"parameters": [TEST_SET, RUN], **TAGS},
    "/api/testsets/{test_set}/runs/{run}/scores": {
        "parameters": [TEST_SET, RUN],
        "get": {
            "operationId": "runScores",
            "summary": "The run's current NDCG@k per query and its mean (`flask run score`).",
            "parameters": [*SCORE_PARAMETERS, MEASURE],
            "responses": {
                "200": _json(ref("Scores"), "The scores."),
                **_errors(400, 401, 403, 404, blind="per-query scores"),
            },
        },
    },
    "/api/testsets/{test_set}/next-labels": {
        "parameters": [TEST_SET],
        "get": {
            "operationId": "nextLabels",
            "summary": "What to label next to decide between runs a and b "
            "(`flask pool --for-compare`).",
            "description": (
                "The unjudged pairs (no grade from people; machine grades do not count) of run "
                "a's or run b's top depth, by weight = top grade × |1/log2(rank_a + 1) − "
                "1/log2(rank_b + 1)|, best first, and the labels remaining before the "
                "comparison of NDCG@k is robust."
            ),
            "parameters": NEXT_LABELS_PARAMETERS,
            "responses": {
                "200": _json(ref("NextLabels"), "The ordered pairs and the flip test."),
                **_errors(400, 401, 403, 404, blind="per-pair figures"),
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
                "The run passes when every measure passes. Under labels=ppi:JUDGE the same "
                "rules apply to the PPI++ estimate of mean d over all queries, with z-tests in "
                "place of t-tests, and a measure stays inconclusive below 10 audited queries. "
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
                "content": {"application/json": {"schema": ref("GateRequest")}},
            },
            "responses": {
                "200": {
                    "description": "The verdict (HTTP 200 whether it passed or not).",
                    "content": {
                        "application/json": {"schema": ref("GateResult")},
                        "application/xml": {"schema": {"type": "string"}},
                        "text/markdown": {"schema": {"type": "string"}},
                    },
                },
                **_errors(400, 401, 404),
            },
        },
    },
    "/api/testsets/{test_set}/compare": {
        "parameters": [TEST_SET],
        "get": {
            **COMPARE_PATH["get"],
            "responses": {
                "200": _json(ref("Comparison"), "The comparison."),
                **_errors(400, 401, 403, 404, blind="per-query scores"),
            },
        },
    },
    "/api/testsets/{test_set}/judges/{judge}/audit": {
        "parameters": [TEST_SET, JUDGE],
        "get": {
            "operationId": "auditSample",
            "summary": "A judge's audit sample: seed, sampled qids, which are audited now.",
            "responses": {
                "200": _json(ref("AuditSample"), "The sample (empty before the first draw)."),
                **_errors(401, 404),
            },
        },
        "post": {
            "operationId": "drawAuditSample",
            "summary": "Draw or extend a judge's audit sample (admins; `flask judges audit`).",
            "description": (
                "N of the test set's queries at random: the qids in byte order, permuted by "
                "numpy.random.default_rng(seed), first N; a larger N later extends the sample. "
                "Another seed for a drawn sample, or a smaller N, is refused unless reseed."
            ),
            "requestBody": {
                "required": True,
                "content": {"application/json": {"schema": ref("AuditDraw")}},
            },
            "responses": {
                "200": _json(ref("AuditSample"), "The sample after the draw."),
                **_errors(400, 401, 403, 404),
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

PATHS.update(interop_paths(TEST_SET, RUN, _errors))
PATHS.update(judge_paths(JUDGE, _errors))
PATHS.update(series_paths(TEST_SET, _errors))
SCHEMAS.update(SERIES_SCHEMAS)
SCHEMAS["JudgeSettings"] = SETTINGS_SCHEMA
SCHEMAS["JudgeSettingsAnswer"] = SETTINGS_ANSWER


def openapi_document(server_url: str) -> dict[str, Any]:
    """The whole document, with this server's base URL."""
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "ndcg-labeler API",
            "version": "1",
            "description": (
                "Upload retriever runs, read their live scores and gate releases on them; "
                "draw machine judges' audit samples and change their settings. "
                "Authenticate with a personal token from the Account page: "
                '`Authorization: Bearer <token>`. Errors are JSON `{"error", "detail"}`.'
            ),
        },
        "servers": [{"url": server_url.rstrip("/") or "/"}],
        "security": [{"bearer": []}],
        "paths": PATHS,
        "components": {
            "schemas": {**SCHEMAS, **ESTIMATE_SCHEMAS},
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
    }
