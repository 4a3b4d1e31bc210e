"""A fused run is exactly what fusing query by query and writing each line gives: the same
TREC text (its sha256), the same ranked lists; progress is reported and a cancel stores nothing."""

from __future__ import annotations

import hashlib
import io

import numpy as np
import pytest
import sqlalchemy as sa
from flask import Flask

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Run
from ndcg_labeler.scoring.fusion import fuse
from ndcg_labeler.services import runs as run_service
from ndcg_labeler.services._progress import Cancelled
from tests.factory import build_dashboard, the_test_set

# Ties, prefixes, non-ASCII, huge, tiny, negative and inexact scores; q4 only here and in A.
RUN_C = """q1 Q0 é 1 3.5e12 c
q1 Q0 a 2 1e-9 c
q1 Q0 ab 3 1e-9 c
q1 Q0 c 4 -2.0 c
q1 Q0 日本 5 -2.0 c
q2 Q0 e3 1 0.30000000000000004 c
q2 Q0 e1 2 0.1 c
q4 Q0 g1 1 7 c
q4 Q0 a 2 7 c
"""


def _runs(app: Flask) -> list[int]:
    demo = build_dashboard(app)
    with app.app_context():
        test_set = the_test_set(demo)
        c = run_service.upload_run(test_set, io.BytesIO(RUN_C.encode()), "c.trec", "C", None)
        ids = [demo.run_a, demo.run_b, c.id]
        db.session.remove()
    return ids


@pytest.mark.parametrize(
    ("method", "k"),
    [("rrf", 0), ("rrf", 60), ("rrf", 1_000_000), ("combsum", 60), ("combmnz", 60)],
)
def test_a_fused_run_is_the_text_the_per_query_fusion_writes(
    app: Flask, method: str, k: int
) -> None:
    ids = _runs(app)
    with app.app_context():
        runs = [db.session.get_one(Run, i) for i in ids]
        test_set = runs[0].test_set
        lists = [run_service.ranked_lists(run) for run in runs]
        qids = sorted({qid for one in lists for qid in one})
        expected = {qid: fuse([one.get(qid, []) for one in lists], method, k) for qid in qids}
        text = "".join(
            f"{qid} Q0 {docid} {rank} {score!r} fused\n"
            for qid in qids
            for rank, (docid, score) in enumerate(expected[qid], start=1)
        )
        fused = run_service.fuse_runs(test_set, runs, "F", None, method=method, k=k)
        assert fused.sha256 == hashlib.sha256(text.encode()).hexdigest()
        assert fused.report["entries_in_file"] == text.count("\n")
        assert run_service.ranked_lists(fused) == expected


def test_the_scores_are_written_as_repr_writes_them(app: Flask) -> None:
    """Arrow writes most floats; whole numbers, tiny and huge ones must still read as repr."""
    from ndcg_labeler.services.runs.fusion import _score_text

    rng = np.random.default_rng(7)
    values = np.concatenate(
        [
            10.0 ** rng.uniform(-12, 14, 20_000),
            np.round(rng.random(5000) * 30, 4),
            np.arange(0.0, 50.0),
            [1e-4, np.nextafter(1e-4, 0), 1e9, np.nextafter(1e9, 0), 0.1 + 0.2, 1 / 3, 2 / 3],
        ]
    )
    assert _score_text(values).to_pylist() == [repr(v) for v in values.tolist()]


def test_fusion_reports_progress_and_a_cancel_stores_nothing(app: Flask) -> None:
    ids = _runs(app)
    heard = []

    def cancel_when_fused(phase: str, done: int, total: int, rows: int) -> None:
        heard.append((phase, done, total, rows))
        if phase == "fuse" and done == total:
            raise Cancelled

    with app.app_context():
        runs = [db.session.get_one(Run, i) for i in ids]
        with pytest.raises(Cancelled):
            run_service.fuse_runs(runs[0].test_set, runs, "F", None, progress=cancel_when_fused)
        db.session.rollback()
        assert db.session.scalar(sa.select(Run).where(Run.name == "F")) is None
        queries = len({qid for run in runs for qid in run_service.ranked_lists(run)})
        entries = sum(len(fuse(lists)) for lists in _per_query(runs))
    assert heard[0] == ("fuse", 0, queries, 0)
    assert heard[-1] == ("fuse", queries, queries, entries)


def _per_query(runs: list[Run]) -> list[list[list[tuple[str, float]]]]:
    lists = [run_service.ranked_lists(run) for run in runs]
    qids = sorted({qid for one in lists for qid in one})
    return [[one.get(qid, []) for one in lists] for qid in qids]
