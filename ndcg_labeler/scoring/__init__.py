"""Pure scoring: trec_eval-exact NDCG and friends, gains, ranking, aggregation, averaging."""

from .aggregate import DEFAULT_POLICY, POLICIES, aggregate, resolve
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
from .calibration import calibrate, kendall_tau
from .evaluate import evaluate, evaluate_flat, evaluate_one
from .evaluation import COUNT_MEASURES, DEFAULT_CUTOFFS, Evaluation
from .fusion import FUSION_METHODS, RRF_K, fuse_arrays
from .gains import gain_values, log2_ranks
from .inputs import RunInputs, run_inputs
from .multiple import holm
from .ranking import docid_keys, permutation, rank_grouped, rank_order, tie_moves
from .significance import TIE_TOLERANCE, MeanInterval, bootstrap_ci, compare_runs, paired_t_test
from .simple import dcg, ndcg_at_k
from .trec_average import mean_defined, trec_all
from .types import GAINS, IDEALS, Options, Qrel, ScoredDoc

__all__ = [
    "COUNT_MEASURES",
    "DEFAULT_CUTOFFS",
    "DEFAULT_POLICY",
    "FUSION_METHODS",
    "GAINS",
    "IDEALS",
    "POLICIES",
    "RRF_K",
    "TIE_TOLERANCE",
    "AgreementSummary",
    "CohenPair",
    "ConsensusAgreement",
    "Evaluation",
    "MeanInterval",
    "Options",
    "Qrel",
    "Rating",
    "RunInputs",
    "ScoredDoc",
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
    "fleiss_kappa",
    "fuse_arrays",
    "gain_values",
    "holm",
    "kendall_tau",
    "krippendorff_alpha_ordinal",
    "log2_ranks",
    "mean_defined",
    "ndcg_at_k",
    "paired_t_test",
    "percent_agreement",
    "permutation",
    "rank_grouped",
    "rank_order",
    "resolve",
    "run_inputs",
    "tie_moves",
    "trec_all",
]
