"""Per-annotator statistics of a test set: volume, speed, grades and agreement with the others.

Agreement with the consensus: on each pair an annotator graded together with at least one other
rater, does their grade equal the aggregate (the test set's policy) of the others' current
grades? Over time: the annotator's shared pairs in the order they last graded them, cut into
buckets of equal size (at least MIN_BUCKET pairs, at most MAX_POINTS buckets; the last bucket
may be smaller) so each point rests on enough pairs whatever the pace of labeling. As on the
Agreement page, a grade given in a run's drill-down counts in a person's volume and grades but
is no rating: it is neither compared with the others nor part of their consensus.
"""

from __future__ import annotations

import csv
import io
import math
import statistics
from collections import defaultdict
from dataclasses import dataclass, replace
from datetime import datetime

import sqlalchemy as sa

from ndcg_labeler.extensions import db
from ndcg_labeler.formats import safe_value
from ndcg_labeler.models import Judgment, TestSet, TestSetMember, User
from ndcg_labeler.models.users import IMPORT_ROLE
from ndcg_labeler.scoring import ConsensusAgreement, Rating, consensus_agreement

MIN_BUCKET = 10
MAX_POINTS = 12


@dataclass(frozen=True)
class TrendPoint:
    """Agreement with the consensus over one bucket of consecutive shared pairs."""

    items: int
    agreement: float
    first: datetime
    last: datetime


@dataclass(frozen=True)
class Person:
    """One annotator's figures in one test set."""

    user_id: int
    username: str
    is_import: bool
    judgments: int
    graded: int
    cant_tell: int
    skipped: int
    median_active_seconds: float | None
    grade_counts: list[int]
    consensus: ConsensusAgreement
    trend: list[TrendPoint]
    bucket_size: int
    # True on a blind set's rows for an annotator: agreement and shared pairs withheld.
    withheld: bool = False

    @property
    def max_grade_count(self) -> int:
        """Tallest bar of the grade distribution (at least 1, for scaling)."""
        return max([*self.grade_counts, 1])


@dataclass(frozen=True)
class _Row:
    annotator_id: int
    query_id: int
    chunk_id: int
    status: str
    grade: int | None
    active_ms: int
    updated_at: datetime
    via: str


def _rows(test_set: TestSet) -> list[_Row]:
    stmt = sa.select(
        Judgment.annotator_id,
        Judgment.query_id,
        Judgment.chunk_id,
        Judgment.status,
        Judgment.grade,
        Judgment.active_ms,
        Judgment.updated_at,
        Judgment.via,
    ).where(Judgment.test_set_id == test_set.id)
    return [_Row(*row) for row in db.session.execute(stmt)]


def bucket_size(shared: int) -> int:
    """Pairs per trend point: at least MIN_BUCKET, and few enough for MAX_POINTS points."""
    return max(MIN_BUCKET, math.ceil(shared / MAX_POINTS))


def _trend(
    username: str,
    mine: list[_Row],
    by_item: dict[tuple[int, int], dict[str, int]],
    policy: str,
) -> tuple[list[TrendPoint], int]:
    """Consensus agreement per bucket of the annotator's shared pairs, oldest first."""
    shared = sorted(
        (
            row
            for row in mine
            if row.status == "graded"
            and row.via != "drilldown"
            and len(by_item.get((row.query_id, row.chunk_id), {})) >= 2
        ),
        key=lambda row: (row.updated_at, row.query_id, row.chunk_id),
    )
    size = bucket_size(len(shared))
    points: list[TrendPoint] = []
    for start in range(0, len(shared), size):
        bucket = shared[start : start + size]
        found: list[Rating] = [
            ((row.query_id, row.chunk_id), rater, grade)
            for row in bucket
            for rater, grade in by_item[(row.query_id, row.chunk_id)].items()
        ]
        result = consensus_agreement(found, username, policy)
        if result.agreement is not None:
            points.append(
                TrendPoint(
                    result.items, result.agreement, bucket[0].updated_at, bucket[-1].updated_at
                )
            )
    return points, size


def people(
    test_set: TestSet, *, include_imports: bool = False, only_user_id: int | None = None
) -> list[Person]:
    """Every member and everyone who judged here (import sources only when asked), by name.

    `only_user_id` keeps one person's row (what an annotator sees of this page); the consensus
    is still that of everyone else.
    """
    rows = _rows(test_set)
    member_ids = set(
        db.session.scalars(
            sa.select(TestSetMember.user_id).where(TestSetMember.test_set_id == test_set.id)
        )
    )
    ids = member_ids | {row.annotator_id for row in rows}
    users = {u.id: u for u in db.session.scalars(sa.select(User).where(User.id.in_(ids)))}
    raters = {uid for uid, u in users.items() if include_imports or u.role != IMPORT_ROLE}
    by_item: dict[tuple[int, int], dict[str, int]] = defaultdict(dict)
    mine: dict[int, list[_Row]] = defaultdict(list)
    for row in rows:
        if row.annotator_id not in raters:
            continue
        mine[row.annotator_id].append(row)
        # A drill-down grade (a correction beside the current grades) is no independent pass:
        # it counts in volume and grades but, as on the Agreement page, is no rating.
        if row.status == "graded" and row.grade is not None and row.via != "drilldown":
            by_item[(row.query_id, row.chunk_id)][users[row.annotator_id].username] = row.grade
    everyone: list[Rating] = [
        (item, rater, grade)
        for item, graders in by_item.items()
        for rater, grade in graders.items()
    ]
    out = []
    for uid in sorted(raters, key=lambda i: users[i].username):
        if only_user_id is not None and uid != only_user_id:
            continue
        user = users[uid]
        own = mine.get(uid, [])
        counts = [0] * (test_set.scale_max + 1)
        for row in own:
            if row.status == "graded" and row.grade is not None:
                counts[row.grade] += 1
        timed = [row.active_ms / 1000 for row in own if row.active_ms > 0]
        trend, size = _trend(user.username, own, by_item, test_set.aggregation)
        out.append(
            Person(
                user_id=uid,
                username=user.username,
                is_import=user.role == IMPORT_ROLE,
                judgments=len(own),
                graded=sum(1 for row in own if row.status == "graded"),
                cant_tell=sum(1 for row in own if row.status == "cant_tell"),
                skipped=sum(1 for row in own if row.status == "skipped"),
                median_active_seconds=statistics.median(timed) if timed else None,
                grade_counts=counts,
                consensus=consensus_agreement(everyone, user.username, test_set.aggregation),
                trend=trend,
                bucket_size=size,
            )
        )
    return out


PEOPLE_FIELDS = (
    "annotator",
    "import_source",
    "judgments",
    "graded",
    "cant_tell",
    "skipped",
    "median_active_seconds",
    "shared_pairs",
    "agreement_with_others",
    "mean_distance",
)


def without_agreement(persons: list[Person]) -> list[Person]:
    """The rows with their agreement with the others and their shared pairs withheld (None, no
    trend): on a blind set they are the others' grades summed up, and re-grading one pair while
    watching them would tell an annotator another's grade of it; the count of shared pairs
    tells which of their pairs the others graded, and when. Volume, speed and grades stay."""
    return [
        replace(
            p,
            consensus=ConsensusAgreement(p.consensus.rater, 0, None, None),
            trend=[],
            withheld=True,
        )
        for p in persons
    ]


def people_records(persons: list[Person]) -> list[dict[str, object]]:
    """The People table as records (the JSON twin): the page's figures, grade counts by grade."""
    return [
        {
            "annotator": p.username,
            "import_source": p.is_import,
            "judgments": p.judgments,
            "graded": p.graded,
            "cant_tell": p.cant_tell,
            "skipped": p.skipped,
            "median_active_seconds": p.median_active_seconds,
            "shared_pairs": None if p.withheld else p.consensus.items,
            "agreement_with_others": p.consensus.agreement,
            "mean_distance": p.consensus.mean_abs_diff,
            "grade_counts": {str(grade): count for grade, count in enumerate(p.grade_counts)},
        }
        for p in persons
    ]


def people_csv(persons: list[Person], scale_max: int) -> str:
    """The People table as CSV: one row per person, a `grade_N` column per grade."""
    out = io.StringIO()
    grades = [f"grade_{g}" for g in range(scale_max + 1)]
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([*PEOPLE_FIELDS, *grades])
    for record in people_records(persons):
        counts = record.pop("grade_counts")
        assert isinstance(counts, dict)
        cells = [safe_value(record[f]) for f in PEOPLE_FIELDS]
        writer.writerow([*cells, *(counts.get(str(g), 0) for g in range(scale_max + 1))])
    return out.getvalue()
