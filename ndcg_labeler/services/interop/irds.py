"""`testset import --ir-datasets NAME`: queries, docs and qrels from ir_datasets' local cache.

ir_datasets is an optional extra (``pip install .[ir_datasets]``). It is used offline only:
every remote source it knows is replaced, once per process, by one that refuses, so a dataset
that is not in ``IR_DATASETS_HOME`` is a clear "not downloaded" error and the server never
fetches anything (its outbound requests all go through services/outbound).

The dataset is written as BEIR queries and corpus and TREC qrels into temporary files and
imported by ``imports.import_files``: the same checks and the one transaction. Negative
grades (some collections mark spam −2 or non-relevant −1) become 0, as trec_eval scores them;
a grade above the test set's scale is refused before anything is read further.

From the browser or the API a large dataset (its files in the cache above the job threshold,
NDCG_JOB_THRESHOLD_MB, or of a size that cannot be told) is imported by the job worker,
which reports the records read (phase "read") and then the import's own phases; the CLI
always imports it directly, with its progress bar.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from typing import Any

import sqlalchemy as sa

from ndcg_labeler.extensions import db
from ndcg_labeler.formats import FormatError
from ndcg_labeler.models import Query, TestSet
from ndcg_labeler.services import ServiceError, imports, noun
from ndcg_labeler.services._progress import EVERY_ROWS, Cancelled, Progress, no_progress

INSTALL_HINT = "ir_datasets is not installed: pip install 'ndcg-labeler[ir_datasets]'"


class NotDownloaded(RuntimeError):
    """ir_datasets wanted to fetch a file that is not in its local cache."""


def _refuse(self: Any, *args: Any, **kwargs: Any) -> Any:
    where = getattr(self, "url", None) or getattr(self, "uri", None) or "a remote source"
    raise NotDownloaded(str(where))


_OFFLINE: list[bool] = []
_MARKER = "irds_version.txt"


def _library() -> Any:
    """ir_datasets, with its remote sources replaced by refusals (once per process)."""
    try:
        import ir_datasets
        from ir_datasets.util import download
    except ImportError:
        raise ServiceError(INSTALL_HINT) from None
    if not _OFFLINE:
        for name in ("RequestsDownload", "GoogleDriveDownload", "GoogleCloudBucketStream"):
            remote = getattr(download, name, None)
            if remote is not None:
                remote.stream = _refuse
        _OFFLINE.append(True)
    return ir_datasets


def _not_downloaded(exc: BaseException) -> bool:
    """Whether `exc` (or what it wraps) is a refused download."""
    seen: list[BaseException | None] = [exc]
    while seen:
        current = seen.pop()
        if current is None:
            continue
        if isinstance(current, NotDownloaded):
            return True
        seen.extend([current.__cause__, current.__context__])
        seen.extend(a for a in getattr(current, "args", ()) if isinstance(a, BaseException))
        for arg in getattr(current, "args", ()):
            if isinstance(arg, list):  # ('All download sources failed', [(mirror, exc), ...])
                seen.extend(e for item in arg if isinstance(item, tuple) for e in item[1:2])
    return False


def _text(record: Any) -> str:
    """A record's main text: its `text` field, else ir_datasets' default_text()."""
    text = getattr(record, "text", None)
    if not isinstance(text, str):
        text = record.default_text() if hasattr(record, "default_text") else ""
    return text


def _write(
    spool: Any, lines: Iterator[str], progress: Progress = no_progress, total: int = 0
) -> int:
    """Write the lines to the spool file, reporting (phase "read") every EVERY_ROWS lines."""
    count = 0
    for line in lines:
        spool.write(line.encode())
        count += 1
        if count % EVERY_ROWS == 0:
            progress("read", count, max(total, count), count)
    progress("read", count, max(total, count), count)
    spool.seek(0)
    return count


def _count(dataset: Any, kind: str) -> int:
    """The number of records of `kind` ir_datasets' metadata gives (0 when it has none)."""
    try:
        return int(getattr(dataset, f"{kind}_count")() or 0)
    except Exception:  # a count is a progress hint only
        return 0


def _cached_paths(node: Any, seen: set[int], found: list[str], depth: int = 0) -> None:
    """Absolute paths held by ir_datasets' handlers and their downloads (cache files)."""
    if depth > 8 or id(node) in seen:
        return
    seen.add(id(node))
    if isinstance(node, str | os.PathLike):
        path = os.fspath(node)
        # irds_version.txt marks a cache folder's version: not data, and present for a
        # dataset whose files this walk does not reach (they would read as "small").
        if isinstance(path, str) and os.path.isabs(path) and not path.endswith(_MARKER):
            found.append(path)
        return
    if isinstance(node, list | tuple | set):
        for item in node:
            _cached_paths(item, seen, found, depth + 1)
        return
    if isinstance(node, dict):
        for item in node.values():
            _cached_paths(item, seen, found, depth + 1)
        return
    # Only ir_datasets' own objects: their attributes name the files a dataset reads.
    if not type(node).__module__.startswith("ir_datasets") or not hasattr(node, "__dict__"):
        return
    for value in vars(node).values():
        _cached_paths(value, seen, found, depth + 1)


def _bytes_at(path: str) -> int:
    if os.path.isfile(path):
        return os.path.getsize(path)
    total = 0
    for parent, _, names in os.walk(path):
        total += sum(os.path.getsize(os.path.join(parent, n)) for n in names)
    return total


def ir_dataset_size(name: str) -> int | None:
    """Bytes of NAME's files in ir_datasets' local cache: 0 when none is there (not
    downloaded: importing it fails at once, with the clear message), None when its files
    cannot be told (a dataset built in a way this does not know)."""
    library = _library()
    try:
        dataset = library.load(name)
    except Exception:  # the import itself says what is wrong
        return 0
    found: list[str] = []
    _cached_paths(dataset, set(), found)
    if not found:
        return None
    real = {os.path.realpath(path) for path in found}
    return sum(_bytes_at(path) for path in real if os.path.exists(path))


def _reading(name: str, read: Callable[[], int]) -> int:
    """Run one read of the dataset, turning a refused download into a clear message."""
    try:
        return read()
    except (ServiceError, Cancelled):
        raise
    except Exception as exc:
        if _not_downloaded(exc):
            raise ServiceError(
                f"ir_datasets dataset '{name}' is not downloaded (this server never downloads "
                "it): fetch it where there is internet, e.g. "
                f"`python -c \"import ir_datasets; ir_datasets.load('{name}').docs_iter()\"`, "
                "and copy the files into IR_DATASETS_HOME"
            ) from None
        raise ServiceError(f"ir_datasets could not read '{name}': {exc}") from None


def import_ir_dataset(
    test_set: TestSet,
    name: str,
    *,
    source: str | None = None,
    actor_id: int | None = None,
    progress: Progress = no_progress,
) -> imports.ImportReport:
    """Import the queries, docs and qrels of ir_datasets' NAME (those it has), all or nothing."""
    library = _library()
    try:
        dataset = library.load(name)
    except KeyError:
        raise ServiceError(f"ir_datasets has no dataset named '{name}'") from None
    except Exception as exc:  # a name a pattern matched but whose dataset cannot be built
        raise ServiceError(f"ir_datasets could not load '{name}': {exc}") from None
    top = test_set.scale_max
    label = f"ir_datasets:{name}"
    with ExitStack() as stack:
        files: dict[str, imports.ImportFile] = {}
        spooled: dict[str, Any] = {}

        def spool(kind: str) -> Any:
            handle = stack.enter_context(tempfile.TemporaryFile())
            files[kind] = imports.ImportFile(handle, f"{label} {kind}")
            spooled[f"{label} {kind}"] = (kind, handle)
            return handle

        if dataset.has_queries():
            queries = (
                json.dumps({"_id": q.query_id, "text": _text(q)}, ensure_ascii=False) + "\n"
                for q in dataset.queries_iter()
            )
            total = _count(dataset, "queries")
            _reading(name, lambda: _write(spool("queries"), queries, progress, total))
        if dataset.has_docs():
            docs = (
                json.dumps(
                    {"_id": d.doc_id, "title": getattr(d, "title", None) or "", "text": _text(d)},
                    ensure_ascii=False,
                )
                + "\n"
                for d in dataset.docs_iter()
            )
            total = _count(dataset, "docs")
            _reading(name, lambda: _write(spool("corpus"), docs, progress, total))
        if dataset.has_qrels():
            qrels = _qrels(dataset, name, top)
            total = _count(dataset, "qrels")
            _reading(name, lambda: _write(spool("qrels"), qrels, progress, total))
        if not files:
            raise ServiceError(f"ir_datasets dataset '{name}' has no queries, docs or qrels")
        for kind in ("corpus", "qrels"):  # an empty file would be refused as empty
            if kind in files and not files[kind].source.read(1):  # type: ignore[union-attr]
                del files[kind]
            elif kind in files:
                files[kind].source.seek(0)  # type: ignore[union-attr]
        try:
            return imports.import_files(
                test_set,
                **files,
                source=source or label[: imports.MAX_SOURCE],
                actor_id=actor_id,
                progress=progress,
            )
        except FormatError as exc:
            if exc.filename not in spooled:
                raise
            kind, handle = spooled[exc.filename]
            if kind == "qrels" and "queries" in files:
                exc = _strays_named(exc, test_set, files["queries"].source, handle)
            raise _at_record(exc, label, kind, handle) from None


# How many of the qrels' query ids its queries lack are named in the error (then a count).
SHOWN_STRAYS = 5
_UNKNOWN = re.compile(r"(unknown query '[^']*'): .*", re.S)


def _strays_named(exc: FormatError, test_set: TestSet, queries: Any, qrels: Any) -> FormatError:
    """An unknown-query error with, in place of the general hint to import the queries first,
    the query ids the dataset's qrels name that its own queries lack (nor the test set has):
    the first SHOWN_STRAYS, in qrels order, with their count."""
    if not _UNKNOWN.match(exc.reason):
        return exc
    queries.seek(0)
    known = {str(json.loads(line)["_id"]) for line in queries if line.strip()}
    known |= set(db.session.scalars(sa.select(Query.qid).where(Query.test_set_id == test_set.id)))
    qrels.seek(0)
    strays: dict[str, None] = {}  # first appearance order, each once
    for raw in qrels:
        qid = raw.decode("utf-8", "replace").split(maxsplit=1)[0]
        if qid not in known:
            strays.setdefault(qid)
    qrels.seek(0)
    if not strays:
        return exc
    shown = ", ".join(f"'{q}'" for q in list(strays)[:SHOWN_STRAYS])
    more = len(strays) - SHOWN_STRAYS
    count = f"{len(strays)} {noun(len(strays), 'query', 'queries')}"
    detail = (
        f"the dataset's qrels name {count} that its own queries lack (and this test set "
        f"does not have): {shown}{f' and {more} more' if more > 0 else ''}"
    )
    reason = _UNKNOWN.sub(lambda m: f"{m.group(1)}: {detail}", exc.reason)
    return FormatError(exc.filename, exc.line, reason)


# What a record of each spooled kind is called, and how to name it from its spooled line.
_RECORDS = {"queries": "queries", "corpus": "docs", "qrels": "qrels"}
_FIRST_AT = re.compile(r"\(first at line (\d+)\)")


def _record(kind: str, line: str) -> str:
    """The record a spooled line holds, by its ids: query 'Q', doc 'D', qrel of query and doc."""
    if kind == "qrels":
        qid, _, docid, *_ = line.split() + ["?"] * 4
        return f"qrel of query '{qid}' and doc '{docid}'"
    try:
        record_id = str(json.loads(line).get("_id"))
    except (ValueError, AttributeError):
        record_id = "?"
    return f"{'query' if kind == 'queries' else 'doc'} '{record_id}'"


def _at_record(exc: FormatError, label: str, kind: str, handle: Any) -> FormatError:
    """The import's error named by the dataset and the record, not by a line of the files
    written for the import (nowhere the user can look): line N there is record N of the
    dataset's queries, docs or qrels, in ir_datasets' order."""
    reason = _FIRST_AT.sub(r"(first at record \1)", exc.reason)
    if exc.line is None:
        return FormatError(label, None, f"its {_RECORDS[kind]}: {reason}")
    handle.seek(0)
    text = ""
    for number, raw in enumerate(handle, 1):
        if number == exc.line:
            text = raw.decode("utf-8", "replace")
            break
    where = f"{_record(kind, text)} (record {exc.line} of its {_RECORDS[kind]})"
    return FormatError(label, None, f"{where}: {reason}")


def _qrels(dataset: Any, name: str, top: int) -> Iterator[str]:
    """TREC qrels lines; negative grades as 0, a grade above `top` refused."""
    for qrel in dataset.qrels_iter():
        grade = max(0, int(qrel.relevance))
        if grade > top:
            raise ServiceError(
                f"ir_datasets '{name}' has grade {grade} (query {qrel.query_id}, doc "
                f"{qrel.doc_id}), above this test set's scale 0–{top}: use a test set with "
                "a larger scale"
            )
        yield f"{qrel.query_id} 0 {qrel.doc_id} {grade}\n"
