"""Machine judges: LLM relevance labels kept apart from human ones, and calibrated against them."""

from .asking import Asker
from .calibration import REFERENCES, judge_agreement, labels_of, suggestions
from .catalog import (
    EDITABLE,
    MAX_NAME,
    add_judge,
    edit_judge,
    get_judge,
    list_judges,
    require_judge,
)
from .client import RateLimiter
from .lifecycle import (
    AGAIN_CHOICES,
    archive_judge,
    delete_judge,
    label_count,
    list_archived,
    restore_judge,
)
from .prompts import DEFAULT_TEMPLATE, TemplateRefused
from .runner import run_judge, select_pairs
from .settings import DEFAULTS, read_settings

__all__ = [
    "AGAIN_CHOICES",
    "DEFAULTS",
    "DEFAULT_TEMPLATE",
    "EDITABLE",
    "MAX_NAME",
    "REFERENCES",
    "Asker",
    "RateLimiter",
    "TemplateRefused",
    "add_judge",
    "archive_judge",
    "delete_judge",
    "edit_judge",
    "get_judge",
    "judge_agreement",
    "label_count",
    "labels_of",
    "list_archived",
    "list_judges",
    "read_settings",
    "require_judge",
    "restore_judge",
    "run_judge",
    "select_pairs",
    "suggestions",
]
