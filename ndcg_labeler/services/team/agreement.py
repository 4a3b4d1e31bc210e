"""Inter-annotator agreement of a test set: for the whole set, per query and per two annotators.

Raters are the people who graded (import sources only when asked: an imported qrels file is
prior evidence, often already aggregated, not an independent pass). Grades given in a run's
drill-down (Judgment.via "drilldown", e.g. an admin's correction) score but are no rating.
Only `graded` judgments count: skips and "can't tell" answers carry no grade. An item is a
query–chunk pair; a rater is a username. The figures come from the pure module scoring.agreement.
"""

from __future__ import annotations

import csv
import io
import itertools
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from ndcg_labeler.extensions import db
from ndcg_labeler.formats import natural_key, safe_value
from ndcg_labeler.models import Judgment, Query, TestSet, User
from ndcg_labeler.models.users import IMPORT_ROLE
from ndcg_labeler.scoring import (
    AgreementSummary,
    Rating,
    agreement_summary,
    fleiss_kappa,
    krippendorff_alpha_ordinal,
    percent_agreement,
)

QUERY_SORTS = ("qid", "alpha", "percent", "pairs")
# The columns of the two tables as CSV: the keys the agreement JSON gives their rows.
PAIR_FIELDS = ("a", "b", "n", "percent", "kappa_quadratic", "kappa_linear")
QUERY_FIELDS = ("qid", "text", "raters", "pairs_with_2plus", "percent", "fleiss", "alpha")
AGREEMENT_TABLES = ("pairs", "queries")


@dataclass(frozen=True)
class AnnotatorPair:
    """Two annotators over the pairs both graded: exact agreement and Cohen's kappas."""

    a: str
    b: str
    n: int
    percent: float | None
    kappa_quadratic: float | None
    kappa_linear: float | None


@dataclass(frozen=True)
class QueryAgreement:
    """Agreement among the annotators of one query's pairs (None where undefined)."""

    query_id: int
    qid: str
    text: str
    raters: int
    pairs_with_2plus: int
    percent: float | None
    fleiss: float | None
    alpha: float | None

    def record(self) -> dict[str, Any]:
        """The row as the agreement JSON gives it (the database id left out)."""
        return {name: getattr(self, name) for name in QUERY_FIELDS}


@dataclass(frozen=True)
class AgreementReport:
    """Every agreement figure of a test set, whole and broken down."""

    include_imports: bool
    ratings: int
    raters: list[str]
    summary: AgreementSummary
    annotator_pairs: list[AnnotatorPair]
    queries: list[QueryAgreement]
    queries_without_overlap: int

    def table_csv(self, table: str, sort: str = "qid") -> str:
        """One table of the page as CSV, header row first: "pairs" (each two annotators) or
        "queries" (each query, in `sort`'s order); undefined figures are empty cells."""
        if table == "pairs":
            fields, records = PAIR_FIELDS, [vars(pair) for pair in self.annotator_pairs]
        elif table == "queries":
            fields = QUERY_FIELDS
            records = [row.record() for row in sort_queries(self.queries, sort)]
        else:
            raise ValueError(f"table must be one of {', '.join(AGREEMENT_TABLES)}, not {table!r}")
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(fields)
        for record in records:
            # Names, qids and query texts are anyone's text: defused against CSV injection.
            writer.writerow([safe_value(record[name]) for name in fields])
        return out.getvalue()


def ratings(test_set: TestSet, *, include_imports: bool = False) -> list[tuple[int, int, str, int]]:
    """(query_id, chunk_id, username, grade) of every graded judgment of the test set."""
    stmt = (
        sa.select(Judgment.query_id, Judgment.chunk_id, User.username, Judgment.grade)
        .join(User, User.id == Judgment.annotator_id)
        .where(
            Judgment.test_set_id == test_set.id,
            Judgment.status == "graded",
            # A drill-down grade is a correction made beside the run's ranking and the current
            # grades, not an independent pass: it scores, but makes nobody a rater.
            Judgment.via != "drilldown",
        )
    )
    if not include_imports:
        stmt = stmt.where(User.role != IMPORT_ROLE)
    return [(q, c, name, int(g)) for q, c, name, g in db.session.execute(stmt)]


def as_ratings(rows: list[tuple[int, int, str, int]]) -> list[Rating]:
    """Rows as the pure module's (item, rater, grade) with item = (query_id, chunk_id)."""
    return [((q, c), name, grade) for q, c, name, grade in rows]


def agreement_of(test_set: TestSet, *, include_imports: bool = False) -> AgreementSummary:
    """The whole test set's figures (what `flask agreement --json` prints)."""
    rows = ratings(test_set, include_imports=include_imports)
    return agreement_summary(as_ratings(rows), test_set.scale_max)


def _annotator_pairs(summary_: AgreementSummary, found: list[Rating]) -> list[AnnotatorPair]:
    """Cohen's kappas of the summary plus each pair's share of identical grades."""
    by_item: dict[Any, dict[Any, int]] = defaultdict(dict)
    for item, rater, grade in found:
        by_item[item][rater] = grade
    equal: dict[tuple[Any, Any], int] = defaultdict(int)
    for graders in by_item.values():
        for a, b in itertools.combinations(sorted(graders), 2):
            equal[(a, b)] += graders[a] == graders[b]
    return [
        AnnotatorPair(
            a=str(c.a),
            b=str(c.b),
            n=c.n,
            percent=equal[(c.a, c.b)] / c.n if c.n else None,
            kappa_quadratic=c.kappa_quadratic,
            kappa_linear=c.kappa_linear,
        )
        for c in summary_.cohen
    ]


def _query_figures(
    test_set: TestSet, rows: list[tuple[int, int, str, int]]
) -> tuple[list[QueryAgreement], int]:
    """Figures of every query with at least one pair graded twice; and how many have none."""
    per_query: dict[int, list[Rating]] = defaultdict(list)
    for q, c, name, grade in rows:
        per_query[q].append(((q, c), name, grade))
    names = {
        qpk: (qid, text)
        for qpk, qid, text in db.session.execute(
            sa.select(Query.id, Query.qid, Query.text).where(Query.test_set_id == test_set.id)
        )
    }
    scale = test_set.scale_max
    out: list[QueryAgreement] = []
    for qpk, found in per_query.items():
        counts: dict[Any, int] = defaultdict(int)
        for item, _, _ in found:
            counts[item] += 1
        overlap = sum(1 for n in counts.values() if n >= 2)
        if not overlap:
            continue
        qid, text = names.get(qpk, (str(qpk), ""))
        out.append(
            QueryAgreement(
                query_id=qpk,
                qid=qid,
                text=text,
                raters=len({rater for _, rater, _ in found}),
                pairs_with_2plus=overlap,
                percent=percent_agreement(found),
                fleiss=fleiss_kappa(found, scale),
                alpha=krippendorff_alpha_ordinal(found, scale),
            )
        )
    out.sort(key=lambda row: row.qid)
    return out, len(names) - len(out)


def agreement_report(test_set: TestSet, *, include_imports: bool = False) -> AgreementReport:
    """The whole test set's figures, each two annotators' and each query's."""
    rows = ratings(test_set, include_imports=include_imports)
    found = as_ratings(rows)
    whole = agreement_summary(found, test_set.scale_max)
    queries, without = _query_figures(test_set, rows)
    return AgreementReport(
        include_imports=include_imports,
        ratings=len(rows),
        raters=sorted({name for _, _, name, _ in rows}),
        summary=whole,
        annotator_pairs=_annotator_pairs(whole, found),
        queries=queries,
        queries_without_overlap=without,
    )


def sort_queries(queries: list[QueryAgreement], sort: str) -> list[QueryAgreement]:
    """Queries in natural qid order (q2 before q10), or least agreement first (alpha,
    percent), or most overlap first."""
    if sort == "alpha":
        # Undefined alpha (a single grade used throughout) sorts after every number.
        return sorted(queries, key=lambda r: (r.alpha is None, r.alpha or 0.0, natural_key(r.qid)))
    if sort == "percent":
        return sorted(
            queries, key=lambda r: (r.percent is None, r.percent or 0.0, natural_key(r.qid))
        )
    if sort == "pairs":
        return sorted(queries, key=lambda r: (-r.pairs_with_2plus, natural_key(r.qid)))
    return sorted(queries, key=lambda r: natural_key(r.qid))
