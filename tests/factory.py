"""Test data, built one way: plain functions that create apps, users, test sets, judgments and runs.

Fixtures (tests/conftest.py and the area conftest files) call these; tests import them from here,
never from a conftest. Two ways to fill a test set:

- `build` writes queries, chunks and pairs straight through the models (independent of the import
  code), for the labeling and team tests;
- `build_test_set` goes through the import service (queries, corpus, qrels as judgments), for the
  run, scoring and dashboard tests.

The two hand-computed scenarios live here too: `build_team` / `build_runs` (agreement, review,
policies) and `build_dashboard` (runs A and B with NDCG@3 worked out by hand in `A3` / `B3`).
"""

from __future__ import annotations

import io
import math
import re
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import sqlalchemy as sa
from flask import Flask
from flask.testing import FlaskClient
from werkzeug.security import generate_password_hash

from ndcg_labeler.extensions import db, ensure_migrate
from ndcg_labeler.factory import create_app
from ndcg_labeler.models import Chunk, Pair, Query, TestSet, TestSetMember, User
from ndcg_labeler.services import labeling, tallies, testsets
from ndcg_labeler.services import runs as run_service
from ndcg_labeler.services.imports import ImportFile, import_files
from tests import routing_cache

routing_cache.install()

PASSWORD = "correct-horse-9"
# Users made here store a cheap hash of PASSWORD, computed once: the app's own scrypt (about
# 0.1 s a hash on this VM, and again at every login) made hashing the largest cost of the
# suite. check_password_hash reads the method from the hash, so logins stay real;
# tests/security/test_passwords.py checks that the app itself stores scrypt.
PASSWORD_HASH = generate_password_hash(PASSWORD, method="pbkdf2:sha256:1000")

# -- apps, users, logins -------------------------------------------------------------------------


def make_app(instance: Path, url: str, *, web_now: bool = True, **extra: object) -> Flask:
    """The app in test mode (CSRF off, no demo) on the database at `url`; `web_now=False`
    builds it as a command-line process does (its pages on first need, ndcg_labeler.factory)."""
    config = {
        "TESTING": True,
        "SECRET_KEY": "test-only-secret",
        "SQLALCHEMY_DATABASE_URI": url,
        "NDCG_DEMO": False,
        "WTF_CSRF_ENABLED": False,
        "INSTANCE_PATH": str(instance),
        # The test client speaks plain http; tests/web/test_deployment.py checks the default.
        "NDCG_SECURE_COOKIES": False,
        # Failure counters of one test never meet another's, even in a shared Redis.
        "NDCG_THROTTLE_PREFIX": f"test-{uuid.uuid4().hex}",
        # A job consumer in a test runs only the jobs the test queues: no schedule tick racing
        # the test's end (tests/series/test_scheduled.py turns the scheduler on).
        "NDCG_SCHEDULER": False,
    }
    config.update(extra)
    app = create_app(config, web_now=web_now)
    ensure_migrate(app)  # the tests migrate with flask_migrate.upgrade()
    return app


def make_user(app: Flask, username: str, role: str = "annotator") -> int:
    """Create a user with the shared test password; returns its id."""
    with app.app_context():
        user = User(username=username, role=role, active=True)
        user.password_hash = PASSWORD_HASH
        db.session.add(user)
        db.session.commit()
        return user.id


def person(app: Flask, username: str) -> int:
    """The id of the annotator with this name, created on first use."""
    with app.app_context():
        found = db.session.scalar(sa.select(User.id).where(User.username == username))
    return found if found is not None else make_user(app, username)


class AuthActions:
    """Log a test client in and out through the real forms (CSRF disabled in tests)."""

    def __init__(self, client: FlaskClient) -> None:
        self._client = client

    def login(self, username: str = "admin", password: str = PASSWORD):
        return self._client.post(
            "/login", data={"username": username, "password": password}, follow_redirects=False
        )

    def logout(self):
        return self._client.post("/logout")


# -- test sets ------------------------------------------------------------------------------------

LABELS_3 = [
    {"name": "Irrelevant", "definition": "Does not help."},
    {"name": "Related", "definition": "On topic, no answer."},
    {"name": "Relevant", "definition": "Partly answers."},
    {"name": "Perfect", "definition": "Fully answers."},
]


@dataclass
class Built:
    """What `build` created: the test set id, query ids by qid, chunk ids by docid, pair ids."""

    test_set_id: int
    queries: dict[str, int] = field(default_factory=dict)
    chunks: dict[str, int] = field(default_factory=dict)
    pairs: list[int] = field(default_factory=list)


def build(
    app: Flask,
    name: str = "ts",
    *,
    pool: dict[str, list[str]] | None = None,
    target: int = 1,
    members: tuple[int, ...] = (),
    texts: dict[str, str | None] | None = None,
    priorities: dict[tuple[str, str], int] | None = None,
    aggregation: str = "median",
) -> Built:
    """A 0–3 test set, through the models, whose pool maps qid -> docids (pairs in that order)."""
    pool = pool if pool is not None else {"q1": ["d1", "d2"], "q2": ["d3"]}
    texts = texts or {}
    priorities = priorities or {}
    with app.app_context():
        ts = TestSet(
            name=name,
            scale_max=3,
            grade_labels=[dict(x) for x in LABELS_3],
            judgments_per_pair=target,
            aggregation=aggregation,
        )
        db.session.add(ts)
        db.session.flush()
        built = Built(ts.id)
        for user_id in members:
            db.session.add(TestSetMember(test_set_id=ts.id, user_id=user_id))
        for qid, docids in pool.items():
            query = Query(test_set_id=ts.id, qid=qid, text=f"text of {qid}")
            db.session.add(query)
            db.session.flush()
            built.queries[qid] = query.id
            for docid in docids:
                if docid not in built.chunks:
                    chunk = Chunk(
                        test_set_id=ts.id,
                        docid=docid,
                        title=f"title {docid}",
                        text=texts.get(docid, f"body of {docid}"),
                    )
                    db.session.add(chunk)
                    db.session.flush()
                    built.chunks[docid] = chunk.id
                pair = Pair(
                    test_set_id=ts.id,
                    query_id=query.id,
                    chunk_id=built.chunks[docid],
                    priority=priorities.get((qid, docid), 0),
                )
                db.session.add(pair)
                db.session.flush()
                built.pairs.append(pair.id)
        # Pairs written through the models: count them as the bulk writers do.
        tallies.recount_pool(ts.id)
        db.session.commit()
    return built


def make_test_set(app: Flask, name: str = "Set", scale: int = 3) -> int:
    """Create an empty test set through the service; returns its id."""
    with app.app_context():
        return testsets.create_test_set(name, scale).id


def build_test_set(
    name: str,
    queries: dict[str, str],
    qrels: Iterable[tuple[str, str, int]] = (),
    corpus: dict[str, str] | None = None,
    scale: int = 3,
) -> TestSet:
    """A test set with queries, optional corpus and qrels, through the import service.

    Call inside an app context; qrels become judgments of the import source."""
    test_set = testsets.create_test_set(name, scale)
    files: dict[str, ImportFile] = {
        "queries": ImportFile(
            io.BytesIO("".join(f"{q}\t{t}\n" for q, t in queries.items()).encode()),
            "queries.tsv",
        )
    }
    if corpus:
        lines = "docid,text\n" + "".join(f"{d},{t}\n" for d, t in corpus.items())
        files["corpus"] = ImportFile(io.BytesIO(lines.encode()), "corpus.csv")
    qrels = list(qrels)
    if qrels:
        text = "".join(f"{q} 0 {d} {g}\n" for q, d, g in qrels)
        files["qrels"] = ImportFile(io.BytesIO(text.encode()), "labels.qrels")
    import_files(test_set, **files)
    return test_set


def grant(app: Flask, test_set_id: int, user_id: int) -> None:
    """Make the user a member (annotator) of the test set."""
    with app.app_context():
        db.session.add(TestSetMember(test_set_id=test_set_id, user_id=user_id))
        db.session.commit()


def pair_ids(app: Flask, test_set_id: int, qid: str, docid: str) -> tuple[int, int]:
    """(query id, chunk id) of a pair named by qid and docid."""
    with app.app_context():
        query_id = db.session.scalar(
            sa.select(Query.id).where(Query.test_set_id == test_set_id, Query.qid == qid)
        )
        chunk_id = db.session.scalar(
            sa.select(Chunk.id).where(Chunk.test_set_id == test_set_id, Chunk.docid == docid)
        )
        return query_id, chunk_id


# -- judgments ------------------------------------------------------------------------------------


def _save(
    test_set: TestSet,
    qid: str,
    docid: str,
    username: str,
    *,
    status: str = "graded",
    grade: int | None = None,
    note: str = "",
    active_ms: int = 0,
    create: bool = False,
) -> None:
    """One judgment through the judging service; with `create`, a missing chunk or user is made."""
    query = db.session.scalar(
        sa.select(Query).where(Query.test_set_id == test_set.id, Query.qid == qid)
    )
    chunk = db.session.scalar(
        sa.select(Chunk).where(Chunk.test_set_id == test_set.id, Chunk.docid == docid)
    )
    if chunk is None and create:
        chunk = Chunk(test_set_id=test_set.id, docid=docid, title=None, text=None)
        db.session.add(chunk)
        db.session.commit()
    user = db.session.scalar(sa.select(User).where(User.username == username))
    if user is None and create:
        user = User(username=username, role="annotator", active=True)
        db.session.add(user)
        db.session.commit()
    labeling.save_judgment(
        test_set, query, chunk, user, status=status, grade=grade, note=note, active_ms=active_ms
    )


def grade(test_set: TestSet, qid: str, docid: str, value: int, username: str) -> None:
    """Save one annotator's grade (inside an app context), creating the chunk or user if new."""
    _save(test_set, qid, docid, username, grade=value, create=True)


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
    """Save one judgment in its own app context (the query, chunk and user must exist)."""
    with app.app_context():
        test_set = db.session.get_one(TestSet, test_set_id)
        _save(
            test_set,
            qid,
            docid,
            username,
            status=status,
            grade=grade,
            note=note,
            active_ms=active_ms,
        )


# -- runs -----------------------------------------------------------------------------------------


def trec(rankings: dict[str, list[str]]) -> bytes:
    """A TREC run whose scores put the docids in the order given."""
    lines = []
    for qid, docids in rankings.items():
        for rank, docid in enumerate(docids, start=1):
            lines.append(f"{qid} Q0 {docid} {rank} {100 - rank} tag\n")
    return "".join(lines).encode()


# -- the team scenario ----------------------------------------------------------------------------
#
# A small 3-annotator test set whose agreement figures are worked out by hand in the team tests.
# Grades on a 0–3 scale (q1: d1 d2 d3; q2: d4 d5 d6 d7), `-` = no judgment:
#
#     pair    alice  bob        carol
#     q1/d1   3      3          3
#     q1/d2   2      1          2
#     q1/d3   0      0          skipped
#     q2/d4   1      -          3
#     q2/d5   -      2          2
#     q2/d6   0      can't tell -
#
# Five pairs have two or more grades (d6 has one grade and a can't-tell; skips and can't-tell
# never count). q2/d7 is in the pool with no judgment yet (the review tests grade it).
#
# `build_runs` is one query whose two chunks alice and bob grade (d1: 0 and 2, d2: 1 and 1) and
# two runs: A ranks d1 then d2, B ranks d2 then d1.

TEAM_POOL = {"q1": ["d1", "d2", "d3"], "q2": ["d4", "d5", "d6", "d7"]}
# (qid, docid, annotator, status, grade, active_ms)
TEAM_JUDGMENTS = [
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


def build_team(app: Flask, name: str = "Team set", *, members: tuple[int, ...] = ()) -> Team:
    """The team scenario above, with alice, bob and carol as members."""
    ids = {who: person(app, who) for who in ("alice", "bob", "carol")}
    built = build(app, name, pool=TEAM_POOL, target=3, members=(*ids.values(), *members))
    for qid, docid, who, status, value, active_ms in TEAM_JUDGMENTS:
        judge(app, built.test_set_id, qid, docid, who, status, value, active_ms)
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


# -- the dashboard scenario -----------------------------------------------------------------------
#
# Grades (imported qrels):   q1: a 3, b 2, c 1, d 0, x 3    q2: e1 2, e2 1, e3 0
#                            q3: f1 1    q4: none (NDCG undefined)    q5: g1 2
# Run A ranks                q1: c d a y   q2: e1 e2 e3   q3: f2 f1   q4: a   q5: g1
# Run B ranks                q1: x a b c   q2: e2 e1      q3: f1      (no q4, no q5)
# y, f2 and z have text but no grade; "ghost" is named by no corpus (B ranks it under q2).

L3 = math.log2(3)
DASH_QUERIES = {
    "q1": "maternity leave",
    "q2": "expense reports",
    "q3": "<b>dress</b> code",
    "q4": "unlabelled question",
    "q5": "holiday carry-over",
}
DASH_QRELS = [
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
DASH_CORPUS = {d: f"text of {d}" for d in ("a", "b", "c", "d", "x", "y", "z", "e1", "e2", "e3")}
DASH_CORPUS.update({"f1": "f1 " + "long text " * 30, "f2": "text of f2", "g1": "text of g1"})

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


def build_dashboard(app: Flask, name: str = "dash") -> Demo:
    """The dashboard scenario: its test set with runs A and B (through the upload service)."""
    with app.app_context():
        test_set = build_test_set(name, DASH_QUERIES, DASH_QRELS, DASH_CORPUS)
        a = run_service.upload_run(test_set, io.BytesIO(trec(RUN_A)), "a.trec", "A", None)
        b = run_service.upload_run(test_set, io.BytesIO(trec(RUN_B)), "b.trec", "B", None)
        built = Demo(test_set.id, a.id, b.id)
        db.session.remove()
        return built


def the_test_set(demo: Demo) -> TestSet:
    """The dashboard test set's row (inside an app context)."""
    return db.session.get_one(TestSet, demo.test_set_id)


_RANDOM_TOKENS = re.compile(r'<(?:input|meta)\b[^>]*\bcsrf[_-]token\b[^>]*>|\bnonce="[^"]*"')


def without_tokens(page: str) -> str:
    """The page with its random tokens (CSRF, CSP nonce) blanked: a check that a short text
    such as "q6" is absent must not fail because a token happened to contain it."""
    return _RANDOM_TOKENS.sub("", page)
