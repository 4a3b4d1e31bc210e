"""R-precision, bpref, infAP, Success@k, AP@k and RR@k of one query, as trec_eval v10 computes them.

R is num_rel, the query's judged documents with a grade >= rel; a document is relevant when its
grade reaches rel, non-relevant when judged below it, and unjudged (NaN) otherwise.

    Rprec     = |relevant in the top R| / R                                 (trec_eval Rprec)
    bpref     = (1/R) * sum over relevant retrieved d of
                1 - min(n_d, R) / min(N, R)      n_d: judged non-relevant ranked above d,
                                                 N: judged non-relevant in the qrels (bpref)
    infAP     = (1/R) * sum over relevant retrieved d at 1-based rank i of
                1/i + ((i-1)/i) * (judged above d / (i-1)) * ((r + eps) / (r + n + 2 eps)),
                r, n: relevant and non-relevant above d, eps = 1e-5; 1 at rank 1 (infAP)
                ("judged above" also counts the pooled-but-unjudged, grade < 0)
    Success@k = 1 if a relevant document is in the top k, else 0           (success_k)
    AP@k      = (1/R) * sum over relevant d in the top k of P@rank(d)       (map_cut_k)
    RR@k      = 1 / rank of the first relevant document in the top k, 0 if none

Undefined (NaN here, 0 in trec_eval's output) when R = 0, like recall, RR and AP. Unjudged
documents are skipped by bpref and infAP (trec_eval's "not in the pool"), so with every
retrieved document judged infAP equals AP. A negative grade is trec_eval's "in the pool but
unjudged" (ir_measures' convention too): bpref skips it, infAP counts it among the documents
above, and neither counts it non-relevant.

References: C. Buckley and E. M. Voorhees, "Retrieval evaluation with incomplete information",
SIGIR 2004 (bpref); E. Yilmaz and J. A. Aslam, "Estimating average precision with incomplete
and imperfect judgments", CIKM 2006 (infAP); trec_eval v10's m_Rprec.c, m_bpref.c, m_infAP.c,
m_success.c and m_map_cut.c (NIST).
"""

from __future__ import annotations

import numpy as np

from ._arithmetic import NAN, running_sum

# trec_eval's INFAP_EPSILON: keeps infAP's estimate of precision defined above rank 1.
INFAP_EPSILON = 0.00001


def r_precision(grades: np.ndarray, num_rel: int, rel: int) -> float:
    """Rprec: the share of relevant documents among the top R (R = num_rel)."""
    if not num_rel:
        return NAN
    return int(np.count_nonzero(grades[:num_rel] >= rel)) / num_rel


def bpref(grades: np.ndarray, judged: np.ndarray, rel: int) -> float:
    """bpref: how often relevant retrieved documents come before judged non-relevant ones."""
    num_rel = int(np.count_nonzero(judged >= rel))
    if not num_rel:
        return NAN
    num_nonrel = int(np.count_nonzero((judged >= 0) & (judged < rel)))
    seen = grades[grades >= 0]  # judged only: unjudged and pooled-but-unjudged are skipped
    relevant = seen >= rel
    nonrel_above = np.cumsum(~relevant)[relevant]
    # A relevant document with no non-relevant above it scores 1 (trec_eval's special case,
    # which also keeps min(N, R) = 0 out of the denominator).
    denominator = min(num_nonrel, num_rel)
    terms = np.where(
        nonrel_above > 0,
        1.0 - np.minimum(nonrel_above, num_rel) / max(denominator, 1),
        1.0,
    )
    return float(running_sum(terms)[-1]) / num_rel


def inferred_ap(grades: np.ndarray, judged: np.ndarray, rel: int) -> float:
    """infAP: AP estimated from the judged documents above each relevant one."""
    num_rel = int(np.count_nonzero(judged >= rel))
    if not num_rel:
        return NAN
    ranks = np.flatnonzero(~np.isnan(grades))  # unjudged (outside the pool): skipped
    seen = grades[ranks]
    relevant = seen >= rel
    # Counts above each judged document: relevant, judged non-relevant, pooled but unjudged.
    rel_above = (np.cumsum(relevant) - relevant)[relevant]
    nonrel_above = np.cumsum((seen >= 0) & ~relevant)[relevant]
    pooled_above = np.cumsum(seen < 0)[relevant]
    j = ranks[relevant].astype(np.float64)  # 0-based rank
    with np.errstate(divide="ignore", invalid="ignore"):
        # The same operations in the same order as trec_eval, so the same bits.
        terms = 1.0 / (j + 1.0) + (j / (j + 1.0)) * (
            (rel_above + nonrel_above + pooled_above) / j
        ) * ((rel_above + INFAP_EPSILON) / ((rel_above + nonrel_above) + 2 * INFAP_EPSILON))
    terms[j == 0] = 1.0  # a relevant document at rank 1: precision 1
    return float(running_sum(terms)[-1]) / num_rel


def success_at(grades: np.ndarray, num_rel: int, rel: int, k: int) -> float:
    """Success@k: 1 when a relevant document is in the top k, else 0."""
    if not num_rel:
        return NAN
    return 1.0 if bool((grades[:k] >= rel).any()) else 0.0


def average_precision_at(grades: np.ndarray, num_rel: int, rel: int, k: int) -> float:
    """AP@k: AP's sum over the top k only, still divided by num_rel (trec_eval's map_cut)."""
    if not num_rel:
        return NAN
    relevant_at = np.flatnonzero(grades[:k] >= rel)
    precisions = np.arange(1.0, relevant_at.size + 1.0) / (relevant_at + 1.0)
    return float(running_sum(precisions)[-1]) / num_rel


def reciprocal_rank_at(grades: np.ndarray, num_rel: int, rel: int, k: int) -> float:
    """RR@k: 1 / rank of the first relevant document within the top k, 0 if none."""
    if not num_rel:
        return NAN
    relevant_at = np.flatnonzero(grades[:k] >= rel)
    return 1.0 / float(relevant_at[0] + 1) if relevant_at.size else 0.0
