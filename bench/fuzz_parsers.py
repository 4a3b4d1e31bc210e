"""Fuzzing the file readers for a bounded time (a script; tests/formats/test_fuzz_readers.py is
the short run in every `make test`).

`python -m bench.fuzz_parsers [--seconds 60]` feeds Hypothesis-generated inputs (lines
recombined from the tokens real files are made of, with BOMs, CR line ends and gzip; and raw
bytes) to every reader in `ndcg_labeler.formats`, runs through both the fast and the line
parser. A reader may refuse its input only with FormatError naming the file; any other
exception is a crash, printed with its input. Prints the inputs tried, the seconds and the
crashes (the manual quotes the figure: docs/operator-guide/security.md).

atheris (libFuzzer, coverage-guided) was tried first: atheris 2.3.0 installs on CPython 3.11,
but with the readers instrumented, the second input already fails inside textio's block
reader with "'bytes' object is not callable", which the same input uninstrumented never
does: an instrumentation fault, not ours. Hypothesis it is, until atheris supports 3.11 well.
"""

from __future__ import annotations

import argparse
import time

from hypothesis import HealthCheck, given, settings

from tests.formats.fuzz_inputs import FUZZ_INPUT
from tests.formats.test_fuzz_readers import read_all


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    args = parser.parse_args()
    counts = {"inputs": 0, "refusals": 0}
    deadline = time.monotonic() + args.seconds

    # Batches of 500 fresh random inputs until the time is up (a crash stops the run with
    # Hypothesis' shrunk example).
    @settings(
        max_examples=500, deadline=None, database=None, suppress_health_check=list(HealthCheck)
    )
    @given(FUZZ_INPUT)
    def fuzz(data: bytes) -> None:
        counts["inputs"] += 1
        counts["refusals"] += read_all(data)

    started = time.monotonic()
    while time.monotonic() < deadline:
        fuzz()
    took = time.monotonic() - started
    print(
        f"fuzz: {counts['inputs']:,} inputs in {took:.0f} s, 6 reader calls each "
        f"({counts['refusals']:,} refusals with a located message), 0 crashes"
    )


if __name__ == "__main__":
    main()
