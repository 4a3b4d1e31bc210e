"""Test-set service: defaults, settings validation, annotators and summary counts."""

from __future__ import annotations

from dataclasses import replace

import pytest
import sqlalchemy as sa
from flask import Flask

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Chunk, Judgment, Query, TestSet, User
from ndcg_labeler.services import ServiceError, tallies
from ndcg_labeler.services import testsets as testsets_service
from ndcg_labeler.services.imports import import_files
from ndcg_labeler.services.testsets.catalog import default_grade_labels
from tests.factory import make_test_set, make_user
from tests.testsets.helpers import mem, path


def test_create_has_default_grades_for_each_scale(app: Flask) -> None:
    with app.app_context():
        three = testsets_service.create_test_set("  Three   grades ", 3)
        four = testsets_service.create_test_set("Four", 4)
        assert three.name == "Three grades"
        assert [g["name"] for g in three.grade_labels] == [
            "Irrelevant",
            "Related",
            "Relevant",
            "Perfect",
        ]
        assert len(four.grade_labels) == 5 and four.grade_labels[4]["name"] == "Perfect"
        assert all(g["definition"] for g in three.grade_labels + four.grade_labels)
        assert (three.aggregation, three.judgments_per_pair, three.is_demo) == ("median", 1, False)
        # Each test set owns a copy: editing one never changes the defaults.
        three.grade_labels[0]["name"] = "changed"
        assert default_grade_labels(3)[0]["name"] == "Irrelevant"


@pytest.mark.parametrize(
    ("name", "scale", "message"),
    [
        ("", 3, "must not be empty"),
        ("x" * 201, 3, "at most 200"),
        ("Ok", 5, "scale must be 3"),
        ("Taken", 3, "already exists"),
    ],
)
def test_create_refuses_bad_input(app: Flask, name: str, scale: int, message: str) -> None:
    make_test_set(app, "Taken")
    with app.app_context(), pytest.raises(ServiceError, match=message):
        testsets_service.create_test_set(name, scale)


def test_update_settings_saves_and_bumps_labels_version(app: Flask) -> None:
    ts = make_test_set(app)
    with app.app_context():
        test_set = db.session.get(TestSet, ts)
        labels = default_grade_labels(3)
        labels[2] = {"name": "Useful", "definition": "Helps answer it."}
        new = replace(
            testsets_service.settings_of(test_set),
            name="Renamed",
            grade_labels=labels,
            guidelines="# Read me\r\nfirst",
            judgments_per_pair=3,
        )
        testsets_service.update_settings(test_set, new)
        assert test_set.labels_version == 0  # no scoring setting changed
        testsets_service.update_settings(test_set, replace(new, aggregation="max"))
        db.session.expire_all()
        saved = db.session.get(TestSet, ts)
        assert saved.name == "Renamed" and saved.grade_labels[2]["name"] == "Useful"
        assert saved.guidelines == "# Read me\nfirst"
        assert (saved.judgments_per_pair, saved.aggregation, saved.labels_version) == (3, "max", 1)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"aggregation": "vote"}, "aggregation must be one of"),
        ({"relevance_threshold": 4}, "relevance threshold"),
        ({"relevance_threshold": 0}, "relevance threshold"),
        ({"judgments_per_pair": 6}, "between 1 and 5"),
        ({"disagreement_threshold": 0}, "disagreement threshold"),
        ({"grade_labels": [{"name": "a", "definition": ""}] * 3}, "each grade 0–3"),
        ({"grade_labels": [{"name": " ", "definition": ""}] * 4}, "grade 0 needs a name"),
        ({"name": "Other"}, "already exists"),
    ],
)
def test_update_settings_refuses_bad_values(app: Flask, change: dict, message: str) -> None:
    ts = make_test_set(app)
    make_test_set(app, "Other")
    with app.app_context():
        test_set = db.session.get(TestSet, ts)
        with pytest.raises(ServiceError, match=message):
            testsets_service.update_settings(
                test_set, replace(testsets_service.settings_of(test_set), **change)
            )


def test_members_grant_revoke_and_set(app: Flask, annotator_id: int, admin_id: int) -> None:
    ts = make_test_set(app)
    other = make_user(app, "bea")
    with app.app_context():
        test_set = db.session.get(TestSet, ts)
        ann = db.session.get(User, annotator_id)
        assert testsets_service.grant(test_set, ann) is True
        assert testsets_service.grant(test_set, ann) is False
        assert testsets_service.member_ids(test_set) == {annotator_id}
        assert testsets_service.set_members(test_set, [other]) == (1, 1)
        assert [u.username for u in testsets_service.members(test_set)] == ["bea"]
        assert testsets_service.revoke(test_set, db.session.get(User, other)) is True
        assert testsets_service.member_ids(test_set) == set()
        with pytest.raises(ServiceError):
            testsets_service.set_members(test_set, [999])


def test_summary_counts(app: Flask, annotator_id: int) -> None:
    ts = make_test_set(app)
    with app.app_context():
        test_set = db.session.get(TestSet, ts)
        import_files(
            test_set,
            queries=path("queries.csv"),
            corpus=path("corpus.csv"),
            pool=path("run.trec"),
            qrels=mem("j.qrels", "c1 0 p1 2\n"),
        )
        c1 = db.session.scalar(sa.select(Query.id).where(Query.qid == "c1"))
        p1, p2 = (
            db.session.scalar(sa.select(Chunk.id).where(Chunk.docid == d)) for d in ("p1", "p2")
        )
        # An annotator's second opinion on the same pair and a "can't tell" elsewhere.
        db.session.add_all(
            [
                Judgment(
                    test_set_id=ts,
                    query_id=c1,
                    chunk_id=p1,
                    annotator_id=annotator_id,
                    status="graded",
                    grade=3,
                ),
                Judgment(
                    test_set_id=ts,
                    query_id=c1,
                    chunk_id=p2,
                    annotator_id=annotator_id,
                    status="cant_tell",
                ),
            ]
        )
        # Written through the models, past the judging service: count them as bulk writers do.
        tallies.recount_pool(ts)
        db.session.commit()
        s = testsets_service.summary(test_set)
        # run.trec names 5 pairs over 4 chunks, p9 without text; c1/p1 is judged twice.
        assert (s.queries, s.chunks, s.chunks_without_text) == (2, 4, 1)
        assert (s.pairs, s.judged_pairs, s.judgments) == (5, 1, 2)
        assert s.judged_percent == 20.0
