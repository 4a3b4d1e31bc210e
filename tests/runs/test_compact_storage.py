"""Compact run storage in the database: 0023 rewrites every stored list both ways and keeps
each docid and score bit for bit, and a run scores the same before and after."""

from __future__ import annotations

import io
import math

import numpy as np
import sqlalchemy as sa
from flask import Flask
from flask_migrate import downgrade, upgrade

from ndcg_labeler.extensions import db
from ndcg_labeler.formats import decode_ranked
from ndcg_labeler.models import RunQuery
from ndcg_labeler.services import live, runs
from tests.factory import build_test_set
from tests.series.helpers import CORPUS, QIDS, QRELS, QUERIES

# q1..q3 short decimals with a tie (stored as integers); q4..q6 scores no 6-place decimal
# gives back (stored as raw float64), one of them -0.0.
SCORES = {
    "q1": ["9.5", "9.5", "0.000001"],
    "q2": ["-1.25", "-2", "-2"],
    "q3": ["123456.654321", "3", "-7.000001"],
    "q4": ["0.30000000000000004", "0.1", "1e-9"],
    "q5": ["1e300", "5e-324", "-1e300"],
    "q6": ["0", "-0.0", "-0.0"],
}


def _trec() -> str:
    lines = []
    for qid in QIDS:
        docs = [f"r{qid}", f"{qid}-é1", f"{qid}-other2"]
        for n, (doc, score) in enumerate(zip(docs, SCORES[qid], strict=True), start=1):
            lines.append(f"{qid} Q0 {doc} {n} {score} t\n")
    return "".join(lines)


def _rows() -> dict[int, tuple[bytes, bytes, int]]:
    """query id -> (decoded docids, decoded score bits, stored bytes)."""
    out = {}
    for query_id, docids, scores in db.session.execute(
        sa.select(RunQuery.query_id, RunQuery.docids, RunQuery.scores)
    ):
        text, values = decode_ranked(docids, scores)
        out[query_id] = (text, values.tobytes(), len(docids) + len(scores))
    return out


def test_the_migration_keeps_every_list_exactly_both_ways(app: Flask) -> None:
    with app.app_context():
        test_set = build_test_set("compact", QUERIES, QRELS, CORPUS)
        run = runs.upload_run(test_set, io.BytesIO(_trec().encode()), "a.trec", "a", None)
        mean = live.score_run(run, live.ScoreOptions(k=10)).mean_ndcg
        db.session.commit()
        new = _rows()
        # The scores as parsed from the text (Python's float), in rank order.
        q1 = next(v for k, v in new.items() if v[0].startswith(b"rq1"))
        assert np.frombuffer(q1[1]).tolist() == [9.5, 9.5, 0.000001]
        q6 = next(v for v in new.values() if v[0].startswith(b"rq6"))
        assert np.frombuffer(q6[1]).view(np.int64).tolist()[1:] == [-(1 << 63)] * 2
        db.session.commit()  # migrations wait for every open transaction on PostgreSQL
        downgrade(revision="0023_fetchlater")
        old = _rows()
        raw = db.session.execute(sa.select(RunQuery.docids, RunQuery.scores)).all()
        assert all(not bytes(d).startswith(b"\xff") and len(s) == 24 for d, s in raw)
        assert {k: v[:2] for k, v in old.items()} == {k: v[:2] for k, v in new.items()}
        db.session.commit()
        upgrade()
        assert _rows() == new
        db.session.expire_all()
        again = live.score_run(db.session.get(type(run), run.id), live.ScoreOptions(k=10))
        # q1..q6 put their relevant chunk at rank 1 (ties break by docid desc: "rq1" > "q1-..")
        assert again.mean_ndcg == mean == math.fsum([1.0] * 6) / 6
