"""The OpenAPI parts of label sources and PPI++ estimates: the `labels` parameter, the audit
status, the "ppi" object and its basis, and the compare operation that carries them."""

from __future__ import annotations

from typing import Any

from ndcg_labeler.services import live

NUMBER_OR_NULL = {"type": ["number", "null"]}
_REF = "#/components/schemas/"

LABELS_TEXT = (
    "Whose grades: human (people and imported qrels), machine:JUDGE (that judge's only), "
    "fill:JUDGE (people's, the judge's where a pair has none) or ppi:JUDGE (per query the "
    "judge's, plus the PPI++ estimate of the human mean over all queries from the judge's "
    "audit sample)."
)
LABELS = {
    "name": "labels",
    "in": "query",
    "description": LABELS_TEXT,
    "schema": {"type": "string", "default": "human"},
    "example": "human",
}

# Scoring options every score operation takes, as query parameters (live.parse_options).
SCORE_PARAMETERS: list[dict[str, Any]] = [
    {"name": "k", "in": "query", "schema": {"type": "integer", "default": 10}, "example": 10},
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
        "description": "true (or 1, on, yes): drop unjudged chunks from each ranking first "
        "(condensed lists).",
        "schema": {"type": "boolean", "default": False},
        "example": False,
    },
    {
        "name": "aggregation",
        "in": "query",
        "description": "How several people's grades of a pair combine (default: the test set's "
        "policy).",
        "schema": {"type": "string", "enum": list(live.policies())},
        "example": "median",
    },
    LABELS,
]

SCHEMAS: dict[str, Any] = {
    "AuditStatus": {
        "type": "object",
        "description": "How much of the test set people audited for the judge (machine means).",
        "required": [
            "judge",
            "audited",
            "queries",
            "sampled",
            "status",
            "judge_failed",
            "judge_answers",
            "judge_failed_note",
        ],
        "properties": {
            "judge": {"type": "string"},
            "audited": {
                "type": "integer",
                "description": "Sampled queries whose every pool pair has a human grade.",
            },
            "queries": {"type": "integer", "description": "The test set's queries."},
            "sampled": {"type": "integer", "description": "Queries in the audit sample."},
            "status": {"type": "string", "description": "“k of N queries audited”."},
            "judge_failed": {
                "type": "integer",
                "description": "The judge's pairs on the set whose every answer failed or was "
                "unparsed: scored as unjudged (under fill:, only pairs nobody graded).",
            },
            "judge_answers": {
                "type": "integer",
                "description": "The judge's pairs on the set that it answered at all.",
            },
            "judge_failed_note": {
                "type": ["string", "null"],
                "description": "“F of A judge answers failed or were unparsed: counted as "
                "unjudged (not relevant)”; null when none did.",
            },
        },
    },
    "PPI": {
        "type": "object",
        "description": (
            "PPI++ estimate of the mean over all queries of NDCG@k under human labels (a "
            "query without a relevant judged chunk counting 0), or of B − A in a comparison. "
            "Below 10 audited queries ci_low and ci_high are null and reason says "
            "“audit more queries”."
        ),
        "required": [
            "estimate",
            "ci_low",
            "ci_high",
            "n_audited",
            "n_unaudited",
            "lambda",
            "reason",
        ],
        "properties": {
            "estimate": NUMBER_OR_NULL,
            "ci_low": {**NUMBER_OR_NULL, "description": "95% t interval (the set's mean): low."},
            "ci_high": {**NUMBER_OR_NULL, "description": "95% t interval (the set's mean): high."},
            "n_audited": {"type": "integer", "description": "Labeled queries (audited)."},
            "n_unaudited": {"type": "integer", "description": "Every other query."},
            "lambda": {**NUMBER_OR_NULL, "description": "Power-tuning weight, in [0, 1]."},
            "reason": {"type": ["string", "null"], "description": "Why there is no interval."},
        },
    },
    "PPIBasis": {
        "type": "object",
        "required": ["judge", "confidence", "se", "machine_mean", "human_audited_mean", "audit"],
        "properties": {
            "judge": {"type": "string"},
            "confidence": {"type": "number"},
            "se": NUMBER_OR_NULL,
            "machine_mean": {
                **NUMBER_OR_NULL,
                "description": "Mean machine NDCG@k over every query (undefined counting 0).",
            },
            "human_audited_mean": {
                **NUMBER_OR_NULL,
                "description": "Mean human NDCG@k over the audited queries only.",
            },
            "audit": {"$ref": _REF + "AuditStatus"},
        },
    },
    "Comparison": {
        "type": "object",
        "required": ["k", "runs", "wins", "ties", "losses", "t_test_p", "randomization_p"],
        "properties": {
            "k": {"type": "integer"},
            "compared": {
                "type": "integer",
                "minimum": 0,
                "description": "Queries compared: those with NDCG@k defined in every run.",
            },
            "robust": {
                "type": "boolean",
                "description": "The winner (or the tie) of B against A stays with every unjudged "
                "chunk of either top k at the top grade; false when nothing was compared "
                "(compared 0), where winner says tie.",
            },
            "winner": {"type": "string", "enum": ["A", "B", "tie"]},
            "runs": {
                "type": "object",
                "description": "Per run: mean NDCG@k with its 95% bootstrap interval.",
                "additionalProperties": {
                    "type": "object",
                    "properties": {
                        "mean": NUMBER_OR_NULL,
                        "ci_low": NUMBER_OR_NULL,
                        "ci_high": NUMBER_OR_NULL,
                    },
                },
            },
            "wins": {"type": "integer"},
            "ties": {"type": "integer"},
            "losses": {"type": "integer"},
            "t_test_p": NUMBER_OR_NULL,
            "randomization_p": NUMBER_OR_NULL,
            "queries": {"type": "array", "items": {"type": "object"}},
        },
    },
}

# More measures per query (repeatable), in either syntax: scoring.parse_measure.
MEASURE: dict[str, Any] = {
    "name": "measure",
    "in": "query",
    "description": "Repeatable. Adds each measure named, per query and its mean: ir_measures "
    "names (nDCG@10, P(rel=2)@5, R@100, AP, AP@100, RR@10, Rprec, bpref, infAP, Success@10, "
    "Judged@10, NumRel, NumRet) or trec_eval's (ndcg_cut_10, P_5, map, recip_rank ...).",
    "schema": {"type": "array", "items": {"type": "string"}},
    "style": "form",
    "explode": True,
    "example": ["nDCG@10", "bpref"],
}

SCHEMAS["Comparison"]["properties"]["measures"] = {
    "type": "array",
    "description": "Only with ?measure=: per measure named, each run's mean and every run "
    "against the first (delta, wins, ties, losses, t_test_p) on the queries where it is "
    "defined in all the runs.",
    "items": {
        "type": "object",
        "required": ["measure", "canonical", "trec_eval", "queries", "runs", "pairs"],
        "properties": {
            "measure": {"type": "string"},
            "canonical": {"type": "string"},
            "trec_eval": {"type": ["string", "null"]},
            "queries": {"type": "integer", "minimum": 0},
            "runs": {"type": "array", "items": {"type": "object"}},
            "pairs": {"type": "array", "items": {"type": "object"}},
        },
    },
}

# Beside the scores and the comparison under machine:, fill: and ppi: labels.
LABEL_PROPERTIES: dict[str, Any] = {
    "labels": {
        "type": "string",
        "description": "The label source the figures rest on: human, machine:JUDGE, fill:JUDGE "
        "or ppi:JUDGE.",
    },
    "audit": {"$ref": _REF + "AuditStatus"},
    "ppi": {"$ref": _REF + "PPI"},
    "ppi_basis": {"$ref": _REF + "PPIBasis"},
}
SCHEMAS["Comparison"]["properties"].update(LABEL_PROPERTIES)

COMPARE_PATH: dict[str, Any] = {
    "get": {
        "operationId": "compareRuns",
        "summary": "Run b against run a (`flask run compare --json`).",
        "description": (
            "Means with 95% bootstrap intervals, the paired tests and per-query deltas; under "
            "labels=ppi:JUDGE also the PPI++ estimate of B − A."
        ),
        "parameters": [
            {
                "name": "a",
                "in": "query",
                "description": (
                    "Run id or name, or id:N / name:X (A); without a and b, the two oldest runs."
                ),
                "schema": {"type": "string", "minLength": 1},
                "example": "A",
            },
            {
                "name": "b",
                "in": "query",
                "description": "Run id or name, or id:N / name:X (B).",
                "schema": {"type": "string", "minLength": 1},
                "example": "B",
            },
            *SCORE_PARAMETERS,
            MEASURE,
        ],
    }
}


# What to label next (GET /api/testsets/{test_set}/next-labels): the two runs, the list's depth
# and the flip test's k, scored with the other score options.
NEXT_LABELS_PARAMETERS: list[dict[str, Any]] = [
    {
        "name": "a",
        "in": "query",
        "required": True,
        "description": "Run id or name, or id:N / name:X (A).",
        "schema": {"type": "string"},
        "example": "A",
    },
    {
        "name": "b",
        "in": "query",
        "required": True,
        "description": "Run id or name, or id:N / name:X (B).",
        "schema": {"type": "string"},
        "example": "B",
    },
    {
        "name": "depth",
        "in": "query",
        "description": (
            "The top of each run the list covers. Default: k (at most 1000), as "
            "the compare page lists its top k; 10 without k."
        ),
        "schema": {"type": "integer", "minimum": 1, "maximum": 1000},
        "example": 10,
    },
    {
        "name": "k",
        "in": "query",
        "description": (
            "The flip test's NDCG@k. Default: the depth when it is below 10 (a "
            "test deeper than the list would weigh chunks it never listed), else 10."
        ),
        "schema": {"type": "integer", "minimum": 1, "maximum": 100000},
        "example": 10,
    },
    # The flip test's NDCG@k (above) is scored with these options.
    *(p for p in SCORE_PARAMETERS if p["name"] != "k"),
]
