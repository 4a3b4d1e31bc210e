"""Pure scoring: trec_eval-exact measures, the rules they share, and the statistics around them.

One module per measure family, each with its formula and reference: `ndcg` ((n)DCG),
`precision_recall` (P, recall and the counts), `average_precision`, `reciprocal_rank` and
`judged` (Judged@k), and `binary_measures` (Rprec, bpref, infAP, Success@k, AP@k, RR@k).
`measure_names` is the one parser of measure names (ir_measures' and trec_eval's) and `named`
computes any parsed measure per query. The rules they share: `ranking` (trec_eval's order),
`gains` (grade to gain), `options` (how a run is scored). `many_queries` and `one_query`
compute every measure of many queries at once or of one query, with the same numbers;
`inputs` joins judgments and a run, `results` holds what comes out and `averages` averages
it over queries. Around them: `aggregation` (several annotators' grades into one), `agreement`
(between annotators),
`calibration` (machine against human grades), `intervals` (the t interval of a mean),
`significance` (tests, bootstrap intervals, Holm's correction), `sample_size` (queries a paired
test needs), `flip` (the flip test: would the winner change if every unjudged chunk were
relevant), `next_labels` (what to label next for a comparison, and the labels until it is
robust), `ppi` (prediction-powered estimates from machine labels and a human audit) and
`fusion` (of several runs). Callers import from here, never a module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ndcg_labeler import lazy

if TYPE_CHECKING:  # every name loads its module on first use (ndcg_labeler.lazy)
    from .aggregation import DEFAULT_POLICY, POLICIES, aggregate, resolve
    from .agreement import (
        AgreementSummary,
        CohenPair,
        ConsensusAgreement,
        Rating,
        agreement_summary,
        consensus_agreement,
        fleiss_kappa,
        krippendorff_alpha_ordinal,
        percent_agreement,
    )
    from .averages import mean_defined, trec_all
    from .calibration import calibrate, kendall_tau
    from .flip import FlipArrays, FlipQuery, FlipTest, flip_arrays, flip_test, flip_test_flat
    from .fusion import FUSION_METHODS, RRF_K, fuse_arrays
    from .gains import gain_values
    from .inputs import Qrel, RunInputs, ScoredDoc, run_inputs
    from .intervals import TInterval, t_interval
    from .many_queries import evaluate, evaluate_flat
    from .measure_names import (
        MEASURE_HELP,
        Measure,
        MeasureNameError,
        parse_measure,
        parse_measures,
    )
    from .named import evaluation_name, measure_options, measure_values
    from .ndcg import dcg, log2_ranks, ndcg_at_k
    from .next_labels import NextLabel, Robustness, labels_to_robust, order_for_compare
    from .one_query import evaluate_one
    from .options import DEFAULT_CUTOFFS, GAINS, IDEALS, Options
    from .ppi import MIN_AUDITED, PPIEstimate, ppi_mean, ppi_p_value, ppi_paired
    from .ranking import docid_keys, permutation, rank_grouped, rank_order, tie_moves
    from .results import COUNT_MEASURES, Evaluation
    from .sample_size import paired_power, queries_for_power, queries_to_clear
    from .significance import (
        TIE_TOLERANCE,
        MeanInterval,
        bootstrap_ci,
        compare_runs,
        holm,
        noninferiority_p,
        paired_t_test,
    )

__all__ = [
    "COUNT_MEASURES",
    "DEFAULT_CUTOFFS",
    "DEFAULT_POLICY",
    "FUSION_METHODS",
    "GAINS",
    "IDEALS",
    "MEASURE_HELP",
    "MIN_AUDITED",
    "POLICIES",
    "RRF_K",
    "TIE_TOLERANCE",
    "AgreementSummary",
    "CohenPair",
    "ConsensusAgreement",
    "Evaluation",
    "FlipArrays",
    "FlipQuery",
    "FlipTest",
    "MeanInterval",
    "Measure",
    "MeasureNameError",
    "NextLabel",
    "Options",
    "PPIEstimate",
    "Qrel",
    "Rating",
    "Robustness",
    "RunInputs",
    "ScoredDoc",
    "TInterval",
    "aggregate",
    "agreement_summary",
    "bootstrap_ci",
    "calibrate",
    "compare_runs",
    "consensus_agreement",
    "dcg",
    "docid_keys",
    "evaluate",
    "evaluate_flat",
    "evaluate_one",
    "evaluation_name",
    "fleiss_kappa",
    "flip_arrays",
    "flip_test",
    "flip_test_flat",
    "fuse_arrays",
    "gain_values",
    "holm",
    "kendall_tau",
    "krippendorff_alpha_ordinal",
    "labels_to_robust",
    "log2_ranks",
    "mean_defined",
    "measure_options",
    "measure_values",
    "ndcg_at_k",
    "noninferiority_p",
    "order_for_compare",
    "paired_power",
    "paired_t_test",
    "parse_measure",
    "parse_measures",
    "percent_agreement",
    "permutation",
    "ppi_mean",
    "ppi_p_value",
    "ppi_paired",
    "queries_for_power",
    "queries_to_clear",
    "rank_grouped",
    "rank_order",
    "resolve",
    "run_inputs",
    "t_interval",
    "tie_moves",
    "trec_all",
]

__getattr__ = lazy.front_door(__name__, __file__)
