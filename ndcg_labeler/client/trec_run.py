"""A run handed to the client (a file path, a dict or a DataFrame) as the TREC file the upload
sends, its qids, docids and scores checked first: a bad one would silently upload another run."""

from __future__ import annotations

import io
import math
import os
from collections.abc import Mapping
from typing import Any, BinaryIO

from .wire import ClientError


def run_file(run: Any, name: str | None) -> tuple[str, BinaryIO]:
    """The run as (file name, binary stream): a path as it is; a dict or a DataFrame as TREC."""
    if isinstance(run, str | os.PathLike):
        return os.path.basename(os.fspath(run)), open(run, "rb")
    if isinstance(run, Mapping):
        rows = ((q, d, s) for q, docs in run.items() for d, s in docs.items())
    elif all(hasattr(run, attr) for attr in ("columns", "itertuples")):
        missing = {"qid", "docid", "score"} - {str(c) for c in run.columns}
        if missing:
            names = [f"'{column}'" for column in sorted(missing)]
            listed = " and ".join([", ".join(names[:-1]), names[-1]] if len(names) > 1 else names)
            noun = "columns" if len(names) > 1 else "column"
            raise ClientError(f"the DataFrame lacks the {noun} {listed}")
        rows = run[["qid", "docid", "score"]].itertuples(index=False, name=None)
    else:
        raise ClientError("a run is a file path, a dict {qid: {docid: score}} or a DataFrame")
    text = io.StringIO()
    ranks: dict[str, int] = {}
    tag = "_".join((name or "").split()) or "client"
    for qid, docid, score in rows:
        qid, docid, value = _trec_row(str(qid), str(docid), score)
        # The server ranks by score like trec_eval; the rank column is only the file's order.
        ranks[qid] = rank = ranks.get(qid, 0) + 1
        text.write(f"{qid} Q0 {docid} {rank} {value!r} {tag}\n")
    if not ranks:
        raise ClientError("the run has no (qid, docid, score) entry to upload")
    return f"{name or 'run'}.trec", io.BytesIO(text.getvalue().encode())


_TREC_BLANKS = frozenset(" \t\n\v\f\r")  # what the server splits a TREC line on


def _trec_row(qid: str, docid: str, score: Any) -> tuple[str, str, float]:
    """The row as a TREC line holds it, or ClientError: a blank in a qid or docid would shift
    the columns (a docid 'doc 7' read as 'doc' scored 7) and silently upload another run."""
    for what, value in (("qid", qid), ("docid", docid)):
        where = f"{what} {value!r}" + (f" of query {qid!r}" if what == "docid" else "")
        if not value:
            raise ClientError(f"{where} is empty")
        if not _TREC_BLANKS.isdisjoint(value):
            raise ClientError(f"{where} contains whitespace, which a run file cannot carry")
    try:
        number = float(score)
    except (TypeError, ValueError):
        number = None
    if number is None or not math.isfinite(number):
        kind = "a number" if number is None else "a finite number"
        raise ClientError(f"score of query {qid!r}, docid {docid!r} is {score!r}, not {kind}")
    return qid, docid, number
