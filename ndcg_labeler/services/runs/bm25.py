"""A BM25 run of the test set's own corpus: something to pool from before any retriever exists.

The ranking is bm25s's (Lù 2024; Lucene's BM25: idf = ln(1 + (N − df + 0.5) / (df + 0.5)), a
term's weight idf·tf / (tf + k1·(1 − b + b·|d| / avgdl)), without the constant (k1 + 1) factor
since Lucene 8, so scores are Lucene's and rankings Robertson's) over each chunk's title and
text, tokenised by bm25s with its English stop words and PyStemmer's English (Snowball)
stemmer. Chunks sharing no term with a query score 0 and are left out of its list. The run is
stored through the upload path (validated, ranked like trec_eval, one transaction), and its
notes say how it was built.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import sqlalchemy as sa

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Chunk, Query, Run, TestSet, User
from ndcg_labeler.services import ServiceError
from ndcg_labeler.services._progress import Progress, no_progress

from .upload import check_upload, upload_run

# Anserini's defaults for passage collections (MS MARCO); the form and --k1/--b change them.
K1 = 0.9
B = 0.4
DEPTH = 100
_QUERY_BATCH = 256


@dataclass(frozen=True)
class Settings:
    """How a BM25 run is built."""

    depth: int = DEPTH
    k1: float = K1
    b: float = B

    def check(self) -> Settings:
        """The settings, or a ServiceError saying which one is out of range."""
        if not 0 < self.k1 <= 10:
            raise ServiceError(f"k1 must be above 0 and at most 10, not {self.k1:g}")
        if not 0 <= self.b <= 1:
            raise ServiceError(f"b must be from 0 to 1, not {self.b:g}")
        return self

    def notes(self, chunks: int) -> str:
        """What the run's notes say about how it was built."""
        import bm25s

        return (
            f"BM25 of the test set's corpus ({chunks:,} chunks): k1={self.k1:g}, b={self.b:g}, "
            f"depth {self.depth}; bm25s {bm25s.__version__}, English stop words, Snowball stemmer"
        )


def create_bm25_run(
    test_set: TestSet,
    name: str,
    created_by: User | None,
    settings: Settings | None = None,
    progress: Progress = no_progress,
) -> Run:
    """Rank the test set's chunks for each of its queries with BM25 and store it as run `name`.

    `progress` hears ("index", chunks done, chunks, 0), ("search", queries done, queries, 0),
    then the upload's own reports; when it raises (Cancelled), nothing is stored.
    """
    settings = (settings or Settings()).check()
    name, depth, _ = check_upload(test_set, name or "BM25", settings.depth, "")
    docids, texts = _corpus(test_set)
    if not docids:
        raise ServiceError("the test set has no corpus: import chunks first")
    qids, questions = _queries(test_set)
    if not qids:
        raise ServiceError("the test set has no queries: import them first")
    text = _trec_text(docids, texts, qids, questions, settings, depth, progress)
    return upload_run(
        test_set,
        io.BytesIO(text),
        "bm25.trec",
        name,
        created_by,
        depth=depth,
        notes=settings.notes(len(docids)),
        progress=progress,
    )


def corpus_size(test_set: TestSet) -> int:
    """How many chunks a BM25 run of the test set indexes."""
    count = sa.select(sa.func.count()).where(Chunk.test_set_id == test_set.id)
    return int(db.session.scalar(count) or 0)


def _corpus(test_set: TestSet) -> tuple[list[str], list[str]]:
    """Every chunk's docid and searchable text (title, then text)."""
    rows = db.session.execute(
        sa.select(Chunk.docid, Chunk.title, Chunk.text)
        .where(Chunk.test_set_id == test_set.id)
        .order_by(Chunk.id)
    )
    docids, texts = [], []
    for docid, title, text in rows:
        docids.append(docid)
        texts.append(" ".join(part for part in (title, text) if part))
    return docids, texts


def _queries(test_set: TestSet) -> tuple[list[str], list[str]]:
    rows = db.session.execute(
        sa.select(Query.qid, Query.text).where(Query.test_set_id == test_set.id).order_by(Query.id)
    )
    qids, questions = [], []
    for qid, text in rows:
        qids.append(qid)
        questions.append(text or "")
    return qids, questions


def _trec_text(
    docids: Sequence[str],
    texts: Sequence[str],
    qids: Sequence[str],
    questions: Sequence[str],
    settings: Settings,
    depth: int,
    progress: Progress,
) -> bytes:
    """The ranking as a TREC run file (qid Q0 docid rank score bm25)."""
    import bm25s
    import Stemmer

    stemmer = Stemmer.Stemmer("english")
    progress("index", 0, len(docids), 0)
    corpus = bm25s.tokenize(list(texts), stopwords="en", stemmer=stemmer, show_progress=False)
    retriever = bm25s.BM25(k1=settings.k1, b=settings.b)
    retriever.index(corpus, show_progress=False)
    progress("index", len(docids), len(docids), 0)
    k = min(depth, len(docids))
    out = io.StringIO()
    for start in range(0, len(qids), _QUERY_BATCH):
        batch = list(questions[start : start + _QUERY_BATCH])
        tokens = bm25s.tokenize(batch, stopwords="en", stemmer=stemmer, show_progress=False)
        found, scores = retriever.retrieve(tokens, k=k, show_progress=False, n_threads=1)
        for row, qid in enumerate(qids[start : start + len(batch)]):
            kept = np.flatnonzero(scores[row] > 0)
            for rank, column in enumerate(kept, start=1):
                doc = docids[int(found[row, column])]
                out.write(f"{qid} Q0 {doc} {rank} {float(scores[row, column])!r} bm25\n")
        progress("search", min(start + _QUERY_BATCH, len(qids)), len(qids), 0)
    text = out.getvalue()
    if not text:
        raise ServiceError("no query shares a word with the corpus: BM25 found nothing")
    return text.encode()
