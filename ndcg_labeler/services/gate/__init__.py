"""The release gate: a candidate run against a baseline, pass, fail or inconclusive per measure."""

from .check import DEFAULT_MAX_DROP, DEFAULT_MEASURES, MEASURE_HELP, WITHHELD, GateResult
from .reports import (
    api_body,
    cli_command,
    junit_xml,
    labels_line,
    markdown,
    power_line,
    refs,
    rule_line,
)
from .run import run_gate

__all__ = [
    "DEFAULT_MAX_DROP",
    "DEFAULT_MEASURES",
    "MEASURE_HELP",
    "WITHHELD",
    "GateResult",
    "api_body",
    "cli_command",
    "junit_xml",
    "labels_line",
    "markdown",
    "power_line",
    "refs",
    "rule_line",
    "run_gate",
]
