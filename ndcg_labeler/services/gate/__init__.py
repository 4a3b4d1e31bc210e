"""The release gate: a candidate run against a baseline, with paired tests and Holm's method."""

from .check import DEFAULT_MEASURES, MEASURE_HELP, run_gate
from .reports import junit_xml, markdown

__all__ = [
    "DEFAULT_MEASURES",
    "MEASURE_HELP",
    "junit_xml",
    "markdown",
    "run_gate",
]
