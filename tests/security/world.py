"""The authorization matrix's data: sets A and B, blind set C, runs, people and API tokens."""

from __future__ import annotations

import io
import re
from dataclasses import dataclass

from flask import Flask

from ndcg_labeler.extensions import db
from ndcg_labeler.models import TestSet, User
from ndcg_labeler.services import accounts, endpoints, judges
from ndcg_labeler.services import runs as run_service
from ndcg_labeler.services.jobs.records import create_job
from tests.factory import build, make_user, trec


@dataclass
class Target:
    """The ids that fill one test set's URLs."""

    test_set_id: int
    run_id: int
    query_id: int
    chunk_id: int
    pair_id: int

    def fill(self, rule, extra: dict[str, object]) -> str:
        """The rule's URL with these ids (KeyError for a parameter we cannot fill)."""
        values = {
            "test_set_id": self.test_set_id,
            "run_id": self.run_id,
            "query_id": self.query_id,
            "chunk_id": self.chunk_id,
            "pair_id": self.pair_id,
            "test_set": self.test_set_id,  # the API addresses sets and runs by id or name
            "run": self.run_id,
            **extra,
        }
        path = rule.rule
        for name in rule.arguments:
            path = re.sub(rf"<(?:[a-z]+:)?{name}>", str(values[name]), path)
        return path


@dataclass
class World:
    """The fixture data: sets A and B (one judgment each), blind set C, people and tokens."""

    app: Flask
    sets: dict[str, Target]
    users: dict[str, int]
    tokens: dict[str, str]
    job_id: int  # a job admin started on set A (only its starter and admins may see it)
    judge_id: int


def _target(app: Flask, name: str, target: int, members: tuple[int, ...]) -> Target:
    built = build(
        app, name, pool={"q1": ["d1", "d2"], "q2": ["d3"]}, target=target, members=members
    )
    with app.app_context():
        test_set = db.session.get_one(TestSet, built.test_set_id)
        runs = [
            run_service.upload_run(  # both of series "matrix", as the series routes name it
                test_set,
                io.BytesIO(trec({"q1": order, "q2": ["d3"]})),
                "r.trec",
                label,
                None,
                series="matrix",
            )
            for label, order in (("one", ["d1", "d2"]), ("two", ["d2", "d1"]))
        ]
        return Target(
            built.test_set_id,
            runs[0].id,
            built.queries["q1"],
            built.chunks["d1"],
            built.pairs[0],
        )


def make_world(app: Flask) -> World:
    """Admin, an outsider, a member of B only, a member of blind C; sets A, B, C with runs."""
    users = {
        "admin": make_user(app, "admin", "admin"),
        "outsider": make_user(app, "outsider"),
        "member-of-other": make_user(app, "bmember"),
        "blind-annotator": make_user(app, "blindie"),
        "token-owner": make_user(app, "tokenowner"),
        "revoked": make_user(app, "revoked"),
    }
    sets = {
        "A": _target(app, "Set A", 1, ()),
        "B": _target(app, "Set B", 1, (users["member-of-other"],)),
        "C": _target(app, "Blind C", 3, (users["blind-annotator"],)),
    }
    with app.app_context():
        tokens = {
            who: accounts.create_token(db.session.get_one(User, users[who]))
            for who in ("admin", "token-owner", "revoked")
        }
        accounts.revoke_token(db.session.get_one(User, users["revoked"]))
        job = create_job("import", sets["A"].test_set_id, users["admin"], {})
        # Nothing listens on port 9: a run of this judge fails at once (and is not retried long).
        judge = judges.add_judge("matrix", "http://127.0.0.1:9/v1", "none", timeout=1)
        for target in sets.values():  # an endpoint named "matrix" in every set (nothing listens)
            endpoints.add_endpoint(
                db.session.get_one(TestSet, target.test_set_id),
                "matrix",
                "http://127.0.0.1:9/?q={query}",
                preset_name="list",
            )
        ids = (job.id, judge.id)
    return World(app, sets, users, tokens, *ids)
