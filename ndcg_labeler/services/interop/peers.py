"""Quepid and SRW files into a test set: translated to our own formats, then the one import.

A peer names a query by its text. A text equal (whitespace folded) to a query the test set
has is that query; a new text becomes a new query whose qid is ``t-`` and the first 10 hex
digits of the text's SHA-1, so importing the same file twice changes nothing. A text shared
by two of the set's queries is refused: which one is meant cannot be told.

Each peer file is read and checked whole (its own line numbers or JSON places in every
error, ratings mapped by the rating map), then written as BEIR queries, TREC qrels and a
qid,docid pool into memory and given to ``imports.import_files``: the same checks, counts
and all-or-nothing transaction as every other import.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field

import sqlalchemy as sa
from flask import current_app

from ndcg_labeler.extensions import db
from ndcg_labeler.formats import (
    FormatError,
    RatingMap,
    RatingMapError,
    TextJudgment,
    clean_text,
    read_quepid_judgments,
    read_quepid_snapshot,
    read_srw_judgments,
    read_srw_query_set,
)
from ndcg_labeler.models import Query, Run, TestSet, User
from ndcg_labeler.services import ServiceError, imports, runs
from ndcg_labeler.services._progress import Progress, no_progress

PEER_FORMATS = ("quepid", "srw-judgments", "srw-queries")
"""Peer files a test set imports: Quepid judgments CSV, SRW judgment list, SRW query set."""

NOTHING_NEW = "nothing new: every query is in the test set already, and no ratings"
"""What a peer import that changes nothing says (CLI, API's `message`, import page)."""

SNAPSHOT_FORMAT = "quepid-snapshot"
"""A run uploaded as a Quepid case snapshot: its format's name (CLI, API, browser, Run.format)."""

MAX_DOCID = 300


def nothing_new_message(report: imports.ImportReport) -> str | None:
    """NOTHING_NEW when the import changed nothing (its report has no line), else None."""
    return None if report.lines() else NOTHING_NEW


def text_qid(text: str) -> str:
    """The qid given to a new query named only by its text (stable: same text, same qid)."""
    return "t-" + hashlib.sha1(clean_text(text).encode()).hexdigest()[:10]


def _max_bytes() -> int:
    return int(current_app.config["NDCG_MAX_DECOMPRESSED_BYTES"])


class _Texts:
    """The test set's query texts and the qids they name (new texts get text_qid)."""

    def __init__(self, test_set: TestSet) -> None:
        self.known: dict[str, str] = {}
        self.shared: set[str] = set()
        rows = db.session.execute(
            sa.select(Query.qid, Query.text).where(Query.test_set_id == test_set.id)
        )
        for qid, text in rows:
            key = clean_text(text)
            if key in self.known:
                self.shared.add(key)
            self.known.setdefault(key, qid)
        self.new: dict[str, str] = {}

    def qid(self, text: str, filename: str, line: int | None) -> str:
        """The qid of `text`; text_qid(text) when the set lacks it (a new query)."""
        if text in self.shared:
            reason = f"two queries of this test set have the text '{text[:60]}': rename one first"
            raise FormatError(filename, line, reason)
        if text in self.known:
            return self.known[text]
        return self.new.setdefault(text, text_qid(text))


@dataclass
class _Native:
    """A peer file rewritten as our own formats (an empty list: nothing of that kind)."""

    queries: list[tuple[str, str]] = field(default_factory=list)
    qrels: list[tuple[str, str, int]] = field(default_factory=list)
    pool: list[tuple[str, str]] = field(default_factory=list)


def _judgments(
    native: _Native,
    texts: _Texts,
    numbered: Iterable[tuple[int | None, TextJudgment]],
    mapping: RatingMap,
    filename: str,
) -> None:
    """Queries, qrels and the unrated pairs (a pool) of a peer's judgments."""
    for line, judgment in numbered:
        qid = texts.qid(judgment.query, filename, line)
        if judgment.docid is None:
            continue
        if len(judgment.docid) > MAX_DOCID:
            raise FormatError(filename, line, f"docid is longer than {MAX_DOCID} characters")
        if judgment.rating is None:
            native.pool.append((qid, judgment.docid))
            continue
        try:
            grade = mapping.grade(judgment.rating)
        except RatingMapError as exc:
            raise FormatError(filename, line, f"docid '{judgment.docid}': {exc}") from None
        native.qrels.append((qid, judgment.docid, grade))
    native.queries = [(qid, text) for text, qid in texts.new.items()]


def _translate(
    test_set: TestSet, fmt: str, file: imports.ImportFile, rating_map: str | None
) -> _Native:
    """Read and check the peer file whole; raise FormatError at its first bad record."""
    if fmt not in PEER_FORMATS:
        raise ServiceError(f"the peer format must be one of {', '.join(PEER_FORMATS)}, not '{fmt}'")
    try:
        mapping = RatingMap.parse(rating_map, test_set.scale_max)
    except RatingMapError as exc:
        raise ServiceError(str(exc)) from None
    texts = _Texts(test_set)
    native = _Native()
    limit = _max_bytes()
    if fmt == "quepid":
        numbered = read_quepid_judgments(file.source, file.filename, max_bytes=limit)
        _judgments(native, texts, numbered, mapping, file.filename)
    elif fmt == "srw-judgments":
        records = read_srw_judgments(file.source, file.filename, max_bytes=limit)
        _judgments(native, texts, ((None, r) for r in records), mapping, file.filename)
    else:
        for text in read_srw_query_set(file.source, file.filename, max_bytes=limit):
            texts.qid(text, file.filename, None)
        native.queries = [(qid, text) for text, qid in texts.new.items()]
    return native


def _memory(lines: Iterable[str]) -> io.BytesIO:
    return io.BytesIO("".join(lines).encode())


def native_files(
    test_set: TestSet, fmt: str, file: imports.ImportFile, rating_map: str | None = None
) -> dict[str, imports.ImportFile]:
    """A peer's file (fmt in PEER_FORMATS), checked whole, as import_files' keyword files
    (queries, pool, qrels in our own formats, in memory, named as the peer's file)."""
    native = _translate(test_set, fmt, file, rating_map)
    base = os.path.basename(file.filename) or fmt
    given: dict[str, imports.ImportFile] = {}
    if native.queries:
        body = _memory(json.dumps({"_id": q, "text": t}) + "\n" for q, t in native.queries)
        given["queries"] = imports.ImportFile(body, base)
    if native.pool:
        given["pool"] = imports.ImportFile(_memory(f"{q}\t{d}\n" for q, d in native.pool), base)
    if native.qrels:  # an empty qrels file would be refused: no ratings, no qrels
        body = _memory(f"{q} 0 {d} {g}\n" for q, d, g in native.qrels)
        given["qrels"] = imports.ImportFile(body, base)
    return given


def import_peer(
    test_set: TestSet,
    fmt: str,
    file: imports.ImportFile,
    *,
    rating_map: str | None = None,
    source: str | None = None,
    actor_id: int | None = None,
    progress: Progress = no_progress,
) -> imports.ImportReport:
    """Import a Quepid or SRW file (fmt in PEER_FORMATS), all or nothing, as import_files does."""
    given = native_files(test_set, fmt, file, rating_map)
    if not given:
        return imports.ImportReport(files=[file.filename])
    report = imports.import_files(
        test_set, **given, source=source, actor_id=actor_id, progress=progress
    )
    report.files = [file.filename]
    return report


def upload_quepid_snapshot(
    test_set: TestSet,
    file: imports.ImportFile,
    name: str,
    user: User | None,
    *,
    depth: int | None = None,
    notes: str = "",
    series: str | None = None,
) -> Run:
    """Store a Quepid case snapshot (CSV) as a run: each query's documents in their positions.

    A text the test set lacks is left out and reported, as any run's unknown qid is (its qid
    is text_qid). The run is written as TREC with score = (last position + 1 − position), so
    trec_eval's order is the snapshot's; it is recorded as format quepid-snapshot, the file's.
    """
    texts = _Texts(test_set)
    by_qid: dict[str, list[tuple[int, str]]] = {}
    numbered = read_quepid_snapshot(file.source, file.filename, max_bytes=_max_bytes())
    for line, row in numbered:
        qid = texts.qid(row.query, file.filename, line)
        by_qid.setdefault(qid, []).append((row.position, row.docid))
    if not by_qid:
        raise FormatError(file.filename, None, "the snapshot has no documents")
    out = []
    for qid, docs in by_qid.items():
        top = max(position for position, _ in docs)
        for position, docid in sorted(docs):
            out.append(f"{qid} Q0 {docid} {position} {top + 1 - position} quepid\n")
    base = os.path.basename(file.filename) or "snapshot.csv"
    return runs.upload_run(
        test_set,
        _memory(out),
        base,
        name,
        user,
        depth=depth,
        notes=notes,
        series=series,
        recorded_format=SNAPSHOT_FORMAT,
    )
