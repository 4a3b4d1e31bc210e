"""OpenAPI schemas of the keys beside every mean NDCG@k: its interval, the queries it covers."""

from __future__ import annotations

NUMBER_OR_NULL = {"type": ["number", "null"]}

# The 95% t interval beside every mean NDCG@k (RunScores.interval_json).
INTERVAL_KEYS = ["n", "ci_low", "ci_high", "ci_method", "ci_reason"]
INTERVAL = {
    "n": {"type": "integer", "description": "Queries in the mean (those with a defined NDCG@k)."},
    "ci_low": {
        **NUMBER_OR_NULL,
        "description": "Low end of the 95% interval of the mean; null when n < 2.",
    },
    "ci_high": {
        **NUMBER_OR_NULL,
        "description": "High end of the 95% interval of the mean; null when n < 2.",
    },
    "ci_method": {
        "type": "string",
        "enum": ["t"],
        "description": "t: mean ± t(0.975, n − 1) · sd / √n over the per-query values.",
    },
    "ci_reason": {
        "type": ["string", "null"],
        "description": "Why there is no interval (n < 2); null when there is one.",
    },
}

# Which queries each mean covers, and trec_eval's `all` beside ours (RunScores.means_json).
MEANS_KEYS = [
    "queries_in_mean",
    "queries_undefined",
    "queries_missing",
    "mean_trec_all",
    "queries_trec_all",
]
MEANS = {
    "queries_in_mean": {
        "type": "integer",
        "description": "Queries `mean_ndcg` covers: those with a defined NDCG@k.",
    },
    "queries_undefined": {
        "type": "integer",
        "description": "Test-set queries with no relevant judged chunk (IDCG@k = 0): no "
        "NDCG, left out of `mean_ndcg`.",
    },
    "queries_missing": {
        "type": "integer",
        "description": "Test-set queries the run has no ranking for (they score 0 in "
        "`mean_ndcg` where defined).",
    },
    "mean_trec_all": {
        **NUMBER_OR_NULL,
        "description": "trec_eval's `all` value of ndcg_cut_k (the export's `all` line): the "
        "mean over the judged queries in the run, an undefined NDCG counting 0; null when "
        "there are none.",
    },
    "queries_trec_all": {
        "type": "integer",
        "description": "Queries `mean_trec_all` covers (trec_eval's num_q).",
    },
}
