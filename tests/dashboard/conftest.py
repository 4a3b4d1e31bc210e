"""A small test set with hand-computable scores and two runs, for the dashboard tests.

Grades (imported qrels):   q1: a 3, b 2, c 1, d 0, x 3    q2: e1 2, e2 1, e3 0
                           q3: f1 1    q4: none (NDCG undefined)    q5: g1 2
Run A ranks                q1: c d a y   q2: e1 e2 e3   q3: f2 f1   q4: a   q5: g1
Run B ranks                q1: x a b c   q2: e2 e1      q3: f1      (no q4, no q5)
y, f2 and z have text but no grade; "ghost" is named by no corpus (B ranks it under q2).
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass

import pytest
from flask import Flask

from ndcg_labeler.extensions import db
from ndcg_labeler.models import TestSet, TestSetMember
from ndcg_labeler.services import runs as run_service
from tests.runs.helpers import build_test_set

L3 = math.log2(3)
QUERIES = {
    "q1": "maternity leave",
    "q2": "expense reports",
    "q3": "<b>dress</b> code",
    "q4": "unlabelled question",
    "q5": "holiday carry-over",
}
QRELS = [
    ("q1", "a", 3),
    ("q1", "b", 2),
    ("q1", "c", 1),
    ("q1", "d", 0),
    ("q1", "x", 3),
    ("q2", "e1", 2),
    ("q2", "e2", 1),
    ("q2", "e3", 0),
    ("q3", "f1", 1),
    ("q5", "g1", 2),
]
CORPUS = {d: f"text of {d}" for d in ("a", "b", "c", "d", "x", "y", "z", "e1", "e2", "e3")}
CORPUS.update({"f1": "f1 " + "long text " * 30, "f2": "text of f2", "g1": "text of g1"})


def trec(rankings: dict[str, list[str]]) -> bytes:
    """A TREC run whose scores put the docids in the order given."""
    lines = []
    for qid, docids in rankings.items():
        for rank, docid in enumerate(docids, start=1):
            lines.append(f"{qid} Q0 {docid} {rank} {100 - rank} tag\n")
    return "".join(lines).encode()


RUN_A = {"q1": ["c", "d", "a", "y"], "q2": ["e1", "e2", "e3"], "q3": ["f2", "f1"]}
RUN_A |= {"q4": ["a"], "q5": ["g1"]}
RUN_B = {"q1": ["x", "a", "b", "c"], "q2": ["e2", "e1", "ghost"], "q3": ["f1"]}

# NDCG@3 by hand (linear gain, ideal from all judged grades).
IDCG3_Q1 = 3 + 3 / L3 + 2 / 2  # x 3, a 3, b 2
A3 = {
    "q1": (1 + 0 / L3 + 3 / 2) / IDCG3_Q1,  # c 1, d 0, a 3
    "q2": 1.0,  # e1 2, e2 1, e3 0 is the ideal order
    "q3": (1 / L3) / 1.0,  # f2 unjudged, f1 1
    "q4": None,  # no grade: IDCG 0
    "q5": 1.0,
}
B3 = {"q1": 1.0, "q2": (1 + 2 / L3) / (2 + 1 / L3), "q3": 1.0, "q4": None, "q5": 0.0}


@dataclass
class Demo:
    """Ids of the dashboard test set and its two runs."""

    test_set_id: int
    run_a: int
    run_b: int

    def url(self, path: str = "") -> str:
        """A dashboard URL of this test set."""
        return f"/test-sets/{self.test_set_id}/dashboard{path}"


@pytest.fixture
def ctx(app: Flask):
    """An app context whose session is cleaned up afterwards."""
    with app.app_context():
        yield app
        db.session.remove()


@pytest.fixture
def dash(app: Flask) -> Demo:
    """The test set with runs A and B (uploaded through the upload service)."""
    with app.app_context():
        test_set = build_test_set("dash", QUERIES, QRELS, CORPUS)
        a = run_service.upload_run(test_set, io.BytesIO(trec(RUN_A)), "a.trec", "A", None)
        b = run_service.upload_run(test_set, io.BytesIO(trec(RUN_B)), "b.trec", "B", None)
        built = Demo(test_set.id, a.id, b.id)
        db.session.remove()
        return built


def grant(app: Flask, test_set_id: int, user_id: int) -> None:
    """Make the user a member (annotator) of the test set."""
    with app.app_context():
        db.session.add(TestSetMember(test_set_id=test_set_id, user_id=user_id))
        db.session.commit()


def the_test_set(demo: Demo) -> TestSet:
    """The test set row (inside an app context)."""
    return db.session.get_one(TestSet, demo.test_set_id)
