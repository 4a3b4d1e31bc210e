"""Machine judges: LLM relevance labels kept apart from human ones, and calibrated against them."""

from .audit_sample import AuditState, audit_state, draw_audit, draw_order
from .calibration import REFERENCES, judge_agreement, labels_of, suggestions
from .catalog import (
    DEFAULT_MAX_TOKENS,
    MAX_CONCURRENCY,
    MAX_NAME,
    MAX_TIMEOUT,
    MAX_TOKENS,
    add_judge,
    get_judge,
    list_judges,
    require_judge,
)
from .client import RateLimiter
from .prompts import DEFAULT_TEMPLATE, TemplateRefused
from .runner import run_judge, select_pairs

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "DEFAULT_TEMPLATE",
    "MAX_CONCURRENCY",
    "MAX_NAME",
    "MAX_TIMEOUT",
    "MAX_TOKENS",
    "REFERENCES",
    "AuditState",
    "RateLimiter",
    "TemplateRefused",
    "add_judge",
    "audit_state",
    "draw_audit",
    "draw_order",
    "get_judge",
    "judge_agreement",
    "labels_of",
    "list_judges",
    "require_judge",
    "run_judge",
    "select_pairs",
    "suggestions",
]
