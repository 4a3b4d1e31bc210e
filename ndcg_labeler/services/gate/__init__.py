"""The release gate: a candidate run against a baseline, pass, fail or inconclusive per measure."""

from .check import DEFAULT_MAX_DROP, DEFAULT_MEASURES, MEASURE_HELP
from .reports import junit_xml, markdown
from .run import run_gate

__all__ = [
    "DEFAULT_MAX_DROP",
    "DEFAULT_MEASURES",
    "MEASURE_HELP",
    "junit_xml",
    "markdown",
    "run_gate",
]
