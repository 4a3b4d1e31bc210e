"""Live scoring: hand-computed numbers, every option, and grade changes re-scoring one query."""

from __future__ import annotations

import io
import math

import pytest
import sqlalchemy as sa

from ndcg_labeler.extensions import db
from ndcg_labeler.models import (
    Adjudication,
    Chunk,
    JudgmentEvent,
    Query,
    Run,
    RunScore,
    TestSet,
)
from ndcg_labeler.services import ServiceError, live
from ndcg_labeler.services import runs as run_service
from ndcg_labeler.services._db import bump_versions
from ndcg_labeler.services.live import (
    ScoreOptions,
    engine,
    figures,
    grades,
    query_detail,
    score_run,
    store,
)
from tests.factory import build_test_set, grade
from tests.runs.helpers import QRELS, QUERIES, RUN

L3 = math.log2(3)  # discount at rank 2
# q1 ranks grades 2, unjudged, 3; its judged grades are 3, 3, 2, 0.
Q1_DCG = 2 + 3 / 2
Q1_IDCG = 3 + 3 / L3 + 2 / 2
Q2_DCG, Q2_IDCG = 1 / L3, 1.0


@pytest.fixture
def setup(ctx) -> tuple[TestSet, Run]:
    test_set = build_test_set("live", QUERIES, QRELS)
    run = run_service.upload_run(test_set, io.BytesIO(RUN.encode()), "a.trec", "A", None)
    return test_set, run


def by_qid(result) -> dict[str, int]:
    return {qid: i for i, qid in enumerate(result.qids)}


def test_hand_computed_scores_and_mean(setup) -> None:
    _, run = setup
    result = score_run(run)
    i = by_qid(result)
    assert result.dcg[i["q1"]] == pytest.approx(Q1_DCG)
    assert result.idcg[i["q1"]] == pytest.approx(Q1_IDCG)
    assert result.ndcg[i["q1"]] == pytest.approx(Q1_DCG / Q1_IDCG)
    assert result.ndcg[i["q2"]] == pytest.approx(Q2_DCG / Q2_IDCG)
    # q3 has no judgment: undefined, left out. q4 is missing from the run: 0 and flagged.
    assert math.isnan(result.ndcg[i["q3"]])
    assert result.ndcg[i["q4"]] == 0.0
    assert result.missing.tolist() == [False, False, False, True]
    assert result.queries_in_mean == 3
    assert result.num_undefined == 1
    assert result.num_missing == 1
    assert result.mean_ndcg == pytest.approx((Q1_DCG / Q1_IDCG + Q2_DCG / Q2_IDCG + 0) / 3)
    assert result.num_rel[i["q1"]] == 3  # a, b, d (c is graded 0)
    assert result.judged_at_k[i["q1"]] == pytest.approx(2 / 10)


def test_rows_sorted_by_gap_then_qid(setup) -> None:
    _, run = setup
    rows = score_run(run).rows()
    assert [r.qid for r in rows] == ["q1", "q4", "q2", "q3"]
    assert rows[0].gap == pytest.approx(Q1_IDCG - Q1_DCG)
    assert rows[0].one_minus_ndcg == pytest.approx(1 - Q1_DCG / Q1_IDCG)
    assert rows[0].text == "parental leave"
    assert rows[3].ndcg is None and rows[3].undefined
    assert rows[1].missing


@pytest.mark.parametrize(
    ("options", "q1_ndcg"),
    [
        (ScoreOptions(k=1), 2 / 3),
        (ScoreOptions(k=3, gain="exp"), (3 + 7 / 2) / (7 + 7 / L3 + 3 / 2)),
        (ScoreOptions(ideal="retrieved"), Q1_DCG / (3 + 2 / L3)),
        (ScoreOptions(judged_only=True), (2 + 3 / L3) / Q1_IDCG),
    ],
)
def test_options(setup, options: ScoreOptions, q1_ndcg: float) -> None:
    _, run = setup
    result = score_run(run, options)
    assert result.ndcg[by_qid(result)["q1"]] == pytest.approx(q1_ndcg)
    assert result.options.k == options.k


def test_missing_query_scores_zero_even_with_retrieved_ideal(setup) -> None:
    _, run = setup
    result = score_run(run, ScoreOptions(ideal="retrieved"))
    assert result.ndcg[by_qid(result)["q4"]] == 0.0


def test_threshold_and_policy_options(setup) -> None:
    test_set, run = setup
    result = score_run(run, ScoreOptions(threshold=3))
    assert result.num_rel[by_qid(result)["q1"]] == 2
    # A second grade of q2/x: import says 1, an annotator says 3. median (lower) 1, max 3.
    grade(test_set, "q2", "x", 3, "ann1")
    median = score_run(run)
    maximum = score_run(run, ScoreOptions(policy="max"))
    i = by_qid(median)["q2"]
    assert median.dcg[i] == pytest.approx(1 / L3)
    assert maximum.dcg[i] == pytest.approx(3 / L3)
    assert maximum.options.policy == "max"


@pytest.mark.parametrize(
    "options",
    [
        ScoreOptions(k=0),
        ScoreOptions(gain="log"),
        ScoreOptions(ideal="all"),
        ScoreOptions(policy="vote"),
    ],
)
def test_bad_options_are_refused(setup, options: ScoreOptions) -> None:
    with pytest.raises(ServiceError):
        score_run(setup[1], options)


def test_a_grade_change_shows_on_the_next_request(setup) -> None:
    test_set, run = setup
    before = score_run(run)
    i = by_qid(before)["q2"]
    grade(test_set, "q2", "y", 3, "ann1")  # y was unjudged at rank 1
    after = score_run(run)
    assert after.dcg[i] == pytest.approx(3 + 1 / L3)
    assert after.ndcg[i] == pytest.approx(1.0)
    assert after.labels_version > before.labels_version
    # The snapshot taken before is not changed behind the caller's back.
    assert before.dcg[i] == pytest.approx(Q2_DCG)


def test_only_the_touched_query_is_rescored_from_its_own_ranked_list(setup, monkeypatch) -> None:
    test_set, run = setup
    score_run(run)
    score_run(run, ScoreOptions(k=5, gain="exp"))  # a second live setting on the same run
    calls: list[int] = []
    real_one = figures.evaluate_one

    def spy_one(*args, **kwargs):
        calls.append(1)
        return real_one(*args, **kwargs)

    def no_full(*args, **kwargs):
        raise AssertionError("a full evaluation was run for a one-grade change")

    statements: list[str] = []

    def record(conn, cursor, statement, *args):
        statements.append(statement.lower())

    monkeypatch.setattr(figures, "evaluate_one", spy_one)
    monkeypatch.setattr(figures, "evaluate_flat", no_full)
    grade(test_set, "q1", "z", 1, "ann1")
    sa.event.listen(db.engine, "before_cursor_execute", record)
    try:
        result = score_run(run)
        exp = score_run(run, ScoreOptions(k=5, gain="exp"))
    finally:
        sa.event.remove(db.engine, "before_cursor_execute", record)
    assert len(calls) == 2  # q1 once per live setting, nothing else
    # The run is not read: only q1's own row of run_query, once per setting.
    reads = [s for s in statements if "run_query" in s]
    assert len(reads) == 2 and all("run_query.query_id =" in s for s in reads)
    i = by_qid(result)["q1"]
    assert result.dcg[i] == pytest.approx(2 + 1 / L3 + 3 / 2)
    assert exp.dcg[i] == pytest.approx(3 + 1 / L3 + 7 / 2)


def test_no_change_means_no_work(setup, monkeypatch) -> None:
    _, run = setup
    score_run(run)
    monkeypatch.setattr(figures, "evaluate_one", None)  # would fail if called
    monkeypatch.setattr(figures, "evaluate_flat", None)
    assert score_run(run).queries_in_mean == 3


def test_adjudication_overrides_and_is_picked_up(setup) -> None:
    test_set, run = setup
    score_run(run)
    q2 = db.session.scalar(sa.select(Query).where(Query.qid == "q2"))
    x = db.session.scalar(sa.select(Chunk).where(Chunk.docid == "x"))
    # What the adjudication service does: the row, an event, and a labels_version bump.
    db.session.add(Adjudication(test_set_id=test_set.id, query_id=q2.id, chunk_id=x.id, grade=0))
    db.session.add(
        JudgmentEvent(
            test_set_id=test_set.id,
            query_id=q2.id,
            chunk_id=x.id,
            kind="adjudication",
            old_grade=None,
            new_grade=0,
        )
    )
    bump_versions(test_set.id, labels=True)
    db.session.commit()
    result = score_run(run)
    assert math.isnan(result.ndcg[by_qid(result)["q2"]])  # its only judged chunk is now 0
    assert result.queries_in_mean == 2


def test_new_query_in_the_test_set_is_missing_from_the_run(setup) -> None:
    test_set, run = setup
    score_run(run)
    db.session.add(Query(test_set_id=test_set.id, qid="q5", text="new"))
    db.session.commit()
    result = score_run(run)
    assert "q5" in result.qids
    assert result.missing[by_qid(result)["q5"]]


def test_deleted_run_is_forgotten(setup) -> None:
    test_set, run = setup
    score_run(run)
    run_service.delete_run(run)
    again = run_service.upload_run(test_set, io.BytesIO(b"q1 Q0 a 1 1.0 s\n"), "b", "B", None)
    result = score_run(again)
    assert result.dcg[by_qid(result)["q1"]] == pytest.approx(3.0)


def test_query_detail_explains_the_gap(setup) -> None:
    _, run = setup
    q1 = db.session.scalar(sa.select(Query).where(Query.qid == "q1"))
    detail = query_detail(run, q1, ScoreOptions(k=3))
    assert [(r.docid, r.grade) for r in detail.ranked] == [("b", 2), ("z", None), ("a", 3)]
    assert [r.discount for r in detail.ranked] == pytest.approx([1, L3, 2])
    assert [r.contribution for r in detail.ranked] == pytest.approx([2, 0, 1.5])
    assert [(r.docid, r.grade) for r in detail.ideal] == [("a", 3), ("d", 3), ("b", 2)]
    assert detail.dcg == pytest.approx(Q1_DCG)
    assert detail.idcg == pytest.approx(Q1_IDCG)
    assert detail.ndcg == pytest.approx(Q1_DCG / Q1_IDCG)
    # Best order of what was retrieved: a(3), b(2), z → 3 + 2/log2 3.
    assert detail.ordering_loss == pytest.approx(3 + 2 / L3 - Q1_DCG)
    assert detail.recall_loss == pytest.approx(Q1_IDCG - (3 + 2 / L3))
    assert detail.ranked[1].chunk_id is None  # z is in no corpus
    row = score_run(run, ScoreOptions(k=3))
    assert detail.ndcg == row.ndcg[by_qid(row)["q1"]]


@pytest.mark.parametrize("policy", ["median", "mean", "max", "min", "majority"])
def test_one_query_grades_equal_the_whole_test_sets(setup, policy: str) -> None:
    """The hot path's one-query read aggregates exactly as the whole-set read does."""
    test_set, _ = setup
    for user, value in (("u1", 3), ("u2", 0), ("u3", 2)):
        grade(test_set, "q1", "c", value, user)
        grade(test_set, "q1", "z", (value + 1) % 4, user)
    q1 = db.session.scalar(sa.select(Query).where(Query.qid == "q1"))
    whole = live.scoring_qrels(test_set, policy)["q1"]
    assert grades.query_grades(test_set.id, q1.id, policy) == whole
    # c: imported 0, then 3, 0, 2 -> sorted 0 0 2 3 (mean 1.25 rounds to 1).
    assert whole["c"] == {"median": 0, "mean": 1, "max": 3, "min": 0, "majority": 0}[policy]


def test_an_event_committed_late_with_a_smaller_id_is_still_seen(setup) -> None:
    """On PostgreSQL a transaction can commit after another that took a later event id."""
    test_set, run = setup
    score_run(run)
    top = db.session.scalar(sa.select(sa.func.max(JudgmentEvent.id)))
    grade(test_set, "q1", "z", 2, "ann1")  # committed first, but with a later id
    db.session.execute(
        sa.update(JudgmentEvent).where(JudgmentEvent.id == top + 1).values(id=top + 10)
    )
    db.session.commit()
    first = score_run(run)
    assert first.dcg[by_qid(first)["q1"]] == pytest.approx(2 + 2 / L3 + 3 / 2)
    grade(test_set, "q2", "y", 3, "ann1")  # the straggler: its event gets an earlier id
    straggler = db.session.scalar(sa.select(sa.func.max(JudgmentEvent.id)))
    db.session.execute(
        sa.update(JudgmentEvent).where(JudgmentEvent.id == straggler).values(id=top + 5)
    )
    db.session.commit()
    second = score_run(run)
    assert second.dcg[by_qid(second)["q2"]] == pytest.approx(3 + 1 / L3)


def test_query_detail_options_and_a_missing_query(setup) -> None:
    _, run = setup
    q1 = db.session.scalar(sa.select(Query).where(Query.qid == "q1"))
    condensed = query_detail(run, q1, ScoreOptions(k=3, judged_only=True))
    assert [r.docid for r in condensed.ranked] == ["b", "a"]  # z (unjudged) dropped
    assert condensed.dcg == pytest.approx(2 + 3 / L3)
    retrieved = query_detail(run, q1, ScoreOptions(k=3, ideal="retrieved"))
    assert [r.docid for r in retrieved.ideal] == ["a", "b", "z"]
    assert retrieved.idcg == pytest.approx(3 + 2 / L3)
    assert retrieved.recall_loss == pytest.approx(0.0)
    q4 = db.session.scalar(sa.select(Query).where(Query.qid == "q4"))
    missing = query_detail(run, q4, ScoreOptions(k=3))
    assert missing.missing and missing.ranked == []
    assert (missing.ndcg, missing.idcg) == (0.0, pytest.approx(2.0))
    assert missing.to_json()["ideal"][0]["docid"] == "m"


def test_a_new_setting_after_a_grade_change_sees_the_change(setup) -> None:
    """Settings share one array of ranked grades per run; it catches up when next needed."""
    test_set, run = setup
    score_run(run)
    grade(test_set, "q1", "z", 1, "ann1")
    fresh = score_run(run, ScoreOptions(gain="exp"))  # a new setting: one full evaluation
    assert fresh.dcg[by_qid(fresh)["q1"]] == pytest.approx(3 + 1 / L3 + 7 / 2)
    grade(test_set, "q1", "z", 0, "ann1")
    again = score_run(run, ScoreOptions(ideal="retrieved"))
    assert again.dcg[by_qid(again)["q1"]] == pytest.approx(2 + 3 / 2)


def _new_process(app) -> None:
    """Forget this process's in-memory scores, as a freshly started worker or CLI would."""
    app.extensions.pop("ndcg_live_scores", None)


def test_a_new_process_reads_the_stored_scores_not_the_run(setup, monkeypatch) -> None:
    from flask import current_app

    _, run = setup
    first = score_run(run)  # computed once (the upload stored the default setting already)
    _new_process(current_app)
    statements: list[str] = []

    def record(conn, cursor, statement, *args):
        statements.append(statement.lower())

    monkeypatch.setattr(figures, "evaluate_flat", None)  # would fail if called
    monkeypatch.setattr(figures, "evaluate_one", None)
    sa.event.listen(db.engine, "before_cursor_execute", record)
    try:
        again = score_run(run)
    finally:
        sa.event.remove(db.engine, "before_cursor_execute", record)
    assert not [s for s in statements if "run_query" in s]
    assert again.to_json() == first.to_json()


def test_a_new_process_catches_up_from_the_store_after_a_grade(setup, monkeypatch) -> None:
    from flask import current_app

    test_set, run = setup
    score_run(run)
    grade(test_set, "q1", "z", 1, "ann1")  # another process's grade: this one has not seen it
    _new_process(current_app)

    def no_full(*args, **kwargs):
        raise AssertionError("a full evaluation was run for a one-grade change")

    monkeypatch.setattr(figures, "evaluate_flat", no_full)
    result = score_run(run)
    i = by_qid(result)["q1"]
    assert result.dcg[i] == pytest.approx(2 + 1 / L3 + 3 / 2)


def test_grades_on_many_queries_are_caught_up_by_one_full_scoring(setup, monkeypatch) -> None:
    """Past FULL_RESCORE_QUERIES touched queries, the state is scored again in full."""
    test_set, run = setup
    score_run(run)
    grade(test_set, "q1", "z", 1, "ann1")

    def no_one(*args, **kwargs):
        raise AssertionError("a query was re-scored on its own")

    monkeypatch.setattr(engine, "FULL_RESCORE_QUERIES", 0)
    monkeypatch.setattr(figures, "evaluate_one", no_one)
    result = score_run(run)
    i = by_qid(result)["q1"]
    assert result.dcg[i] == pytest.approx(2 + 1 / L3 + 3 / 2)


def test_the_store_is_written_back_once_enough_queries_moved(setup, monkeypatch) -> None:
    """One grade does not rewrite the stored row (a re-score stays a few ms); a few more do."""
    test_set, run = setup
    score_run(run)

    def stored_version() -> int:
        stmt = sa.select(RunScore.labels_version).where(RunScore.run_id == run.id)
        return db.session.scalar(stmt)

    before = stored_version()
    monkeypatch.setattr(store, "SAVE_AFTER_QUERIES", 2)
    grade(test_set, "q1", "z", 1, "ann1")
    assert score_run(run).labels_version > before
    assert stored_version() == before  # one query ahead: not written yet
    grade(test_set, "q2", "y", 2, "ann1")
    newest = score_run(run)
    assert stored_version() == newest.labels_version  # two queries ahead: written


def test_an_older_state_never_overwrites_a_newer_one(setup, monkeypatch) -> None:
    test_set, run = setup
    monkeypatch.setattr(store, "SAVE_AFTER_QUERIES", 1)  # every catch-up is written
    score_run(run)
    settings = db.session.scalar(sa.select(RunScore.settings).where(RunScore.run_id == run.id))
    old = store.load(run.id, settings)
    grade(test_set, "q1", "z", 1, "ann1")
    new = score_run(run)
    assert store.save(old)  # the write runs, but its WHERE keeps the newer row
    kept = store.load(run.id, settings)
    assert kept.labels_version == new.labels_version > old.labels_version


def test_a_process_keeps_a_bounded_number_of_bytes_of_scores(setup, monkeypatch) -> None:
    """Past MEMORY_BYTES the least recently used states leave memory; the store has them."""
    from flask import current_app

    _, run = setup
    linear = score_run(run)
    states = current_app.extensions["ndcg_live_scores"].states
    (only,) = states.values()
    monkeypatch.setattr(store, "MEMORY_BYTES", only.nbytes)  # room for one state
    exp = score_run(run, ScoreOptions(gain="exp"))  # another setting: a second state
    assert len(states) == 1 and next(iter(states.values())).settings.endswith("human")
    assert "|exp|" in next(iter(states.values())).settings  # the newest stays
    monkeypatch.setattr(figures, "evaluate_flat", None)  # read back, never recomputed
    assert score_run(run).to_json() == linear.to_json()
    assert score_run(run, ScoreOptions(gain="exp")).to_json() == exp.to_json()
    assert len(states) == 1
