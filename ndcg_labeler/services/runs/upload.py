"""Retriever runs: the one upload use case (browser, CLI, API), listing and deletion.

An upload is parsed and validated in full (formats.read_run: file:line errors, a docid twice in
one query is an error), each query is ranked like trec_eval (score descending, docid
descending) and cut at `depth`, and the whole run is written in one transaction as one
RunQuery row per query: nothing of a bad file is stored. Queries the test set lacks are
reported (count and examples) and left out; docids the corpus lacks are kept (unjudged) and
reported (count, entries, examples).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, BinaryIO

import numpy as np
import sqlalchemy as sa
from flask import current_app
from sqlalchemy.exc import IntegrityError

from ndcg_labeler.extensions import db

if TYPE_CHECKING:
    import pyarrow as pa

    from ndcg_labeler.formats import ParsedRun
from ndcg_labeler.models import Query, Run, RunQuery, TestSet, User
from ndcg_labeler.scoring import permutation, rank_grouped, tie_moves
from ndcg_labeler.services import ServiceError, audit, live
from ndcg_labeler.services._db import bump_versions, large_transaction
from ndcg_labeler.services._progress import Progress, ReadProgress, no_progress, size_of
from ndcg_labeler.services.live import RankedBuffer
from ndcg_labeler.services.runs.corpus_check import docids_not_in_corpus, lacking_docids
from ndcg_labeler.services.runs.digest import read_hashed

MAX_NAME = 200
MAX_NOTES = 5000
MAX_DEPTH = 100_000
EXAMPLES = 10
_BATCH = 2000


def _parse(raw: BinaryIO, filename: str, progress: Progress) -> tuple[ParsedRun, str]:
    """Parse the whole run and hash the bytes as uploaded (gzip included)."""
    from ndcg_labeler.formats import read_run  # numpy + pyarrow: not at start-up

    max_bytes = int(current_app.config["NDCG_MAX_DECOMPRESSED_BYTES"])

    def read(stream: BinaryIO) -> ParsedRun:
        if progress is not no_progress:
            stream = ReadProgress(stream, progress, size_of(stream))  # type: ignore[assignment]
        return read_run(stream, filename, max_bytes=max_bytes)

    return read_hashed(raw, read)


@dataclass(frozen=True)
class _Ranked:
    """A parsed run reduced to the test set's queries, ranked and cut, ready to store."""

    query_ids: list[int]
    blobs: list[memoryview]  # per query: its docids joined by newlines
    scores: list[memoryview]  # per query: its scores as float64 bytes
    entries: int
    buffer: RankedBuffer | None  # the same docids laid out for the scoring cache


# Extensions a run file's name loses when it names the run ("bm25.trec.gz" -> "bm25").
_RUN_SUFFIXES = (".gz", ".trec", ".run", ".txt", ".tsv", ".csv", ".jsonl", ".json", ".res")


def name_from_file(filename: str) -> str:
    """The run name a file suggests: its base name without directories and run extensions."""
    name = os.path.basename((filename or "").replace("\\", "/"))
    while True:
        lowered = name.lower()
        suffix = next((s for s in _RUN_SUFFIXES if lowered.endswith(s) and len(name) > len(s)), "")
        if not suffix:
            return name
        name = name[: -len(suffix)]


def clean_name(name: str, filename: str = "") -> str:
    """A run name: one line, trimmed, 1..200 characters; when left empty, the file's name
    (`name_from_file`) is used."""
    name = " ".join((name or "").split()) or " ".join(name_from_file(filename).split())
    if not name:
        raise ServiceError("the run needs a name")
    if len(name) > MAX_NAME:
        raise ServiceError(f"the run name must have at most {MAX_NAME} characters")
    return name


def clean_series(series: str | None) -> str | None:
    """A series name: one line, trimmed, at most MAX_NAME characters; empty means no series."""
    series = " ".join((series or "").split())
    if len(series) > MAX_NAME:
        raise ServiceError(f"the series name must have at most {MAX_NAME} characters")
    if "/" in series:
        # The series page's address holds the name as one path segment.
        raise ServiceError("a series name cannot contain '/'")
    if series in (".", ".."):
        # As a path segment, browsers resolve it away: the series page could not be opened.
        raise ServiceError(f"a series cannot be named '{series}'")
    return series or None


def series_from_name(test_set: TestSet, name: str) -> str | None:
    """The series a run named `name` joins by the test set's separator rule (None: none)."""
    separator = test_set.series_separator
    if not separator or separator not in name[1:]:
        return None
    found = name[: name.index(separator, 1)].strip()
    return found if found and "/" not in found and found not in (".", "..") else None


def _check_depth(depth: int | None) -> int:
    if depth is None:
        depth = int(current_app.config["NDCG_RUN_DEPTH"])
    if isinstance(depth, bool) or not isinstance(depth, int) or not 1 <= depth <= MAX_DEPTH:
        raise ServiceError(f"depth must be a whole number from 1 to {MAX_DEPTH}")
    return depth


def name_taken(test_set: TestSet, name: str) -> bool:
    """True when the test set already has a run with this name."""
    stmt = sa.select(Run.id).where(Run.test_set_id == test_set.id, Run.name == name)
    return db.session.scalar(stmt) is not None


def upload_run(
    test_set: TestSet,
    stream_or_path: BinaryIO | str | os.PathLike[str],
    filename: str | None,
    name: str,
    uploaded_by: User | None,
    depth: int | None = None,
    notes: str = "",
    progress: Progress = no_progress,
    series: str | None = None,
    recorded_format: str | None = None,
) -> Run:
    """Parse, validate, rank and store a run whole (one transaction); returns the new Run.

    `progress` hears of bytes parsed, then of ranked lists stored; when it raises
    (Cancelled), nothing is stored. `recorded_format`: the format the run is recorded (and
    reported) as, when the file parsed is a translation of the one uploaded (a Quepid
    snapshot is read as TREC); by default the format detected.

    Raises FormatError (file:line) for a bad file and ServiceError for a refused upload
    (duplicate name, no known query, bad depth); in both cases nothing is written.
    """
    name, depth, notes = check_upload(test_set, name, depth, notes)
    owned = isinstance(stream_or_path, str | os.PathLike)
    if filename is None:
        filename = os.path.basename(os.fspath(stream_or_path)) if owned else "<upload>"
    raw: BinaryIO = open(stream_or_path, "rb") if owned else stream_or_path  # noqa: SIM115
    # Scoring the run reads every grade of the test set: they are read while it is parsed.
    ahead = live.GradesAhead(test_set.id)
    try:
        parsed, sha256 = _parse(raw, filename, progress)
    finally:
        if owned:
            raw.close()
    return store_parsed_run(
        test_set,
        parsed,
        sha256,
        filename,
        name,
        uploaded_by,
        depth,
        notes,
        progress,
        ahead=ahead,
        series=series,
        recorded_format=recorded_format,
    )


def check_upload(
    test_set: TestSet, name: str, depth: int | None, notes: str
) -> tuple[str, int, str]:
    """The cleaned name, depth and notes; refuses a bad or taken name, depth or notes."""
    name = clean_name(name)
    depth = _check_depth(depth)
    notes = (notes or "").strip()
    if len(notes) > MAX_NOTES:
        raise ServiceError(f"the notes must have at most {MAX_NOTES} characters")
    if name_taken(test_set, name):
        raise ServiceError(f"test set '{test_set.name}' already has a run named '{name}'")
    return name, depth, notes


def store_parsed_run(
    test_set: TestSet,
    parsed: ParsedRun,
    sha256: str,
    filename: str,
    name: str,
    uploaded_by: User | None,
    depth: int | None = None,
    notes: str = "",
    progress: Progress = no_progress,
    in_trec_order: bool = False,
    ahead: live.GradesAhead | None = None,
    series: str | None = None,
    recorded_format: str | None = None,
) -> Run:
    """upload_run after parsing: a run already in formats.read_run's form (validated: no
    docid twice in a query, no whitespace in ids), with the sha256 of its file's bytes, is
    checked, ranked, cut and stored the same way, in one transaction. `in_trec_order`: each
    query's entries are already in trec_eval's order (scoring.rank_grouped's), so ranking them
    again is skipped (a fused run is made in that order). `parsed` is spent: ranking may put
    its arrays in rank order in place. `ahead`: the test set's grades, read since before the
    parse (else read from here on, while the run is ranked and written). `recorded_format`:
    as upload_run's."""
    name, depth, notes = check_upload(test_set, name, depth, notes)
    series = clean_series(series) or series_from_name(test_set, name)
    known = _query_ids(test_set)
    unknown = _unknown_queries(test_set, parsed, known, filename)
    ahead = ahead or live.GradesAhead(test_set.id)
    progress("rank", 0, 1, int(parsed.offsets[-1]))
    ranked = _rank(parsed, known, depth, in_trec_order)
    progress("rank", 1, 1, int(parsed.offsets[-1]))
    lacking, wanted = lacking_docids(test_set.id, ranked.blobs)
    fmt = recorded_format or parsed.format
    run = Run(
        test_set_id=test_set.id,
        name=name,
        uploaded_by_id=uploaded_by.id if uploaded_by is not None else None,
        filename=filename[:300],
        sha256=sha256,
        format=fmt,
        depth=depth,
        notes=notes,
        series=series,
        num_queries=len(ranked.query_ids),
        num_entries=ranked.entries,
        report={
            **_report(filename, parsed, ranked, known, unknown),
            "docids_not_in_corpus": lacking,
        },
    )
    try:
        with large_transaction() as checkpoint:
            if lacking["count"]:
                _fetch_lacking(test_set, run, ranked.blobs, wanted, progress)
            db.session.add(run)
            db.session.flush()
            # With the run, in its transaction: an upload that fails leaves no event.
            audit.record(
                uploaded_by,
                "run.upload",
                "run",
                run.id,
                test_set_id=test_set.id,
                name=name,
                filename=run.filename,
                sha256=sha256,
                format=fmt,
                queries=run.num_queries,
                entries=run.num_entries,
                **({"series": series} if series else {}),
            )
            # This process has the ranked lists at hand: they are scored while they are written.
            ahead.score(run, ranked.query_ids, ranked.blobs, ranked.buffer)
            _insert_queries(run.id, ranked, progress)
            bump_versions(test_set.id, runs=True)
    except IntegrityError:
        # Another upload took the name between our check and our commit.
        raise ServiceError(f"test set '{test_set.name}' already has a run named '{name}'") from None
    # Store the figures (while SQLite copies the write into the database file).
    try:
        ahead.store(run)
    finally:
        checkpoint.wait()
    return run


def _fetch_lacking(
    test_set: TestSet,
    run: Run,
    blobs: list[memoryview],
    wanted: Callable[[], list[str]],
    progress: Progress,
) -> None:
    """Fetch the docids the run names that lack text from the corpus files --only-referenced
    imports left them out of (in the upload's transaction), and say so in the run's report."""
    from ndcg_labeler.services import imports  # it builds on this package: imported late

    fetched = imports.fetch_named(test_set, wanted, progress)
    if not fetched.entries:
        return
    report = dict(run.report or {})
    if fetched.fetched:
        report["docids_not_in_corpus"] = docids_not_in_corpus(test_set.id, blobs)
    report["corpus_fetch"] = fetched.report(report["docids_not_in_corpus"])
    run.report = report


def _unknown_queries(
    test_set: TestSet, parsed: ParsedRun, known: dict[str, int], filename: str
) -> list[str]:
    """The run's qids the test set lacks; refuses a run with no known query."""
    unknown = [qid for qid in parsed.qids if qid not in known]
    if len(unknown) == len(parsed.qids):
        examples = ", ".join(unknown[:3])
        if len(unknown) == 1:
            raise ServiceError(
                f"{filename}: the run's one query is not in test set '{test_set.name}' ({examples})"
            )
        raise ServiceError(
            f"{filename}: none of the run's {len(parsed.qids)} queries is in test set "
            f"'{test_set.name}' (e.g. {examples})"
        )
    return unknown


def _report(
    filename: str, parsed: ParsedRun, ranked: _Ranked, known: dict[str, int], unknown: list[str]
) -> dict[str, object]:
    """What the upload read and stored (Run.report), with examples of the queries left out."""
    stored = set(ranked.query_ids)
    missing = [qid for qid, qpk in known.items() if qpk not in stored]
    return {
        "filename": filename,
        "lines": int(parsed.lines),
        "queries_in_file": len(parsed.qids),
        "entries_in_file": int(parsed.offsets[-1]),
        "queries_stored": len(ranked.query_ids),
        "entries_stored": ranked.entries,
        "unknown_queries": {"count": len(unknown), "examples": unknown[:EXAMPLES]},
        "missing_queries": {"count": len(missing), "examples": sorted(missing)[:EXAMPLES]},
    }


def _query_ids(test_set: TestSet) -> dict[str, int]:
    """The test set's qid -> Query.id."""
    rows = db.session.execute(
        sa.select(Query.qid, Query.id).where(Query.test_set_id == test_set.id)
    )
    return dict(rows.all())


def _rank(parsed: ParsedRun, known: dict[str, int], depth: int, ordered: bool = False) -> _Ranked:
    """trec_eval order per query (scoring.rank_grouped), top `depth` of each known query.

    Vectorised in pyarrow: the newline-ended docids (ParsedRun.newline_ended) are put in rank
    order, in place when that moves few (_in_place) or else by one take; every query's blob and
    the cache's buffer are views of the same bytes.
    """
    import pyarrow as pa

    qids, offsets, docids, scores = parsed.qids, parsed.offsets, parsed.newline_ended, parsed.scores
    none = np.empty(0, dtype=np.intp)
    moves = (none, none) if ordered else tie_moves(offsets, docids, scores)
    qpks = np.fromiter((known.get(q, -1) for q in qids), dtype=np.int64, count=len(qids))
    counts = np.diff(offsets)
    kept = np.where(qpks >= 0, np.minimum(counts, depth), 0)
    whole = bool((kept == counts).all())
    reordered = _in_place(parsed, *moves) if whole and moves is not None else None
    if reordered is None:
        # tie_moves' answer when it has one (rank_grouped would work it out again).
        perm = (
            rank_grouped(offsets, docids, scores)
            if moves is None
            else permutation(len(scores), *moves)
        )
        if not whole:
            rank_in_query = np.arange(perm.size) - np.repeat(offsets[:-1], counts)
            perm = perm[rank_in_query < np.repeat(kept, counts)]
        ended = docids.take(pa.array(perm))
        ranked_scores = np.ascontiguousarray(scores[perm], dtype=np.float64)
    else:
        ended, ranked_scores, hashes = reordered
    # Ids never hold whitespace (the parsers refuse it), so the newlines are the token
    # boundaries and each query's row is its slice minus the last byte.
    stored = qpks >= 0
    row_off = np.zeros(int(stored.sum()) + 1, dtype=np.int64)
    np.cumsum(kept[stored], out=row_off[1:])
    ends = np.frombuffer(ended.buffers()[1], dtype=np.int64)[: len(ended) + 1]
    tok_off = ends - ends[0] if ends[0] else ends
    text = memoryview(ended.buffers()[2])[int(ends[0]) : int(ends[-1])]
    bounds = tok_off[row_off].tolist()
    # Rows are written from views of the two buffers: no copy of every list (~20 bytes an entry).
    numbers = memoryview(ranked_scores.view(np.uint8))
    blobs = [text[bounds[i] : max(bounds[i + 1] - 1, bounds[i])] for i in range(len(bounds) - 1)]
    rows = (row_off * ranked_scores.itemsize).tolist()
    score_bytes = [numbers[rows[i] : rows[i + 1]] for i in range(len(rows) - 1)]
    buffer = None
    if (kept[stored] > 0).all():
        ranked_hashes = parsed.docid_hashes[perm] if reordered is None else hashes
        buffer = (text, tok_off, row_off, ranked_hashes)
    return _Ranked(qpks[stored].tolist(), blobs, score_bytes, int(row_off[-1]), buffer)


def _in_place(
    parsed: ParsedRun, moved: np.ndarray, sources: np.ndarray
) -> tuple[pa.Array, np.ndarray, np.ndarray] | None:
    """The parser's newline-ended docids, scores and hashes put in rank order in place (the
    entries at `moved` take those at `sources`: scoring.tie_moves), when that moves few and the
    arrays allow it; else None, nothing changed. Saves copying the whole run."""
    from ndcg_labeler.formats import permute_strings, permute_values

    scores, hashes = parsed.scores, parsed.hashes
    if hashes is None or not (scores.flags.writeable and hashes.flags.writeable):
        return None
    if scores.dtype != np.float64 or not scores.flags.c_contiguous:
        return None
    # Past an eighth of a large run, one take of everything is as cheap.
    limit = max(len(scores) // 8, 1 << 16)
    if not permute_strings(parsed.newline_ended, moved, sources, limit=limit):
        return None
    permute_values(scores, moved, sources)
    permute_values(hashes, moved, sources)
    return parsed.newline_ended, scores, hashes


def _insert_queries(run_id: int, ranked: _Ranked, progress: Progress) -> None:
    """Bulk-insert the RunQuery rows (Core executemany, no ORM object per row)."""
    table = RunQuery.__table__
    from ndcg_labeler.formats import encode_ranked

    rows = []
    for qpk, blob, sc in zip(ranked.query_ids, ranked.blobs, ranked.scores, strict=True):
        # Compact and exact (formats.run_storage): ~5 bytes an entry instead of ~18.
        docids, scores = encode_ranked(blob, sc)
        rows.append({"run_id": run_id, "query_id": qpk, "docids": docids, "scores": scores})
    for begin in range(0, len(rows), _BATCH):
        db.session.execute(sa.insert(table), rows[begin : begin + _BATCH])
        stored = min(begin + _BATCH, len(rows))
        # rows: the entries (docids) stored so far, queries being the unit of this phase
        progress("store", stored, len(rows), ranked.entries * stored // max(len(rows), 1))
