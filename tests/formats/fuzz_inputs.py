"""Hypothesis strategies for fuzzing the readers: raw bytes, and lines recombined from the
tokens real files are made of (ids, Q0, numbers, nan/inf, quotes, separators, BOM, CR, gzip)."""

from __future__ import annotations

import gzip

from hypothesis import strategies as st

TOKENS = [
    "q1", "q2", "d1", "d2", "Q0", "0", "1", "2", "-1", "1.5", "1e309", "nan", "inf", "-0",
    "bm25", "qid", "docid", "score", "rank", "query-id", "corpus-id", "_id", "text", "title",
    '{"_id": "d1", "text": "x"}', '{"qid": "q1", "docid": "d1", "score": 1}', "{", "}", '"',
    "=SUM(A1)", "é", "日本", "\u00a0", "#", "",
]  # fmt: skip
SEPARATORS = [" ", "\t", ",", "  ", " \t", ";"]
ENDINGS = ["\n", "\r\n", "\r", ""]


@st.composite
def token_lines(draw: st.DrawFn) -> bytes:
    """A file of lines built from real tokens and separators, maybe with a BOM, maybe gzipped."""
    lines = draw(
        st.lists(
            st.tuples(
                st.lists(st.sampled_from(TOKENS), min_size=0, max_size=8),
                st.sampled_from(SEPARATORS),
                st.sampled_from(ENDINGS),
            ),
            max_size=12,
        )
    )
    text = "".join(sep.join(tokens) + end for tokens, sep, end in lines)
    data = (b"\xef\xbb\xbf" if draw(st.booleans()) else b"") + text.encode()
    return gzip.compress(data) if draw(st.booleans()) else data


FUZZ_INPUT = st.one_of(token_lines(), st.binary(max_size=400))
