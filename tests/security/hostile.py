"""The hostile-file table: kinds of bad (and merely unusual) input for every upload and import
path. Each case is (kind, path, bytes, expected): "refused" (a FormatError or ServiceError
naming the file, and nothing written) or "accepted" (a valid file in an unusual dress, such as
a BOM or CRLF line ends, parsed as if it were plain)."""

from __future__ import annotations

import gzip
import io

PATHS = ("run", "queries", "corpus", "pool", "qrels")
FILENAMES = {
    "run": "run.trec",
    "queries": "queries.tsv",
    "corpus": "corpus.jsonl",
    "pool": "pool.trec",
    "qrels": "qrels.txt",
}
# A valid file for each path (the test set has queries q1 and q2 and chunks d1, d2).
VALID = {
    "run": b"q1 Q0 d1 1 2.5 bm25\nq1 Q0 d2 2 1.5 bm25\nq2 Q0 d1 1 0.5 bm25\n",
    "queries": b"q1\trefund policy\nq2\tparking rules\n",
    "corpus": b'{"_id": "d1", "text": "Refunds within 30 days."}\n{"_id": "d2", "text": "Park."}\n',
    "pool": b"q1 Q0 d1 1 2.5 pool\nq2 Q0 d2 1 1.0 pool\n",
    "qrels": b"q1 0 d1 2\nq2 0 d2 0\n",
}
LIMIT_BYTES = 1024 * 1024  # the tests' decompression limit (NDCG_MAX_DECOMPRESSED_BYTES)


def _bomb() -> bytes:
    """A gzip of 8 MiB of one repeated line: 8 KiB on the wire, past the 1 MiB limit."""
    return gzip.compress(b"q1 Q0 d1 1 1.0 x\n" * (8 * 1024 * 1024 // 17), compresslevel=9)


def _truncated_gzip(path: str) -> bytes:
    data = gzip.compress(VALID[path] * 50)
    return data[: len(data) // 2]


# Bytes that are wrong on every path, whatever format it expects.
GENERIC: dict[str, object] = {
    "empty file": b"",
    "only blank lines": b"\n\n  \n\t\n",
    "binary (PNG)": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 4,
    "binary (ZIP/xlsx)": b"PK\x03\x04\x14\x00\x06\x00" + bytes(200),
    "binary (PDF)": b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<< >>\nendobj\n",
    "NUL bytes": b"q1\x00\x00\x00\x00 Q0 d1 1 1.0 x\n" * 3,
    "UTF-16 text": "q1 Q0 d1 1 1.0 x\n".encode("utf-16"),
    "truncated gzip": _truncated_gzip,
    "gzip bomb past the limit": _bomb,
    "invalid UTF-8 (Latin-1)": "q1 Q0 caf\xe9 1 1.0 x\nq1\tcaf\xe9\n".encode("latin-1"),
    "a 10 MB line": b"q1 " + b"x" * (10 * 1024 * 1024) + b"\n",
    "gzip of garbage": gzip.compress(bytes(range(256)) * 64),
}

# Per path: bytes that are wrong only for that format (or unusual but valid).
SPECIFIC: dict[str, dict[str, tuple[bytes, str]]] = {
    "run": {
        "too few columns": (b"q1 Q0 d1 1\n", "refused"),
        "NaN score": (b"q1 Q0 d1 1 nan x\n", "refused"),
        "inf score": (b"q1 Q0 d1 1 inf x\n", "refused"),
        "1e309 score (overflows)": (b"q1 Q0 d1 1 1e309 x\n", "refused"),
        "score not a number": (b"q1 Q0 d1 1 high x\n", "refused"),
        "duplicate docid in a query": (b"q1 Q0 d1 1 2 x\nq1 Q0 d1 2 1 x\n", "refused"),
        "10 kB qid": (b"q" + b"1" * 10_000 + b" Q0 d1 1 1 x\n", "refused"),
        # No chunk can have it (docids are at most 300 characters): it scores as unjudged.
        "10 kB docid (never judged)": (b"q1 Q0 d" + b"1" * 10_000 + b" 1 1 x\n", "accepted"),
        "qrels offered as a run": (b"q1 0 d1 2\nq1 0 d2 0\n", "refused"),
        "only unknown queries": (b"zz Q0 d1 1 1 x\n", "refused"),
        "CSV header without score or rank": (b"qid,docid\nq1,d1\n", "refused"),
        "UTF-8 BOM": (b"\xef\xbb\xbf" + VALID["run"], "accepted"),
        "CRLF line ends": (VALID["run"].replace(b"\n", b"\r\n"), "accepted"),
    },
    "queries": {
        "missing text column": (b"q1\nq2\n", "refused"),
        "duplicate qid": (b"q1\ta\nq1\tb\n", "refused"),
        "10 kB qid": (b"q" + b"1" * 10_000 + b"\ttext\n", "refused"),
        "empty qid": (b"\ttext\n", "refused"),
        "JSON lines, broken JSON": (b'{"_id": "q1", "text": "a"\n', "refused"),
        "JSON lines without text": (b'{"_id": "q1"}\n', "refused"),
        "CSV formula cell (kept as text)": (b'q1\t=HYPERLINK("http://x")\n', "accepted"),
        "UTF-8 BOM": (b"\xef\xbb\xbf" + VALID["queries"], "accepted"),
        "CRLF line ends": (VALID["queries"].replace(b"\n", b"\r\n"), "accepted"),
    },
    "corpus": {
        "JSON lines, broken JSON": (b'{"_id": "d1", "text": \n', "refused"),
        "JSON value not an object": (b'["d1", "text"]\n', "refused"),
        "missing _id": (b'{"text": "no id"}\n', "refused"),
        "duplicate docid": (b'{"_id": "d1", "text": "a"}\n{"_id": "d1", "text": "b"}\n', "refused"),
        "10 kB docid": (b'{"_id": "d' + b"1" * 10_000 + b'", "text": "a"}\n', "refused"),
        "UTF-8 BOM": (b"\xef\xbb\xbf" + VALID["corpus"], "accepted"),
        "CRLF line ends": (VALID["corpus"].replace(b"\n", b"\r\n"), "accepted"),
    },
    "pool": {
        "wrong column count": (b"q1 Q0 d1\n", "refused"),
        "unknown qid": (b"zz Q0 d1 1 1.0 x\n", "refused"),
        "qrels offered as a pool": (b"q1 0 d1 2\n", "refused"),
        "10 kB docid": (b"q1 Q0 d" + b"1" * 10_000 + b" 1 1 x\n", "refused"),
        "CRLF line ends": (VALID["pool"].replace(b"\n", b"\r\n"), "accepted"),
    },
    "qrels": {
        "wrong column count": (b"q1 0 d1\n", "refused"),
        "negative grade": (b"q1 0 d1 -1\n", "refused"),
        "fractional grade": (b"q1 0 d1 1.5\n", "refused"),
        "grade past the scale": (b"q1 0 d1 7\n", "refused"),
        "grade not a number": (b"q1 0 d1 high\n", "refused"),
        "unknown qid": (b"zz 0 d1 2\n", "refused"),
        "the same pair twice, two grades": (b"q1 0 d1 2\nq1 0 d1 3\n", "refused"),
        "a run offered as qrels": (b"q1 Q0 d1 1 2.5 bm25\n", "refused"),
        "UTF-8 BOM": (b"\xef\xbb\xbf" + VALID["qrels"], "accepted"),
        "CRLF line ends": (VALID["qrels"].replace(b"\n", b"\r\n"), "accepted"),
    },
}


def cases() -> list[tuple[str, str, bytes, str]]:
    """Every (kind, path, bytes, expected) of the table."""
    out = []
    for path in PATHS:
        for kind, data in GENERIC.items():
            raw = data(path) if kind == "truncated gzip" else (data() if callable(data) else data)
            out.append((kind, path, raw, "refused"))
        for kind, (raw, expected) in SPECIFIC[path].items():
            out.append((kind, path, raw, expected))
    return out


def stream(data: bytes) -> io.BytesIO:
    return io.BytesIO(data)
