"""0020 (series) and 0021 (many runs) both ways keep every row: on SQLite their columns are added
and dropped in place, since recreating run or test_set would cascade-delete the rows that
reference them."""

from __future__ import annotations

import io

import sqlalchemy as sa
from flask import Flask
from flask_migrate import downgrade, upgrade

from ndcg_labeler.extensions import db
from ndcg_labeler.services import runs
from tests.factory import build_test_set
from tests.series.helpers import CORPUS, GOOD, QRELS, QUERIES, trec


def _count(table: str) -> int:
    return db.session.execute(sa.text(f"SELECT count(*) FROM {table}")).scalar_one()


def test_downgrading_and_upgrading_the_run_columns_keeps_runs_and_their_entries(app: Flask) -> None:
    with app.app_context():
        test_set = build_test_set("kept", QUERIES, QRELS, CORPUS)
        runs.upload_run(test_set, io.BytesIO(trec(GOOD).encode()), "a.trec", "a", None, series="s")
        db.session.commit()
        before = {t: _count(t) for t in ("run", "run_query", "run_score", "judgment", "query")}
        assert before["run_query"] == len(QUERIES) and before["run_score"] >= 1
        db.session.commit()  # migrations wait for every open transaction on PostgreSQL
        downgrade(revision="0019_probes")
        assert {t: _count(t) for t in before} == before
        db.session.commit()
        upgrade()
        assert {t: _count(t) for t in before} == before
        assert db.session.execute(sa.text("SELECT series FROM run")).scalar_one() is None
