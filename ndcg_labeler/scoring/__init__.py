"""Pure scoring: trec_eval-exact NDCG and friends, gains, ranking, aggregation, averaging."""

from .aggregate import POLICIES, aggregate, resolve
from .evaluate import evaluate, evaluate_flat, evaluate_one
from .evaluation import DEFAULT_CUTOFFS, Evaluation
from .inputs import RunInputs, run_inputs
from .ranking import docid_keys, permutation, rank_grouped, rank_order, tie_moves
from .simple import dcg, ndcg_at_k
from .trec_average import mean_defined, trec_all
from .types import Options, Qrel, ScoredDoc

__all__ = [
    "DEFAULT_CUTOFFS",
    "POLICIES",
    "Evaluation",
    "Options",
    "Qrel",
    "RunInputs",
    "ScoredDoc",
    "aggregate",
    "dcg",
    "docid_keys",
    "evaluate",
    "evaluate_flat",
    "evaluate_one",
    "mean_defined",
    "ndcg_at_k",
    "permutation",
    "rank_grouped",
    "rank_order",
    "resolve",
    "run_inputs",
    "tie_moves",
    "trec_all",
]
