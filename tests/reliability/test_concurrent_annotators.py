"""16 annotators, each logged in separately, grade through the HTTP forms at once under
gunicorn with 4 workers, on a set wanting 3 judgments per pair (SQLite in WAL mode, and
PostgreSQL when TEST_DATABASE_URL is set). Reduced size here (20 grades each); the full run
is bench/load_annotators.py."""

from __future__ import annotations

from collections import Counter

import pytest
import sqlalchemy as sa
from flask import Flask

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Pair
from tests.factory import PASSWORD, build, make_user
from tests.reliability.annotators import run_annotators, start_server, stored_judgments

ANNOTATORS, GRADES, TARGET = 16, 20, 3


@pytest.mark.slow
def test_sixteen_annotators_lose_and_duplicate_nothing(app: Flask, record_property, tmp_path):
    users = [f"ann{i:02d}" for i in range(ANNOTATORS)]
    ids = tuple(make_user(app, name) for name in users)
    pool = {f"q{i}": [f"d{i}-{j}" for j in range(10)] for i in range(40)}  # 400 pairs
    built = build(app, "Load", pool=pool, target=TARGET, members=ids)
    url = app.config["SQLALCHEMY_DATABASE_URI"]
    with app.app_context():
        db.engine.dispose()  # the server's workers take over the database
    server, base = start_server(url, tmp_path)
    try:
        tally = run_annotators(base, users, PASSWORD, built.test_set_id, GRADES)
    finally:
        server.terminate()
        server.wait(timeout=30)
    rows = stored_judgments(app)
    with app.app_context():
        pair_of = {
            (q, c): p for p, q, c in db.session.execute(
                sa.select(Pair.id, Pair.query_id, Pair.chunk_id))
        }  # fmt: skip
    by_user = {uid: name for name, uid in zip(users, ids, strict=True)}
    stored = {name: set() for name in users}
    for annotator, query, chunk in rows:
        stored[by_user[annotator]].add(str(pair_of[(query, chunk)]))
    per_pair = Counter(pair_of[(q, c)] for _, q, c in rows)
    acknowledged = sum(len(v) for v in tally.acknowledged.values())
    record_property(
        "security-summary",
        f"concurrent annotators ({app.config['SQLALCHEMY_DATABASE_URI'].split(':')[0]}): "
        f"{ANNOTATORS} × up to {GRADES} under gunicorn -w 4: {tally.summary()}; "
        f"stored {len(rows)}, lost {acknowledged - len(rows)}, over target "
        f"{sum(n > TARGET for n in per_pair.values())}",
    )
    assert tally.server_errors == 0 and tally.locked == 0
    assert {u: tally.acknowledged[u] for u in users} == stored  # 0 lost, 0 unexpected
    assert len(rows) == acknowledged == ANNOTATORS * GRADES  # 0 duplicated, nothing skipped
    assert max(per_pair.values()) <= TARGET
