"""Prediction-powered estimates (`labels=ppi:JUDGE`): a judge's NDCG on every query, corrected
by people's on the judge's audit sample, and the audit status beside every machine mean."""

from .estimate import (
    AuditStatus,
    PPIFigures,
    audit_status,
    audited_queries,
    difference_estimate,
    estimate_from,
    is_ppi,
    run_estimate,
)

__all__ = [
    "AuditStatus",
    "PPIFigures",
    "audit_status",
    "audited_queries",
    "difference_estimate",
    "estimate_from",
    "is_ppi",
    "run_estimate",
]
