"""Better machine judges from what a team already has: few-shot prompts from the test set's
own labels, ensembles of judges with a per-pair uncertainty, and the calibration page's
figures for both (κ per prompt version and per member, the worst disagreements)."""

from .combine import (
    COMBINE,
    add_ensemble,
    combine_answers,
    combine_grades,
    is_ensemble,
    judge_version,
    key_warnings,
    members_of,
)
from .fewshot import MAX_FEW_SHOT, check_few_shot, judge_shots, set_few_shot
from .figures import calibration_extras, machine_labels

__all__ = [
    "COMBINE",
    "MAX_FEW_SHOT",
    "add_ensemble",
    "calibration_extras",
    "check_few_shot",
    "combine_answers",
    "combine_grades",
    "is_ensemble",
    "judge_shots",
    "judge_version",
    "key_warnings",
    "machine_labels",
    "members_of",
    "set_few_shot",
]
