"""The one import use case (web and CLI): queries, corpus, pool and qrels into a test set.

Queries, pool and qrels are parsed and checked in full before anything is written; the corpus,
which may hold millions of chunks, is then streamed (services/imports/corpus.py: parsed and
written block by block). All of it is written in one transaction: a bad line anywhere, in any
file, means nothing of the import is stored.
Writes are idempotent upserts, batched through Core executemany (no ORM object per row), so
importing the same files again changes nothing and tens of MB stay fast.

Decisions a user can rely on:
- a pool or qrels line naming a qid the test set does not have (and this import does not add)
  is an error "file:line: unknown query 'q9' ..." rather than a silently created query;
- a docid missing from every corpus is created as a chunk without text (shown as such);
- grades must lie in 0..scale_max (negative trec_eval grades too are refused);
- pool priority is the rank in a TREC run (trec_eval order) or else the file order; a pair
  imported again keeps the better (lower) priority;
- qrels become judgments of the import-source pseudo-user named by `source` (default: the
  file's name); each change appends a JudgmentEvent and bumps the test set's labels_version.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import TypeVar

from flask import current_app

from ndcg_labeler.formats import (
    FormatError,
    QrelRecord,
    QueryRecord,
    Source,
    detect_pairs_format,
    first_line,
    open_source,
    read_pairs_numbered,
    read_qrels_numbered,
    read_queries_numbered,
)
from ndcg_labeler.models import TestSet
from ndcg_labeler.scoring import rank_grouped
from ndcg_labeler.services import ServiceError
from ndcg_labeler.services._db import transaction
from ndcg_labeler.services._progress import EVERY_ROWS, Progress, no_progress, position, size_of
from ndcg_labeler.services.imports.audited import record_import
from ndcg_labeler.services.imports.corpus import CorpusStream
from ndcg_labeler.services.imports.sources import FileDigest, remember
from ndcg_labeler.services.imports.write import Counts, Writer
from ndcg_labeler.services.tallies import lock_pool_counts, recount_pool

_T = TypeVar("_T")

MAX_QID = 200
MAX_DOCID = 300
MAX_SOURCE = 70  # the pseudo-user is named "import:<source>" in an 80-character column


@dataclass(frozen=True)
class ImportFile:
    """One file to import: a path or a binary stream (rewindable), and its name for messages."""

    source: Source
    filename: str
    # The file on disk it was opened from, if any: an --only-referenced import remembers it
    # to fetch the chunks it left out when a later run names them.
    path: str | None = None

    @classmethod
    def from_path(cls, path: str | os.PathLike[str]) -> ImportFile:
        """A file on disk, named as given."""
        return cls(path, os.fspath(path), os.path.abspath(path))


@dataclass
class ImportReport:
    """What an import did, per kind of record (None for a file that was not given)."""

    queries: Counts | None = None
    chunks: Counts | None = None
    chunks_not_referenced: int = 0
    chunks_without_text: int = 0
    corpus_kept: str | None = None
    pairs: Counts | None = None
    judgments: Counts | None = None
    source: str | None = None
    files: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        """One human-readable line per kind of record."""
        out = []
        if self.queries is not None:
            out.append(f"queries: {self.queries}")
        if self.chunks is not None:
            out.append(f"chunks: {self.chunks}")
        if self.chunks_not_referenced:
            out.append(
                f"chunks left out (no pool, qrels or run names them): {self.chunks_not_referenced}"
            )
        if self.corpus_kept:
            out.append(self.corpus_kept)
        if self.chunks_without_text:
            out.append(
                f"chunks without text (named by the pool or qrels, in no corpus): "
                f"{self.chunks_without_text} created"
            )
        if self.pairs is not None:
            out.append(f"pairs to judge: {self.pairs}")
        if self.judgments is not None:
            out.append(f"judgments of source '{self.source}': {self.judgments}")
        return out


@dataclass
class _Parsed:
    """Everything an import will write, parsed and checked."""

    queries: list[QueryRecord] = field(default_factory=list)
    # (qid, docid) -> (priority, pair source), pool first, then pairs judged in the qrels
    pairs: dict[tuple[str, str], tuple[int, str]] = field(default_factory=dict)
    qrels: list[QrelRecord] = field(default_factory=list)


def _start_of(source: Source) -> int | None:
    """Where a stream starts (None when it cannot be rewound); 0 for paths."""
    if isinstance(source, str | os.PathLike):
        return 0
    try:
        return source.tell() if source.seekable() else None
    except (OSError, ValueError):
        return None


def _rewind(source: Source, start: int | None) -> None:
    """Put a stream back where it started (paths need nothing)."""
    if not isinstance(source, str | os.PathLike) and start is not None:
        source.seek(start)


class _Meter:
    """Reports parsing progress: bytes of all given files read so far, and records parsed."""

    def __init__(self, progress: Progress, files: list[ImportFile]) -> None:
        self.progress = progress
        self.total = sum(size_of(f.source) for f in files)
        self.base = 0
        self.rows = 0

    def records(self, file: ImportFile, records: Iterable[_T]) -> Iterator[_T]:
        """Pass `records` through, reporting every EVERY_ROWS of them."""
        for record in records:
            self.rows += 1
            if self.rows % EVERY_ROWS == 0:
                done = min(self.base + position(file.source), self.total)
                self.progress("parse", done, self.total, self.rows)
            yield record

    def file_done(self, file: ImportFile) -> None:
        """One more file read whole."""
        self.base += size_of(file.source)
        self.progress("parse", min(self.base, self.total), self.total, self.rows)


def _max_bytes() -> int:
    return int(current_app.config["NDCG_MAX_DECOMPRESSED_BYTES"])


Numbered = list[tuple[int | None, str, str]]
"""(line or None, qid, docid) of every record of a pool or qrels file, in file order."""

# Each record is checked as it is read, so a bad line near the top is refused before the rest
# of the file is read or held (a 1 GiB file with a bad line 2 is refused at once).


def _refuse_long(file: ImportFile, line: int | None, value: str, limit: int, what: str) -> None:
    """Refuse an id longer than its column."""
    if len(value) > limit:
        reason = f"{what} '{value[:40]}…' is longer than {limit} characters"
        raise FormatError(file.filename, line, reason)


def _unknown(qid: str, known: set[str]) -> str | None:
    """Why a record naming `qid` is refused: the test set lacks it (and this import does not
    add it); None when it is known."""
    if qid in known:
        return None
    return (
        f"unknown query '{qid}': this test set has no such qid (import its queries first, "
        "or in the same import)"
    )


def _refuse_unknown(file: ImportFile, line: int | None, qid: str, known: set[str]) -> None:
    """Refuse a record naming a qid the test set lacks (and this import does not add)."""
    reason = _unknown(qid, known)
    if reason is not None:
        raise FormatError(file.filename, line, reason)


def _refuse_grade(file: ImportFile, line: int, record: QrelRecord, top: int) -> None:
    """Refuse a grade outside 0..top."""
    if not 0 <= record.grade <= top:
        hint = " (negative grades are not accepted: map them to 0)" if record.grade < 0 else ""
        reason = (
            f"grade {record.grade} for query {record.qid}, docid '{record.docid}' is "
            f"outside this test set's scale 0–{top}{hint}"
        )
        raise FormatError(file.filename, line, reason)


def _pool_kind(file: ImportFile, limit: int) -> str:
    """trec or csv/tsv, sniffed as read_pairs does; the stream is rewound afterwards."""
    start = _start_of(file.source)
    if start is None:
        raise ServiceError(f"{file.filename}: cannot re-read this stream")
    with open_source(file.source, file.filename, max_bytes=limit) as opened:
        kind = detect_pairs_format(first_line(opened.head, skip_hash=True), opened.filename)
    _rewind(file.source, start)
    return kind


def _read_pool(
    file: ImportFile, limit: int, meter: _Meter, known: set[str]
) -> tuple[Numbered, list[int]]:
    """Entries and priorities: a TREC run's rank per query (trec_eval order), else file order.

    Runs are read with read_run for their scores; it asks about each qid as it first meets
    it, so an unknown one is refused at its line before the rest is read. Its entries have
    no line numbers (None).
    """
    if _pool_kind(file, limit) != "trec":
        entries: Numbered = []
        numbered = read_pairs_numbered(file.source, file.filename, max_bytes=limit)
        for line, pair in meter.records(file, numbered):
            _refuse_unknown(file, line, pair.qid, known)
            _refuse_long(file, line, pair.docid, MAX_DOCID, "docid")
            entries.append((line, pair.qid, pair.docid))
        return entries, list(range(1, len(entries) + 1))
    from ndcg_labeler.formats import read_run  # numpy + pyarrow: not at start-up

    run = read_run(
        file.source,
        file.filename,
        fmt="trec",
        max_bytes=limit,
        qid_check=lambda qid: _unknown(qid, known),
    )
    meter.rows += int(run.offsets[-1])
    order = rank_grouped(run.offsets, run.docids, run.scores)
    entries, priorities = [], []
    for i, qid in enumerate(run.qids):
        begin, end = int(run.offsets[i]), int(run.offsets[i + 1])
        for rank, index in enumerate(order[begin:end], 1):
            docid = str(run.docids[index])
            _refuse_long(file, None, docid, MAX_DOCID, "docid")
            entries.append((None, qid, docid))
            priorities.append(rank)
    return entries, priorities


def _parse(
    test_set: TestSet,
    known_qids: set[str],
    queries: ImportFile | None,
    pool: ImportFile | None,
    qrels: ImportFile | None,
    qrels_source: str,
    meter: _Meter,
) -> _Parsed:
    """Read every given file but the corpus fully and check it against the test set; raise on
    the first error."""
    limit = _max_bytes()
    parsed = _Parsed()
    if queries is not None:
        numbered_queries = read_queries_numbered(queries.source, queries.filename, max_bytes=limit)
        for line, query in meter.records(queries, numbered_queries):
            _refuse_long(queries, line, query.qid, MAX_QID, "qid")
            parsed.queries.append(query)
        meter.file_done(queries)
        known_qids = known_qids | {q.qid for q in parsed.queries}
    if pool is not None:
        entries, priorities = _read_pool(pool, limit, meter, known_qids)
        meter.file_done(pool)
        source = os.path.basename(pool.filename)[:200]
        for (_, qid, docid), priority in zip(entries, priorities, strict=True):
            key = (qid, docid)
            if key not in parsed.pairs or priority < parsed.pairs[key][0]:
                parsed.pairs[key] = (priority, source)
    if qrels is not None:
        numbered = read_qrels_numbered(qrels.source, qrels.filename, max_bytes=limit)
        for line, record in meter.records(qrels, numbered):
            _refuse_unknown(qrels, line, record.qid, known_qids)
            _refuse_long(qrels, line, record.docid, MAX_DOCID, "docid")
            _refuse_grade(qrels, line, record, test_set.scale_max)
            parsed.qrels.append(record)
        meter.file_done(qrels)
        pair_source = f"qrels:{qrels_source}"[:200]
        for n, record in enumerate(parsed.qrels, 1):
            parsed.pairs.setdefault((record.qid, record.docid), (n, pair_source))
    return parsed


def _source_name(qrels: ImportFile | None, source: str | None) -> str:
    if qrels is None:
        return ""
    name = " ".join((source or "").split()) or os.path.basename(qrels.filename) or "qrels"
    if len(name) > MAX_SOURCE:
        raise ServiceError(f"the source name must have at most {MAX_SOURCE} characters")
    return name


def import_files(
    test_set: TestSet,
    *,
    queries: ImportFile | None = None,
    corpus: ImportFile | None = None,
    pool: ImportFile | None = None,
    qrels: ImportFile | None = None,
    source: str | None = None,
    actor_id: int | None = None,
    progress: Progress = no_progress,
    only_referenced: bool = False,
) -> ImportReport:
    """Import the given files into the test set, all or nothing; return what changed.

    `progress` is called while parsing (bytes read), streaming the corpus (its bytes) and
    writing (records written); when it raises (Cancelled), the transaction is rolled back and
    nothing is stored. `only_referenced` keeps only the corpus chunks that the test set's
    pools, qrels and runs (or this import's pool and qrels) name.
    """
    given = [f for f in (queries, corpus, pool, qrels) if f is not None]
    if not given:
        raise ServiceError("choose at least one file to import")
    source_name = _source_name(qrels, source)
    writer = Writer(test_set, actor_id, progress)
    meter = _Meter(progress, [f for f in given if f is not corpus])
    with transaction():
        known = writer.known_qids()
        parsed = _parse(test_set, known, queries, pool, qrels, source_name, meter)
        writer.total = sum(
            len(records) if given_file is not None else 0
            for given_file, records in (
                (queries, parsed.queries),
                (pool or qrels, parsed.pairs),
                (qrels, parsed.qrels),
            )
        )
        writer.rows = meter.rows
        writer.advance(0)  # the write phase starts (reported before SQLite's write lock is taken)
        report = ImportReport(source=source_name or None, files=[f.filename for f in given])
        # The counter lock first, as every counter writer does (one lock order, no deadlock).
        lock_pool_counts(test_set.id)
        if queries is not None:
            report.queries = writer.upsert_queries(parsed.queries)
        if corpus is not None:
            stream = CorpusStream(
                test_set.id, corpus.filename, progress, only_referenced=only_referenced
            )
            # Hashed while it is read, to know it unchanged when a run fetches from it.
            digest = FileDigest(corpus.path) if only_referenced and corpus.path else None
            try:
                named = [docid for _, docid in parsed.pairs]
                found = stream.write(corpus.source, _max_bytes(), named)
            except BaseException:
                if digest is not None:
                    digest.stop()
                raise
            report.chunks, report.chunks_not_referenced = found.counts, found.skipped
            report.corpus_kept = remember(
                test_set, corpus.filename, corpus.path, digest, found.skipped
            )
            writer.rows += found.rows
        named = [docid for _, docid in parsed.pairs]
        report.chunks_without_text = writer.add_missing_chunks(named)
        if pool is not None or qrels is not None:
            report.pairs = writer.upsert_pairs(parsed.pairs)
        if qrels is not None:
            note = f"imported from {os.path.basename(qrels.filename)}"
            report.judgments = writer.upsert_judgments(parsed.qrels, source_name, note)
        if pool is not None or qrels is not None:
            recount_pool(test_set.id)
        given_counts = {
            "queries": (queries, report.queries),
            "corpus": (corpus, report.chunks),
            "pool": (pool, report.pairs),
            "qrels": (qrels, report.judgments),
        }
        record_import(
            test_set,
            actor_id,
            {k: (f.filename, c) for k, (f, c) in given_counts.items() if f is not None},
            source_name or None,
            report.chunks_not_referenced,
        )
    return report
