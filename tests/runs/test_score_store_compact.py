"""Compact stored scores in the database: a run's `run_score` row is written compact, 0025
rewrites every row both ways with each value bit for bit, an .npz row left by an older release
still reads, and the run scores the same (hand-computed NDCG) before and after."""

from __future__ import annotations

import io

import numpy as np
import sqlalchemy as sa
from flask import Flask
from flask_migrate import downgrade, upgrade

from ndcg_labeler.extensions import db
from ndcg_labeler.formats import decode_score_arrays, is_compact_scores
from ndcg_labeler.models import Run, RunScore
from ndcg_labeler.services import live, runs
from ndcg_labeler.services.live import engine
from tests.factory import build_test_set
from tests.series.helpers import CORPUS, QRELS, QUERIES, WORSE, ndcg, trec


def _stored() -> dict[str, dict[str, bytes]]:
    """settings -> {array name: its bytes} of every run_score row, and whether compact."""
    out = {}
    for settings, data in db.session.execute(sa.select(RunScore.settings, RunScore.data)):
        arrays = decode_score_arrays(data)
        out[settings] = {name: a.dtype.str.encode() + a.tobytes() for name, a in arrays.items()}
        out[settings]["compact"] = b"1" if is_compact_scores(data) else b"0"
    return out


def _fresh_mean(run_id: int) -> float | None:
    """Mean NDCG@10 read from the stored row by a process that has nothing in memory."""
    engine.forget_run(run_id)
    db.session.expire_all()
    return live.score_run(db.session.get(Run, run_id), live.ScoreOptions(k=10)).mean_ndcg


def test_the_migration_keeps_every_stored_score_exactly_both_ways(app: Flask) -> None:
    # Ranks 2, 2, 2, 3, 3, 3 of the one relevant chunk: NDCG@10 = (3/log2(3) + 3/2) / 6.
    expected = (3 * ndcg(2) + 3 * ndcg(3)) / 6
    with app.app_context():
        test_set = build_test_set("stored", QUERIES, QRELS, CORPUS)
        run = runs.upload_run(test_set, io.BytesIO(trec(WORSE).encode()), "w.trec", "w", None)
        run_id = run.id
        assert abs(live.score_run(run, live.ScoreOptions(k=10)).mean_ndcg - expected) < 1e-12
        db.session.commit()
        new = _stored()
        assert new and all(row["compact"] == b"1" for row in new.values())
        db.session.commit()  # migrations wait for every open transaction on PostgreSQL
        downgrade(revision="0024_compact")
        old = _stored()
        assert all(row["compact"] == b"0" for row in old.values())
        strip = {s: {n: v for n, v in row.items() if n != "compact"} for s, row in new.items()}
        assert {s: {n: v for n, v in row.items() if n != "compact"} for s, row in old.items()} == (
            strip
        )
        # The .npz an older release left is read as it is (before any upgrade).
        assert abs(_fresh_mean(run_id) - expected) < 1e-12
        db.session.commit()
        upgrade()
        assert _stored() == new
        assert abs(_fresh_mean(run_id) - expected) < 1e-12


def test_a_stored_row_is_a_fraction_of_its_arrays(app: Flask) -> None:
    with app.app_context():
        test_set = build_test_set("small", QUERIES, QRELS, CORPUS)
        runs.upload_run(test_set, io.BytesIO(trec(WORSE).encode()), "w.trec", "w", None)
        db.session.commit()
        for data in db.session.scalars(sa.select(RunScore.data)):
            arrays = decode_score_arrays(data)
            raw = sum(np.asarray(a).nbytes for a in arrays.values())
            assert len(data) < raw / 2
