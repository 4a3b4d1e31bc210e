"""Hostile files on every upload and import path: refused with a message naming the file (and
its line where one line is at fault) and zero rows written, or, for a valid file in unusual
dress, accepted. The table is tests/security/hostile.py; the totals print with the security
figures at the end of the run."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from flask import Flask

from ndcg_labeler.extensions import db
from ndcg_labeler.formats import FormatError
from ndcg_labeler.services import ServiceError
from ndcg_labeler.services import runs as run_service
from ndcg_labeler.services.imports import ImportFile, import_files
from tests.factory import build_test_set
from tests.security.hostile import FILENAMES, LIMIT_BYTES, cases, stream


def _counts() -> dict[str, int]:
    """Rows of every table."""
    return {
        table.name: int(db.session.scalar(sa.select(sa.func.count()).select_from(table)) or 0)
        for table in db.metadata.sorted_tables
    }


def _send(path: str, data: bytes, test_set) -> None:  # type: ignore[no-untyped-def]
    name = FILENAMES[path]
    if path == "run":
        run_service.upload_run(test_set, stream(data), name, "hostile", None)
    else:
        import_files(test_set, **{path: ImportFile(stream(data), name)})


CASES = cases()


@pytest.mark.parametrize(
    ("kind", "path", "data", "expected"), CASES, ids=[f"{c[1]}: {c[0]}" for c in CASES]
)
def test_hostile_file(
    app: Flask, record_property, kind: str, path: str, data: bytes, expected: str
) -> None:
    app.config["NDCG_MAX_DECOMPRESSED_BYTES"] = LIMIT_BYTES
    with app.app_context():
        test_set = build_test_set(
            "Hostile", {"q1": "refund policy", "q2": "parking"}, corpus={"d1": "a", "d2": "b"}
        )
        before = _counts()
        message = ""
        try:
            _send(path, data, test_set)
            outcome = "accepted"
        except (FormatError, ServiceError) as exc:
            outcome, message = "refused", str(exc)
            db.session.rollback()
        after = _counts()
    record_property("hostile-case", f"{path}|{kind}|{outcome}|{int(after == before)}")
    assert outcome == expected, message
    if expected == "refused":
        assert after == before  # nothing half-written
        assert message.startswith(FILENAMES[path]), message  # names the file (and line)
    else:  # stored as the plain file would be: no stray BOM or CR in any id or text
        with app.app_context():
            stray = db.session.execute(
                sa.text(
                    "SELECT qid || ' ' || text FROM query UNION ALL "
                    "SELECT docid || ' ' || coalesce(text, '') FROM chunk"
                )
            ).scalars()
            assert not [v for v in stray if "\ufeff" in v or "\r" in v]
        if path in ("queries", "corpus"):  # the same ids: no "\ufeffq1" beside q1
            assert (after["query"], after["chunk"]) == (before["query"], before["chunk"])
        else:
            assert after != before
