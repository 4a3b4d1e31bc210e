"""The manual's example files parse with the reader whose format they show.

The user guide shows an example of every accepted file; this keeps each one true to the parsers.
"""

from __future__ import annotations

import re

import pytest

from ndcg_labeler import formats
from tests.paths import REPO

from .util import upload

GUIDE = REPO / "docs" / "user-guide"
# Fenced blocks that show a file (shell commands and CI snippets are not files).
FILE_BLOCK = re.compile(r"^```(?:text|csv|json)\n(.*?)^```", re.M | re.S)
# The heading a block sits under names the reader of its file.
SECTIONS = {
    ("test-sets.md", "### Queries"): formats.read_queries,
    ("test-sets.md", "### Corpus (chunks)"): formats.read_corpus,
    ("test-sets.md", "### Pool (pairs to judge)"): formats.read_pairs,
    ("test-sets.md", "### Qrels (existing judgments)"): formats.read_qrels,
    ("runs.md", "## Run formats"): lambda source, name: formats.read_run(source, name).qids,
}


def _examples() -> list[tuple[str, str, str]]:
    """(page, heading, file text) of every example file under the headings above."""
    found = []
    for page, heading in SECTIONS:
        text = (GUIDE / page).read_text(encoding="utf-8")
        section = text.split(heading + "\n", 1)[1]
        section = re.split(r"^#{2,3} ", section, maxsplit=1, flags=re.M)[0]
        found += [(page, heading, block) for block in FILE_BLOCK.findall(section)]
    return found


EXAMPLES = _examples()


def test_every_format_section_has_examples():
    assert {(page, heading) for page, heading, _ in EXAMPLES} == set(SECTIONS)


@pytest.mark.parametrize(
    ("page", "heading", "text"), EXAMPLES, ids=[f"{p}-{n}" for n, (p, _, _) in enumerate(EXAMPLES)]
)
def test_example_parses(page, heading, text):
    read = SECTIONS[(page, heading)]
    assert list(read(upload(text), f"{page}: {heading}"))
