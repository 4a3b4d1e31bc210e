"""The grades scoring uses: every graded judgment of a pair combined by an aggregation policy.

- ``scoring_qrels(test_set, policy=None) -> {qid: {docid: grade}}`` for a whole test set;
- ``query_grades(test_set_id, query_id, policy) -> {docid: grade}`` for live re-scoring of one
  query (statements built once: it is the hot path after every grade);
- ``read_grades`` for a full live scoring: every grade as of a judgment event (`Grades`);
- ``events_since``: the judgment events after a score's newest, naming the queries to re-score.

Rules: only `graded` judgments count (can't-tell and skips never do); people's and import
sources' grades are combined with ``scoring.aggregate.resolve`` under the test set's aggregation
policy unless another is given; an Adjudication's grade overrides any policy. A pair nobody
graded is absent (unjudged), a pair graded 0 is present with 0 (judged non-relevant).
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from ndcg_labeler.extensions import db
from ndcg_labeler.formats import QrelRecord, write_trec_qrels
from ndcg_labeler.models import (
    Adjudication,
    Chunk,
    Judge,
    Judgment,
    JudgmentEvent,
    MachineJudgment,
    Query,
    TestSet,
)
from ndcg_labeler.scoring import POLICIES, resolve
from ndcg_labeler.services import ServiceError
from ndcg_labeler.services._db import select_rows
from ndcg_labeler.services.live.options import Resolved, label_judge_id
from ndcg_labeler.services.live.state import QuerySet, TestSetState

Qrels = dict[str, dict[str, int]]


def choose_policy(test_set_policy: str, policy: str | None) -> str:
    """The policy to use (the test set's unless one is given); ServiceError when unknown."""
    chosen = policy or test_set_policy
    if chosen not in POLICIES:
        raise ServiceError(f"unknown aggregation policy '{chosen}'; choose one of {POLICIES}")
    return chosen


def combine(
    rows: Iterable[Sequence[Any]],
    adjudicated: Iterable[Sequence[Any]],
    policy: str,
) -> Qrels:
    """Group (qid, docid, grade) rows per pair and resolve each pair to one grade."""
    qrels: Qrels = {}
    # Most pairs have one grade: keep it in place and collect only the pairs with several.
    several: dict[tuple[str, str], list[int]] = {}
    for qid, docid, grade in rows:
        docs = qrels.get(qid)
        if docs is None:
            docs = qrels[qid] = {}
        if docid in docs:
            key = (qid, docid)
            grades = several.get(key)
            if grades is None:
                several[key] = [docs[docid], grade]
            else:
                grades.append(grade)
        else:
            docs[docid] = grade
    # Every policy is order-independent, so pairs with the same multiset of grades share one
    # resolve() call: many pairs, a handful of distinct grade combinations.
    cache: dict[tuple[int, ...], int | None] = {}
    for (qid, docid), grades in several.items():
        combo = tuple(sorted(grades))
        if combo not in cache:
            cache[combo] = resolve(combo, policy)
        resolved = cache[combo]
        if resolved is not None:
            qrels[qid][docid] = resolved
    for qid, docid, adjudicated_grade in adjudicated:
        final = resolve([], policy, adjudicated=adjudicated_grade)
        if final is not None:
            qrels.setdefault(qid, {})[docid] = final
    return qrels


def graded_rows(test_set_id: int, query_id: int | None) -> sa.Select[tuple[str, str, int]]:
    """(qid, docid, grade) of every graded judgment of the test set, or of one query."""
    stmt = (
        sa.select(Query.qid, Chunk.docid, Judgment.grade)
        .join(Query, Query.id == Judgment.query_id)
        .join(Chunk, Chunk.id == Judgment.chunk_id)
        .where(Judgment.status == "graded")
    )
    if query_id is None:
        return stmt.where(Judgment.test_set_id == test_set_id)
    # By query id alone (plus the query's own test set): the (query, chunk, annotator) key
    # serves it, where a test_set_id filter would tempt SQLite into scanning the whole set.
    return stmt.where(Judgment.query_id == query_id, Query.test_set_id == test_set_id)


def adjudicated_rows(test_set_id: int, query_id: int | None) -> sa.Select[tuple[str, str, int]]:
    """(qid, docid, grade) of every adjudicated pair of the test set, or of one query."""
    stmt = (
        sa.select(Query.qid, Chunk.docid, Adjudication.grade)
        .join(Query, Query.id == Adjudication.query_id)
        .join(Chunk, Chunk.id == Adjudication.chunk_id)
    )
    if query_id is None:
        return stmt.where(Adjudication.test_set_id == test_set_id)
    return stmt.where(Adjudication.query_id == query_id, Query.test_set_id == test_set_id)


def judge_id(labels: str) -> int | None:
    """The judge a label source names ("machine:X", "fill:X"), None for "human"."""
    return label_judge_id(labels)


def machine_rows(test_set_id: int, judge: int, query_id: int | None) -> sa.Select[Any]:
    """(qid, docid, grade) of the judge's latest readable grade of each pair."""
    mj = MachineJudgment.__table__
    later = MachineJudgment.__table__.alias("later")
    newest = ~sa.exists().where(
        later.c.query_id == mj.c.query_id,
        later.c.chunk_id == mj.c.chunk_id,
        later.c.judge_id == mj.c.judge_id,
        later.c.status == "labeled",
        later.c.id > mj.c.id,
    )
    stmt = (
        sa.select(Query.qid, Chunk.docid, mj.c.grade)
        .join(Query, Query.id == mj.c.query_id)
        .join(Chunk, Chunk.id == mj.c.chunk_id)
        .where(mj.c.judge_id == judge, mj.c.status == "labeled", newest)
    )
    if query_id is None:
        return stmt.where(mj.c.test_set_id == test_set_id)
    return stmt.where(mj.c.query_id == query_id, Query.test_set_id == test_set_id)


def with_labels(human: Qrels, machine: Qrels, labels: str) -> Qrels:
    """The grades a label source gives: human, machine only, or human filled in by machine."""
    if labels.startswith("machine:"):
        return machine
    if labels.startswith("fill:"):
        out = {qid: dict(docs) for qid, docs in machine.items()}
        for qid, docs in human.items():
            out.setdefault(qid, {}).update(docs)  # a human grade always wins
        return out
    return human


def _machine_qrels(rows: Iterable[Sequence[Any]]) -> Qrels:
    out: Qrels = {}
    for qid, docid, grade in rows:
        out.setdefault(qid, {})[docid] = int(grade)
    return out


def scoring_qrels(test_set: TestSet, policy: str | None = None, labels: str = "human") -> Qrels:
    """{qid: {docid: grade}} of every pair with a grade, aggregated under `policy`, from the
    label source `labels` (human, machine:JUDGE or fill:JUDGE)."""
    chosen = choose_policy(test_set.aggregation, policy)
    rows = select_rows(graded_rows(test_set.id, None))
    adjudicated = select_rows(adjudicated_rows(test_set.id, None))
    human = combine(rows, adjudicated, chosen)
    judge = judge_id(labels)
    if judge is None:
        return human
    machine = _machine_qrels(select_rows(machine_rows(test_set.id, judge, None)))
    return with_labels(human, machine, labels)


def qrels_text(test_set: TestSet, policy: str | None = None) -> str:
    """The grades scoring uses (policy, adjudications) as TREC qrels, sorted by qid, docid."""
    out = io.StringIO()
    write_trec_qrels(sorted_records(scoring_qrels(test_set, policy)), out)
    return out.getvalue()


# The live hot path's statements, built once: building them per call costs more than running them.
_ONE_QUERY_GRADED = graded_rows(sa.bindparam("test_set_id"), sa.bindparam("query_id"))  # type: ignore[arg-type]
_ONE_QUERY_ADJUDICATED = adjudicated_rows(sa.bindparam("test_set_id"), sa.bindparam("query_id"))  # type: ignore[arg-type]


def query_grades(
    test_set_id: int, query_id: int, policy: str | None = None, labels: str = "human"
) -> dict[str, int]:
    """{docid: grade} of one query (for re-scoring it after a grade changes).

    Same rules as scoring_qrels, under `policy` or else the test set's own. The statements are
    compiled once and cached by the session, so the live path (which passes the policy) reads a
    query in about a millisecond. Few rows, so SQLAlchemy rows are cheap here.
    """
    if policy is None:
        policy = db.session.scalar(sa.select(TestSet.aggregation).where(TestSet.id == test_set_id))
        if policy is None:
            raise ServiceError(f"unknown test set id {test_set_id}")
    params = {"test_set_id": test_set_id, "query_id": query_id}
    rows = db.session.execute(_ONE_QUERY_GRADED, params).all()
    adjudicated = db.session.execute(_ONE_QUERY_ADJUDICATED, params).all()
    qrels = combine(rows, adjudicated, choose_policy(policy, None))
    judge = judge_id(labels)
    if judge is not None:
        machine = db.session.execute(machine_rows(test_set_id, judge, query_id)).all()
        qrels = with_labels(qrels, _machine_qrels(machine), labels)
    return next(iter(qrels.values()), {})


def sorted_records(qrels: Qrels) -> Iterator[QrelRecord]:
    """The qrels as records sorted by qid then docid (code point = UTF-8 byte order)."""
    for qid in sorted(qrels):
        docs = qrels[qid]
        for docid in sorted(docs):
            yield QrelRecord(qid, docid, docs[docid])


def machine_version(test_set_id: int, labels: str) -> str:
    """The judge's creation time and newest answer id in the test set: what versions machine
    labels, which carry no judgment events. The time tells a judge deleted and defined again
    under its name apart (SQLite may hand the new one's answers the old ids again)."""
    judge = judge_id(labels)
    newest = sa.select(sa.func.max(MachineJudgment.id)).where(
        MachineJudgment.test_set_id == test_set_id, MachineJudgment.judge_id == judge
    )
    created = db.session.scalar(sa.select(Judge.created_at).where(Judge.id == judge))
    stamp = int(created.timestamp() * 1_000_000) if created is not None else 0
    return f"{stamp}.{int(db.session.scalar(newest) or 0)}"


# Event ids come from one counter shared by all test sets; on PostgreSQL a transaction may
# commit after one that took a later id. Re-reading a short tail of ids catches such stragglers.
EVENT_LOOKBACK = 128

_EVENTS_SINCE = (
    sa.select(JudgmentEvent.__table__.c.id, JudgmentEvent.__table__.c.query_id)
    .where(
        JudgmentEvent.__table__.c.test_set_id == sa.bindparam("test_set_id"),
        JudgmentEvent.__table__.c.id > sa.bindparam("after"),
    )
    .order_by(JudgmentEvent.__table__.c.id)
)
_MAX_EVENT = sa.select(sa.func.max(JudgmentEvent.id)).where(
    JudgmentEvent.test_set_id == sa.bindparam("test_set_id")
)


@dataclass(frozen=True)
class Events:
    """The judgment events a score has not applied yet, read after its newest one."""

    touched: set[int]  # the queries they changed
    seen: frozenset[int]  # the recent event ids, now applied
    max_event_id: int | None  # the newest of them (None: no event in the tail read)


def events_since(test_set_id: int, max_event_id: int, seen: frozenset[int]) -> Events:
    """The events after `max_event_id` (and its lookback tail) that are not in `seen`."""
    rows = db.session.execute(
        _EVENTS_SINCE, {"test_set_id": test_set_id, "after": max_event_id - EVENT_LOOKBACK}
    ).all()
    return Events(
        touched={qpk for event_id, qpk in rows if event_id not in seen},
        seen=frozenset(event_id for event_id, _ in rows),
        max_event_id=rows[-1][0] if rows else None,
    )


def grades_of_queries(
    test_set_id: int, policy: str, queries: QuerySet, labels: str = "human"
) -> dict[int, dict]:
    """{query id: {docid: grade}} of the whole test set under `policy` and label source."""
    test_set = db.session.get_one(TestSet, test_set_id)
    qrels = scoring_qrels(test_set, policy, labels)
    ids = dict(zip(queries.qids, queries.ids.tolist(), strict=True))
    return {ids[qid]: docs for qid, docs in qrels.items() if qid in ids}


@dataclass(frozen=True)
class Grades:
    """What a full scoring reads besides the run: the test set's grades as of a judgment event.

    The events are read first, so a grade saved while the grades are read is applied again by
    the next catch-up, never missed; `state` is the snapshot they were read under.
    """

    state: TestSetState
    resolved: Resolved
    queries: QuerySet
    max_event_id: int
    seen: frozenset[int]
    by_query: dict[int, dict]

    def fits(self, state: TestSetState, resolved: Resolved) -> bool:
        """Read under this setting and these queries (grades given since are caught up)."""
        return self.resolved == resolved and self.state.queries_key == state.queries_key


def read_grades(state: TestSetState, resolved: Resolved, queries: QuerySet) -> Grades:
    """The test set's grades under `resolved` (policy, label source) for a full scoring."""
    max_id = int(db.session.scalar(_MAX_EVENT, {"test_set_id": state.id}) or 0)
    seen = frozenset(
        db.session.scalars(
            sa.select(JudgmentEvent.id).where(
                JudgmentEvent.test_set_id == state.id, JudgmentEvent.id > max_id - EVENT_LOOKBACK
            )
        )
    )
    by_query = grades_of_queries(state.id, resolved.policy, queries, resolved.labels)
    return Grades(state, resolved, queries, max_id, seen, by_query)
