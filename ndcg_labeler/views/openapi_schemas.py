"""The OpenAPI document's component schemas: the JSON bodies the API answers with."""

from __future__ import annotations

from typing import Any

from ndcg_labeler.views.openapi_estimates import LABEL_PROPERTIES, LABELS_TEXT
from ndcg_labeler.views.openapi_means import (
    INTERVAL,
    INTERVAL_KEYS,
    MEANS,
    MEANS_KEYS,
    NUMBER_OR_NULL,
)

OUTCOME = {"type": "string", "enum": ["pass", "fail", "inconclusive"]}
REF = "#/components/schemas/"


def ref(name: str) -> dict[str, str]:
    """A reference to one of the SCHEMAS."""
    return {"$ref": REF + name}


# NDCG@k's sensitivity to unjudged chunks (RunScores.sensitivity_json).
SENSITIVITY_DOC = " (docs: user guide, scoring conventions, sensitivity to unjudged chunks)"
SENSITIVITY_KEYS = ["mean_if_unjudged_top", "mean_condensed"]
SENSITIVITY = {
    "mean_if_unjudged_top": {
        **NUMBER_OR_NULL,
        "description": "Mean NDCG@k over the queries of mean_ndcg if every unjudged chunk of "
        "each top k had the scale's top grade (which joins the ideal too)" + SENSITIVITY_DOC,
    },
    "mean_condensed": {
        **NUMBER_OR_NULL,
        "description": "Mean NDCG@k over the queries of mean_ndcg with the unjudged chunks "
        "removed before the cut at k (condensed lists)" + SENSITIVITY_DOC,
    },
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
            "tags",
            "pinned",
            "archived",
            "kept_depth",
            "scores_url",
            "k",
            "mean_ndcg",
            *INTERVAL_KEYS,
            *SENSITIVITY_KEYS,
            *MEANS_KEYS,
        ],
        "properties": {
            "id": {"type": "integer"},
            "name": {"type": "string"},
            "filename": {"type": "string"},
            "format": {
                "type": "string",
                "description": "The file's format: trec, csv, tsv, jsonl, msmarco, or "
                "quepid-snapshot (runs uploaded as Quepid snapshots before this was recorded "
                "say trec).",
            },
            "sha256": {"type": "string"},
            "depth": {"type": "integer"},
            "num_queries": {"type": "integer"},
            "num_entries": {"type": "integer"},
            "uploaded_at": {"type": "string"},
            "notes": {"type": "string"},
            "series": {
                "type": ["string", "null"],
                "description": "The series the run belongs to (null: none).",
            },
            "tags": {"type": "array", "items": {"type": "string"}},
            "pinned": {
                "type": "boolean",
                "description": "Shown on the overview whatever its rank.",
            },
            "archived": {
                "type": "boolean",
                "description": "Retention kept only its top `kept_depth` entries per query.",
            },
            "kept_depth": {
                "type": ["integer", "null"],
                "description": "Cutoffs up to this still score; null while the run is whole.",
            },
            "entries_dropped": {
                "type": "integer",
                "description": "After archiving: entries deleted.",
            },
            "scores_url": {"type": "string"},
            "k": {"type": "integer", "description": "The cutoff of the mean (10)."},
            "mean_ndcg": {
                **NUMBER_OR_NULL,
                "description": "Mean NDCG@10 under the default options (`flask run list`).",
            },
            **INTERVAL,
            **SENSITIVITY,
            **MEANS,
            "report": {
                "type": ["object", "null"],
                "description": "Upload validation report: lines, queries and entries read and "
                "stored, `unknown_queries` and `missing_queries` (count, examples), and "
                "`docids_not_in_corpus` (count, entries, examples, corpus: ranked docids no "
                "chunk with text has; kept, unjudged), and `corpus_fetch` when the test set "
                "has corpus files an --only-referenced import left chunks out of: one entry "
                "each (file, path, host, status fetched|gone|changed|not_kept, fetched: "
                "chunks fetched, message).",
            },
        },
    },
    "Checklist": {
        "type": "object",
        "description": "The test set's checklist for the token's owner (`flask testset status`).",
        "required": ["steps", "next_action", "blocked", "admins"],
        "properties": {
            "steps": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["key", "done", "state", "optional"],
                    "properties": {
                        "key": {
                            "type": "string",
                            "enum": ["queries", "corpus", "runs", "pool", "labels", "judges"],
                        },
                        "done": {"type": "boolean"},
                        "state": {"type": "string", "description": "The state in words."},
                        "optional": {"type": "boolean"},
                    },
                },
            },
            "next_action": {
                "type": ["object", "null"],
                "required": ["key", "text"],
                "properties": {"key": {"type": "string"}, "text": {"type": "string"}},
            },
            "blocked": {
                "type": ["string", "null"],
                "description": "For a person who cannot act: what is missing, who can fix it.",
            },
            "admins": {
                "type": "array",
                "items": {"type": "string"},
                "description": "The active admins' usernames: who can fix what blocked names "
                "(listed in every view).",
            },
        },
    },
    "RunList": {
        "type": "object",
        "required": ["runs", "total", "page", "per_page", "next_page"],
        "properties": {
            "runs": {"type": "array", "items": ref("Run")},
            "total": {"type": "integer", "description": "Runs matching, on every page."},
            "page": {"type": "integer"},
            "per_page": {"type": "integer"},
            "next_page": {"type": ["integer", "null"], "description": "null on the last page."},
        },
    },
    "QueryScore": {
        "type": "object",
        "required": [
            "qid",
            "ndcg",
            "ndcg_if_unjudged_top",
            "ndcg_condensed",
            "dcg",
            "idcg",
            "gap",
            "judged_at_k",
            "num_rel",
        ],
        "properties": {
            "qid": {"type": "string"},
            "ndcg": {**NUMBER_OR_NULL, "description": "null where IDCG@k is 0 (undefined)."},
            "ndcg_if_unjudged_top": {
                **NUMBER_OR_NULL,
                "description": "NDCG@k if every unjudged chunk of the top k had the scale's top "
                "grade (which joins the ideal too)" + SENSITIVITY_DOC,
            },
            "ndcg_condensed": {
                **NUMBER_OR_NULL,
                "description": "NDCG@k with the unjudged chunks removed before the cut at k"
                + SENSITIVITY_DOC,
            },
            "dcg": {"type": "number"},
            "idcg": {"type": "number"},
            "gap": {"type": "number"},
            "judged_at_k": {"type": "number"},
            "num_rel": {"type": "integer"},
            "measures": {
                "type": "object",
                "description": "Only with ?measure=: each measure asked for by the name given, "
                "null where undefined (e.g. bpref with no relevant chunk).",
                "additionalProperties": NUMBER_OR_NULL,
            },
        },
    },
    "NamedMeasure": {
        "type": "object",
        "required": ["measure", "canonical", "trec_eval", "mean", "queries_defined"],
        "properties": {
            "measure": {"type": "string", "description": "The name as given."},
            "canonical": {
                "type": "string",
                "description": "The ir_measures spelling, e.g. nDCG@10, P(rel=2)@5.",
            },
            "trec_eval": {
                "type": ["string", "null"],
                "description": "trec_eval's name (ndcg_cut_10), null when it has none.",
            },
            "mean": {
                **NUMBER_OR_NULL,
                "description": "Mean over the queries where the measure is defined.",
            },
            "queries_defined": {"type": "integer", "minimum": 0},
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
            *SENSITIVITY_KEYS,
            "top_grade",
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
            "mean_ndcg": {
                **NUMBER_OR_NULL,
                "description": "Mean NDCG@k over the queries with a defined value "
                "(`queries_in_mean`).",
            },
            **INTERVAL,
            **SENSITIVITY,
            "top_grade": {
                "type": "integer",
                "description": "The scale's top grade, the one the sensitivity gives unjudged.",
            },
            **MEANS,
            "queries": {"type": "array", "items": ref("QueryScore")},
            "measures": {
                "type": "array",
                "description": "Only with ?measure=: the measures asked for, in order.",
                "items": ref("NamedMeasure"),
            },
            **LABEL_PROPERTIES,
        },
    },
    "GateRequest": {
        "type": "object",
        "required": ["baseline", "candidate"],
        "properties": {
            "baseline": {"type": "string", "description": "Run id or name (or id:N, name:X)."},
            "candidate": {"type": "string", "description": "Run id or name (or id:N, name:X)."},
            "measure": {
                "oneOf": [
                    {"type": "string"},
                    {"type": "array", "items": {"type": "string"}},
                ],
                "description": "ir_measures names (nDCG@10, P(rel=2)@5, AP, RR@10, bpref, infAP, "
                "Success@10 ...) or trec_eval's (ndcg_cut_10, P_5, map, recip_rank ...); default "
                "ndcg_cut_10. The verdict names each measure as given.",
            },
            "max_drop": {"type": "number", "minimum": 0, "default": 0.01},
            "alpha": {"type": "number", "minimum": 0, "maximum": 1, "default": 0.05},
            "labels": {
                "type": "string",
                "default": "human",
                "description": LABELS_TEXT,
            },
        },
        "example": {"baseline": "A", "candidate": "B", "measure": ["ndcg_cut_10", "P(rel=2)@5"]},
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
            "p_value",
            "p_adjusted",
            "p_noninferiority",
            "regressed",
            "queries_needed",
            "note",
            "sample_size",
            "paired_queries",
        ],
        "properties": {
            "paired_queries": {
                "type": "integer",
                "minimum": 0,
                "description": "Queries where both runs have a defined value: the pairs the "
                "tests use (the same number as `queries`).",
            },
            "measure": {"type": "string"},
            "outcome": OUTCOME,
            "baseline": NUMBER_OR_NULL,
            "candidate": NUMBER_OR_NULL,
            "delta": NUMBER_OR_NULL,
            "delta_sd": NUMBER_OR_NULL,
            "queries": {"type": "integer", "minimum": 0},
            "p_value": NUMBER_OR_NULL,
            "p_adjusted": NUMBER_OR_NULL,
            "p_noninferiority": NUMBER_OR_NULL,
            "regressed": {"type": "boolean", "description": "outcome is fail."},
            "queries_needed": {
                "type": ["integer", "null"],
                "description": "Paired queries that would decide an inconclusive measure.",
            },
            "note": {"type": "string"},
            "ppi": {
                "type": "object",
                "description": (
                    "Under labels=ppi:JUDGE: the PPI++ estimate of mean d with its 95% interval "
                    "(the PPI object's keys) and its basis (the PPIBasis object's keys)."
                ),
            },
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
    "NextLabel": {
        "type": "object",
        "required": ["qid", "docid", "weight", "rank_a", "rank_b"],
        "properties": {
            "qid": {"type": "string"},
            "docid": {"type": "string"},
            "weight": {
                "type": "number",
                "minimum": 0,
                "description": "top grade × |1/log2(rank_a + 1) − 1/log2(rank_b + 1)|, a "
                "run's term 0 when the chunk is not in its top depth.",
            },
            "rank_a": {
                "type": ["integer", "null"],
                "description": "1-based; null: not in A's top depth.",
            },
            "rank_b": {
                "type": ["integer", "null"],
                "description": "1-based; null: not in B's top depth.",
            },
        },
    },
    "NextLabels": {
        "type": "object",
        "required": [
            "run_a",
            "run_b",
            "depth",
            "k",
            "unjudged_pairs",
            "robust",
            "labels_remaining",
            "mean_delta",
            "mean_delta_if_unjudged_top",
            "note",
            "pairs",
        ],
        "properties": {
            "run_a": {"type": "string"},
            "run_b": {"type": "string"},
            "depth": {"type": "integer", "minimum": 1},
            "k": {"type": "integer", "minimum": 1},
            "unjudged_pairs": {"type": "integer", "minimum": 0},
            "robust": {
                "type": ["boolean", "null"],
                "description": "The winner (sign of mean NDCG@k of B − A) is the same with every "
                "unjudged chunk of either top k at 0 (today) and at the top grade (joining the "
                "ideal). null: not computed under these options (see note).",
            },
            "labels_remaining": {
                "type": ["integer", "null"],
                "minimum": 0,
                "description": "The smallest m such that, with the first m pairs labeled and each "
                "label confirming today's value (not relevant), the comparison is robust; null "
                "when the whole list would not do (depth below k) or not computed.",
            },
            "mean_delta": NUMBER_OR_NULL,
            "mean_delta_if_unjudged_top": NUMBER_OR_NULL,
            "note": {"type": "string"},
            "pairs": {
                "type": "array",
                "items": ref("NextLabel"),
                "description": "Best first; ties by qid, then docid (byte order).",
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
            "measures",
            "paired_queries",
        ],
        "properties": {
            "paired_queries": {
                "type": "integer",
                "minimum": 0,
                "description": "The fewest paired queries any measure was decided on.",
            },
            "testset": {"type": "string"},
            "baseline": {"type": "string"},
            "candidate": {"type": "string"},
            "labels": {"type": "string"},
            "machine_labels": {"type": "boolean"},
            "max_drop": {"type": "number"},
            "alpha": {"type": "number"},
            "outcome": OUTCOME,
            "passed": {"type": "boolean", "description": "outcome is pass."},
            "measures": {"type": "array", "items": ref("GateMeasure")},
            "audit": {
                **ref("AuditStatus"),
                "description": "Under machine:, fill: and ppi: labels only.",
            },
        },
    },
}
