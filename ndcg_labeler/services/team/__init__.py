"""Team judging: agreement, people, disputes and adjudication, policies, judgment exports."""

from ndcg_labeler.services._figures_cache import Cached, Computing

from .adjudication import GradesChanged, adjudicate, remove
from .agreement import QUERY_SORTS, agreement_of, agreement_report, sort_queries
from .disputes import find_pair, pair_detail, review_queue, set_threshold
from .exports import EXPORT_FORMATS, export_filename, judgment_chunks
from .pages import (
    cached_agreement_report,
    cached_next_disputed,
    cached_people,
    cached_policies,
    cached_review_queue,
)
from .people import Person, people_csv, people_records, without_agreement

__all__ = [
    "EXPORT_FORMATS",
    "QUERY_SORTS",
    "Cached",
    "Computing",
    "GradesChanged",
    "Person",
    "adjudicate",
    "agreement_of",
    "agreement_report",
    "cached_agreement_report",
    "cached_next_disputed",
    "cached_people",
    "cached_policies",
    "cached_review_queue",
    "export_filename",
    "find_pair",
    "judgment_chunks",
    "pair_detail",
    "people_csv",
    "people_records",
    "remove",
    "review_queue",
    "set_threshold",
    "sort_queries",
    "without_agreement",
]
