"""A small 3-annotator test set whose agreement figures are worked out by hand in the tests.

Grades on a 0–3 scale (q1: d1 d2 d3; q2: d4 d5 d6 d7), `-` = no judgment:

    pair    alice  bob        carol
    q1/d1   3      3          3
    q1/d2   2      1          2
    q1/d3   0      0          skipped
    q2/d4   1      -          3
    q2/d5   -      2          2
    q2/d6   0      can't tell -

Five pairs have two or more grades (d6 has one grade and a can't-tell; skips and can't-tell
never count). q2/d7 is in the pool with no judgment yet (the review tests grade it).

The second fixture, `build_runs`, is one query whose two chunks alice and bob grade
(d1: 0 and 2, d2: 1 and 1) and two runs: A ranks d1 then d2, B ranks d2 then d1.
"""

from __future__ import annotations

import io
from dataclasses import dataclass

import sqlalchemy as sa
from flask import Flask

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Chunk, Query, TestSet, User
from ndcg_labeler.services import labeling
from ndcg_labeler.services import runs as run_service
from tests.conftest import make_user
from tests.labeling.factory import Built, build

POOL = {"q1": ["d1", "d2", "d3"], "q2": ["d4", "d5", "d6", "d7"]}
# (qid, docid, annotator, status, grade, active_ms)
JUDGMENTS = [
    ("q1", "d1", "alice", "graded", 3, 1000),
    ("q1", "d2", "alice", "graded", 2, 2000),
    ("q1", "d3", "alice", "graded", 0, 3000),
    ("q2", "d4", "alice", "graded", 1, 4000),
    ("q2", "d6", "alice", "graded", 0, 0),
    ("q1", "d1", "bob", "graded", 3, 0),
    ("q1", "d2", "bob", "graded", 1, 0),
    ("q1", "d3", "bob", "graded", 0, 0),
    ("q2", "d5", "bob", "graded", 2, 0),
    ("q2", "d6", "bob", "cant_tell", None, 0),
    ("q1", "d1", "carol", "graded", 3, 0),
    ("q1", "d2", "carol", "graded", 2, 0),
    ("q1", "d3", "carol", "skipped", None, 0),
    ("q2", "d4", "carol", "graded", 3, 0),
    ("q2", "d5", "carol", "graded", 2, 0),
]


@dataclass
class Team:
    """The built test set and the annotators' ids by name."""

    built: Built
    users: dict[str, int]

    @property
    def id(self) -> int:
        """The test set's id."""
        return self.built.test_set_id


def judge(
    app: Flask,
    test_set_id: int,
    qid: str,
    docid: str,
    username: str,
    status: str = "graded",
    grade: int | None = None,
    active_ms: int = 0,
    note: str = "",
) -> None:
    """Save one judgment through the judging service (the user must exist)."""
    with app.app_context():
        test_set = db.session.get_one(TestSet, test_set_id)
        query = db.session.scalar(
            sa.select(Query).where(Query.test_set_id == test_set_id, Query.qid == qid)
        )
        chunk = db.session.scalar(
            sa.select(Chunk).where(Chunk.test_set_id == test_set_id, Chunk.docid == docid)
        )
        user = db.session.scalar(sa.select(User).where(User.username == username))
        labeling.save_judgment(
            test_set,
            query,
            chunk,
            user,
            status=status,
            grade=grade,
            note=note,
            active_ms=active_ms,
        )


def person(app: Flask, username: str) -> int:
    """The id of the annotator with this name, created on first use."""
    with app.app_context():
        found = db.session.scalar(sa.select(User.id).where(User.username == username))
    return found if found is not None else make_user(app, username)


def build_team(app: Flask, name: str = "Team set", *, members: tuple[int, ...] = ()) -> Team:
    """The test set of the module docstring, with alice, bob and carol as members."""
    ids = {who: person(app, who) for who in ("alice", "bob", "carol")}
    built = build(app, name, pool=POOL, target=3, members=(*ids.values(), *members))
    for qid, docid, who, status, grade, active_ms in JUDGMENTS:
        judge(app, built.test_set_id, qid, docid, who, status, grade, active_ms)
    return Team(built, ids)


def build_runs(app: Flask, name: str = "Runs set", *, members: tuple[int, ...] = ()) -> Team:
    """One query, two chunks graded (0, 2) and (1, 1) by alice and bob, runs A and B."""
    ids = {who: person(app, who) for who in ("alice", "bob")}
    built = build(app, name, pool={"q1": ["d1", "d2"]}, target=2, members=(*ids.values(), *members))
    for who, d1 in (("alice", 0), ("bob", 2)):
        judge(app, built.test_set_id, "q1", "d1", who, grade=d1)
        judge(app, built.test_set_id, "q1", "d2", who, grade=1)
    with app.app_context():
        test_set = db.session.get_one(TestSet, built.test_set_id)
        for run_name, first, second in (("A", "d1", "d2"), ("B", "d2", "d1")):
            text = f"q1 Q0 {first} 1 2.0 {run_name}\nq1 Q0 {second} 2 1.0 {run_name}\n"
            run_service.upload_run(test_set, io.BytesIO(text.encode()), "run.trec", run_name, None)
    return Team(built, ids)
