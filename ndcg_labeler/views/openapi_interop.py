"""OpenAPI pieces of interop: peers' files on the import, Quepid snapshots, the two exports."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ndcg_labeler.views.openapi_schemas import ref

IMPORT_PEER_FIELDS: dict[str, Any] = {
    "quepid": {
        "type": "string",
        "format": "binary",
        "description": "Quepid judgments CSV (query,docid,rating); alone.",
    },
    "srw_judgments": {
        "type": "string",
        "format": "binary",
        "description": "OpenSearch SRW judgment list (JSON); alone.",
    },
    "srw_queries": {
        "type": "string",
        "format": "binary",
        "description": "OpenSearch SRW query set (JSON or JSON lines); alone.",
    },
    "ir_datasets": {
        "type": "string",
        "description": "An ir_datasets NAME read from the server's local cache; alone.",
    },
    "rating_map": {
        "type": "string",
        "description": "Peer ratings onto grades: a scale '0-10' or pairs '1=0,2=1'. "
        "Default: the ratings are grades.",
    },
}
RUN_FORMAT: dict[str, Any] = {
    "type": "string",
    "enum": ["", "quepid-snapshot"],
    "description": "quepid-snapshot: the file is a Quepid case snapshot CSV.",
}
_NUMBER_OR_NULL = {"type": ["number", "null"]}
JOB: dict[str, Any] = {
    "type": "object",
    "required": ["id", "kind", "state", "phase", "done", "total", "rows", "finished", "url"],
    "properties": {
        "id": {"type": "integer"},
        "kind": {"type": "string"},
        "title": {"type": "string"},
        "state": {"type": "string", "enum": ["queued", "running", "done", "failed", "cancelled"]},
        "phase": {"type": "string"},
        "phase_text": {"type": "string"},
        "done": {"type": "integer"},
        "total": {"type": "integer"},
        "rows": {"type": "integer"},
        "fraction": _NUMBER_OR_NULL,
        "message": {"type": "string"},
        "error": {"type": "string"},
        "finished": {"type": "boolean"},
        "stopping": {
            "type": "boolean",
            "description": "Not yet ended, but asked to stop (a cancel is on its way).",
        },
        "result": {"type": ["object", "null"]},
        "url": {"type": "string"},
        "page_url": {"type": "string"},
    },
}
_QUEUED_BODY = {
    "application/json": {
        "schema": {"type": "object", "required": ["job"], "properties": {"job": JOB}}
    }
}
IMPORT_QUEUED: dict[str, Any] = {
    "description": "Queued for the job worker (a large ir_datasets dataset, or any import "
    "sent with `Prefer: respond-async`); follow job.url.",
    "content": _QUEUED_BODY,
}
UPLOAD_QUEUED: dict[str, Any] = {
    "description": "Sent with `Prefer: respond-async`: queued for the job worker; follow "
    "job.url (its result names the run: run_id, run_name, report).",
    "content": _QUEUED_BODY,
}
PREFER: dict[str, Any] = {
    "name": "Prefer",
    "in": "header",
    "required": False,
    "description": "`respond-async` (RFC 7240): the job worker does the work and the answer is "
    "202 with the job at once (for files too large to handle within the web server's "
    "timeout); the answer then carries `Preference-Applied: respond-async`.",
    "schema": {"type": "string"},
}
_DOWNLOAD = {
    "text/csv": {"schema": {"type": "string"}},
    "application/json": {"schema": {"type": "object"}},
}


def interop_paths(
    test_set: dict[str, Any], run: dict[str, Any], errors: Callable[..., dict[str, Any]]
) -> dict[str, Any]:
    """The export paths, given the spec's path parameters and its error responses."""
    return {
        "/api/jobs/{job_id}": {
            "parameters": [
                {"name": "job_id", "in": "path", "required": True, "schema": {"type": "integer"}}
            ],
            "get": {
                "operationId": "getJob",
                "summary": "A job's state and progress; once it ended, its result or error.",
                "responses": {
                    "200": {
                        "description": "The job.",
                        "content": {"application/json": {"schema": JOB}},
                    },
                    **errors(401, 404, missing="No such job (or not yours, for a non-admin)."),
                },
            },
        },
        "/api/jobs/{job_id}/cancel": {
            "parameters": [
                {"name": "job_id", "in": "path", "required": True, "schema": {"type": "integer"}}
            ],
            "post": {
                "operationId": "cancelJob",
                "summary": "Cancel a queued job, or ask a running one to stop, as its page's "
                "Cancel does (your own jobs; an admin's: every job). Audited as job.cancel.",
                "responses": {
                    "200": {
                        "description": "The job: `cancelled` if it was queued; still "
                        "`running`, with `stopping` true, if it was running (it stops at its "
                        "next step; one that ends first keeps its result).",
                        "content": {"application/json": {"schema": JOB}},
                    },
                    **errors(401, 404, missing="No such job (or not yours, for a non-admin)."),
                    "409": {
                        "description": "The job had already ended (done, failed or cancelled).",
                        "content": {"application/json": {"schema": ref("Error")}},
                    },
                },
            },
        },
        "/api/testsets/{test_set}/export": {
            "parameters": [test_set],
            "get": {
                "operationId": "exportTestSet",
                "summary": "The test set's judgments (Quepid CSV, SRW judgment list) or "
                "queries (SRW query set).",
                "parameters": [
                    {
                        "name": "format",
                        "in": "query",
                        "required": True,
                        "schema": {
                            "type": "string",
                            "enum": ["quepid", "srw-judgments", "srw-queries"],
                        },
                    },
                    {
                        "name": "aggregation",
                        "in": "query",
                        "schema": {"type": "string"},
                        "description": "Grades under this policy (default: the set's own).",
                    },
                ],
                "responses": {
                    "200": {"description": "The file.", "content": _DOWNLOAD},
                    **errors(400, 401, 403, 404, blind="its grades"),
                },
            },
        },
        "/api/testsets/{test_set}/runs/{run}/export": {
            "parameters": [test_set, run],
            "get": {
                "operationId": "exportRun",
                "summary": "The run as a Quepid case snapshot CSV (positions in rank order).",
                "parameters": [
                    {
                        "name": "format",
                        "in": "query",
                        "schema": {"type": "string", "enum": ["quepid-snapshot"]},
                    }
                ],
                "responses": {
                    "200": {
                        "description": "The snapshot.",
                        "content": {"text/csv": {"schema": {"type": "string"}}},
                    },
                    **errors(400, 401, 404),
                },
            },
        },
    }
