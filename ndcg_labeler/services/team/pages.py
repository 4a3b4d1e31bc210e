"""The team pages' figures through the cache: agreement, people, policies and the review
queue's pages, per labels version."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import sqlalchemy as sa
from flask_sqlalchemy.pagination import Pagination

from ndcg_labeler.extensions import db
from ndcg_labeler.models import TestSet, TestSetMember
from ndcg_labeler.services._db import stored_page
from ndcg_labeler.services._figures_cache import Cached, cached, register
from ndcg_labeler.services.team.agreement import (
    AgreementReport,
    AnnotatorPair,
    QueryAgreement,
    agreement_report,
)
from ndcg_labeler.services.team.disputes import (
    PER_PAGE,
    DisputedPair,
    following,
    review_queue,
    waiting_order,
)
from ndcg_labeler.services.team.people import Person, TrendPoint, people
from ndcg_labeler.services.team.policies import (
    Cell,
    PolicyComparison,
    Reorder,
    RunRow,
    compare_policies,
)

register(AgreementReport, AnnotatorPair, QueryAgreement, Person, TrendPoint)
register(PolicyComparison, RunRow, Cell, Reorder)


@dataclass(frozen=True)
class ReviewPage:
    """One stored page of the review queue: its number, the queue's length, its pairs."""

    page: int
    total: int
    items: list[DisputedPair]


register(ReviewPage, DisputedPair)


def _labels(test_set: TestSet) -> str:
    """Grades and the scoring settings: labels_version moves with every change to either."""
    fresh = db.session.scalar(
        sa.select(TestSet.labels_version)
        .where(TestSet.id == test_set.id)
        .execution_options(populate_existing=True)
    )
    return f"labels={fresh}"


def _labels_and_runs(test_set: TestSet) -> str:
    runs = db.session.scalar(sa.select(TestSet.runs_version).where(TestSet.id == test_set.id))
    return f"{_labels(test_set)};runs={runs};base={test_set.aggregation}"


def _labels_and_members(test_set: TestSet) -> str:
    """People lists every member too: granting or revoking changes the page."""
    ids = db.session.scalars(
        sa.select(TestSetMember.user_id)
        .where(TestSetMember.test_set_id == test_set.id)
        .order_by(TestSetMember.user_id)
    )
    digest = hashlib.sha256(",".join(map(str, ids)).encode()).hexdigest()[:16]
    return f"{_labels(test_set)};members={digest}"


def cached_agreement_report(
    test_set: TestSet, *, include_imports: bool = False, background: bool = False
) -> Cached[AgreementReport]:
    """agreement_report, computed once per labels version (see cache.py for large sets)."""
    return cached(
        test_set,
        "agreement",
        f"imports={int(include_imports)}",
        _labels,
        lambda ts: agreement_report(ts, include_imports=include_imports),
        background=background,
    )


def cached_people(
    test_set: TestSet,
    *,
    include_imports: bool = False,
    only_user_id: int | None = None,
    background: bool = False,
) -> Cached[list[Person]]:
    """people, computed once per labels version and member list; `only_user_id` filters it."""
    found = cached(
        test_set,
        "people",
        # "raters=queue": figures stored before drill-down grades stopped being ratings here
        # are under another key, so none of them is shown again.
        f"imports={int(include_imports)};raters=queue",
        _labels_and_members,
        lambda ts: people(ts, include_imports=include_imports),
        background=background,
    )
    if only_user_id is None:
        return found
    mine = [person for person in found.value if person.user_id == only_user_id]
    return Cached(mine, found.updating)


def cached_policies(
    test_set: TestSet, k: int = 10, *, background: bool = False
) -> Cached[PolicyComparison]:
    """compare_policies, computed once per labels version, runs version and base policy."""
    return cached(
        test_set,
        "policies",
        f"k={k}",
        _labels_and_runs,
        lambda ts: compare_policies(ts, k),
        background=background,
    )


def cached_review_queue(
    test_set: TestSet, *, include_adjudicated: bool = False, page: int = 1, per_page: int = PER_PAGE
) -> Pagination:
    """review_queue's page, computed once per labels version, threshold and page: the queue
    groups every judgment of the set, which takes ~0.4 s at 200k. Recomputed inline on any
    change (an adjudication must leave the queue at once, never shown while updating)."""

    def compute(ts: TestSet) -> ReviewPage:
        found = review_queue(
            ts, include_adjudicated=include_adjudicated, page=page, per_page=per_page
        )
        return ReviewPage(found.page, found.total or 0, list(found.items))

    options = (
        f"threshold={test_set.disagreement_threshold};all={int(include_adjudicated)};"
        f"page={page};per_page={per_page}"
    )
    stored = cached(test_set, "review", options, _labels, compute, inline=True).value
    return stored_page(stored.items, stored.page, per_page, stored.total, asked=page)


def cached_next_disputed(
    test_set: TestSet, after: tuple[int, int] | None = None
) -> tuple[int, int] | None:
    """(query_id, chunk_id) of the first pair still waiting in the queue's order, or of the one
    after `after` (wrapping round) when `after` is waiting; None when none is.

    The waiting pairs' order is stored once per labels version and threshold, and each pair
    page finds its Skip in it: asking the database grouped every judgment of the set on every
    page view (~0.25-0.35 s at 200,000 on PostgreSQL). An adjudication moves the labels
    version, so the pair leaves the order at once."""

    def compute(ts: TestSet) -> str:
        # One string of ids, not a list of pairs: 20,000 pairs decode in a split.
        return " ".join(f"{query_id} {chunk_id}" for query_id, chunk_id in waiting_order(ts))

    options = f"threshold={test_set.disagreement_threshold};waiting"
    text = cached(test_set, "review", options, _labels, compute, inline=True).value
    ids = [int(number) for number in text.split()]
    return following(list(zip(ids[::2], ids[1::2], strict=True)), after)
