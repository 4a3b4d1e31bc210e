"""Gullibility probes of machine judges: do query words or a claim of relevance, added to a
passage people graded 0, talk the judge into "relevant"? Answers are stored apart."""

from .estimate import estimate_probe
from .report import FLAG_POINTS, JSON_KEYS, last_probe, probe_json
from .run import DEFAULT_PAIRS, MAX_PAIRS, check_probe, probe_pairs, read_pairs, run_probe
from .variants import VARIANTS, variants

__all__ = [
    "DEFAULT_PAIRS",
    "FLAG_POINTS",
    "JSON_KEYS",
    "MAX_PAIRS",
    "VARIANTS",
    "check_probe",
    "estimate_probe",
    "last_probe",
    "probe_json",
    "probe_pairs",
    "read_pairs",
    "run_probe",
    "variants",
]
