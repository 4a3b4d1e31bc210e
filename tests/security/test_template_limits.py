"""The two prompt-template attacks of issue 28, timed and measured for the security summary."""

from __future__ import annotations

import resource
import time

import pytest

from ndcg_labeler.services import ServiceError
from ndcg_labeler.services.judges.prompts import check_template
from ndcg_labeler.services.judges.sandbox import MAX_OUTPUT, MAX_RANGE, MEMORY_LIMIT, TIME_LIMIT


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kB on Linux


def test_a_string_bomb_and_endless_loops_cannot_hold_the_worker(record_property) -> None:
    peak, started = _peak_mb(), time.monotonic()
    with pytest.raises(ServiceError, match="repeating a sequence would make more than 200 kB"):
        check_template('{% set a = "a" * 1000000000 %}{{ a|length }}')
    bomb_seconds, grown = time.monotonic() - started, _peak_mb() - peak
    assert bomb_seconds < TIME_LIMIT and grown < 50  # was 21 s and +1.2 GB in the worker

    started = time.monotonic()
    with pytest.raises(ServiceError, match=f"longer than {TIME_LIMIT:g} s"):
        # 10^10 iterations, no range() to count: only the time limit stops it.
        check_template(
            '{% set s = "a" * 100000 %}{% for a in s %}{% for b in s %}{% endfor %}{% endfor %}'
        )
    loop_seconds = time.monotonic() - started
    assert loop_seconds < TIME_LIMIT + 1.5  # the limit, plus starting the renderer
    record_property(
        "security-summary",
        f"templates: string bomb refused in {bomb_seconds:.2f} s, +{grown:.0f} MB in the worker; "
        f"endless loops refused in {loop_seconds:.1f} s; output cap {MAX_OUTPUT // 1000} kB, "
        f"range() {MAX_RANGE:,} items, {MEMORY_LIMIT >> 20} MB per renderer process",
    )
