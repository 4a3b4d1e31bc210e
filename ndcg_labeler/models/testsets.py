"""Test sets, their members, queries, chunks and the pool of pairs to judge."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, mapped_column, relationship

from ndcg_labeler.extensions import db
from ndcg_labeler.formats import natural_key
from ndcg_labeler.models._common import utcnow

if TYPE_CHECKING:
    from ndcg_labeler.models.runs import Run


class TestSet(db.Model):
    """A graded test set: scale, grade definitions, guidelines and scoring policy."""

    __tablename__ = "test_set"
    __test__ = False  # not a pytest class

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(sa.String(200), unique=True)
    scale_max: Mapped[int] = mapped_column(default=3)
    # [{"name": "Irrelevant", "definition": "..."}, ...] one entry per grade 0..scale_max
    grade_labels: Mapped[list[dict[str, str]]] = mapped_column(sa.JSON)
    guidelines: Mapped[str] = mapped_column(sa.Text, default="")
    aggregation: Mapped[str] = mapped_column(sa.String(16), default="median")
    relevance_threshold: Mapped[int] = mapped_column(default=1)
    judgments_per_pair: Mapped[int] = mapped_column(default=1)
    disagreement_threshold: Mapped[int] = mapped_column(default=2)
    is_demo: Mapped[bool] = mapped_column(default=False)
    # Show machine judges' grades to annotators while they label (off: avoids anchoring).
    show_machine_suggestions: Mapped[bool] = mapped_column(default=False)
    # A run uploaded without a series joins the one its name starts with, up to the first
    # occurrence of this separator ("nightly-2026-11-26" -> "nightly" with "-"); "": off.
    series_separator: Mapped[str] = mapped_column(sa.String(8), default="")
    # Bumped on every grade change / run upload: a cheap "changed since" check for live pages.
    labels_version: Mapped[int] = mapped_column(default=0)
    runs_version: Mapped[int] = mapped_column(default=0)
    created_at: Mapped[datetime] = mapped_column(sa.DateTime(timezone=True), default=utcnow)

    members: Mapped[list[TestSetMember]] = relationship(
        back_populates="test_set", cascade="all, delete-orphan"
    )
    # Read-only collections (rows are written in bulk by services, deleted by ON DELETE CASCADE).
    queries: Mapped[list[Query]] = relationship(
        back_populates="test_set", viewonly=True, order_by="Query.sort_key"
    )
    runs: Mapped[list[Run]] = relationship(
        back_populates="test_set", viewonly=True, order_by="(Run.uploaded_at, Run.id)"
    )

    __table_args__ = (
        sa.CheckConstraint("scale_max IN (3, 4)", name="scale_max"),
        sa.CheckConstraint("judgments_per_pair BETWEEN 1 AND 5", name="judgments_per_pair"),
    )


class TestSetMember(db.Model):
    """An annotator who may label a test set."""

    __tablename__ = "test_set_member"
    __test__ = False

    test_set_id: Mapped[int] = mapped_column(
        sa.ForeignKey("test_set.id", ondelete="CASCADE"), primary_key=True
    )
    user_id: Mapped[int] = mapped_column(
        sa.ForeignKey("user.id", ondelete="CASCADE"), primary_key=True
    )

    test_set: Mapped[TestSet] = relationship(back_populates="members")


# Full-text search of chunks lives outside the models (migration 0010_chunk_search): the FTS5
# table and its shadow tables on SQLite, a GIN expression index on PostgreSQL.
SEARCH_PREFIX = "chunk_fts"
SEARCH_INDEX = "ix_chunk_search"


def search_objects(
    obj: Any, name: str | None, type_: str, reflected: bool, compare_to: Any
) -> bool:
    """Alembic's include_object: leave the search objects out of autogenerate's comparison."""
    return not (name or "").startswith(SEARCH_PREFIX) and name != SEARCH_INDEX


# Byte order on every database ("C" collation on PostgreSQL, whatever the server's locale).
SORT_KEY = sa.Text().with_variant(sa.Text(collation="C"), "postgresql")


def _key_of(column: str) -> Callable[[Any], str]:
    """A column default: the natural sort key of the row's `column`."""

    def default(context: Any) -> str:
        return natural_key(context.get_current_parameters()[column])

    return default


class Query(db.Model):
    """A test query; `qid` is the external id, unique within its test set."""

    __tablename__ = "query"

    id: Mapped[int] = mapped_column(primary_key=True)
    test_set_id: Mapped[int] = mapped_column(
        sa.ForeignKey("test_set.id", ondelete="CASCADE"), index=True
    )
    qid: Mapped[str] = mapped_column(sa.String(200))
    text: Mapped[str] = mapped_column(sa.Text)
    narrative: Mapped[str | None] = mapped_column(sa.Text)
    # natural_key(qid): lists sort q2 before q10. Bulk inserts set it themselves.
    sort_key: Mapped[str] = mapped_column(SORT_KEY, default=_key_of("qid"))

    test_set: Mapped[TestSet] = relationship(back_populates="queries", viewonly=True)

    __table_args__ = (
        sa.UniqueConstraint("test_set_id", "qid"),
        sa.Index("ix_query_natural", "test_set_id", "sort_key"),
    )


class Chunk(db.Model):
    """A retrievable chunk; `text` is None when a pool or qrels named it but no corpus had it."""

    __tablename__ = "chunk"

    id: Mapped[int] = mapped_column(primary_key=True)
    test_set_id: Mapped[int] = mapped_column(
        sa.ForeignKey("test_set.id", ondelete="CASCADE"), index=True
    )
    docid: Mapped[str] = mapped_column(sa.String(300))
    title: Mapped[str | None] = mapped_column(sa.Text)
    text: Mapped[str | None] = mapped_column(sa.Text)
    meta: Mapped[dict[str, Any] | None] = mapped_column("metadata", sa.JSON)
    # natural_key(docid), as for queries.
    sort_key: Mapped[str] = mapped_column(SORT_KEY, default=_key_of("docid"))

    __table_args__ = (
        sa.UniqueConstraint("test_set_id", "docid"),
        sa.Index("ix_chunk_natural", "test_set_id", "sort_key"),
    )


class CorpusSource(db.Model):
    """A corpus file an --only-referenced import read, so that a later run can fetch the chunks
    it left out: `path` (absolute, on `host`) with its size and sha256 to notice a change, or
    None for an uploaded file, which is deleted after the import (nothing to fetch from)."""

    __tablename__ = "corpus_source"

    id: Mapped[int] = mapped_column(primary_key=True)
    test_set_id: Mapped[int] = mapped_column(
        sa.ForeignKey("test_set.id", ondelete="CASCADE"), index=True
    )
    filename: Mapped[str] = mapped_column(sa.String(300))
    path: Mapped[str | None] = mapped_column(sa.String(4096))
    host: Mapped[str] = mapped_column(sa.String(255), default="")
    size: Mapped[int | None] = mapped_column(sa.BigInteger)
    sha256: Mapped[str | None] = mapped_column(sa.String(64))
    # Chunks of the file the test set does not have: set by the import, lowered by each fetch.
    left_out: Mapped[int] = mapped_column(sa.BigInteger, default=0)
    imported_at: Mapped[datetime] = mapped_column(sa.DateTime(timezone=True), default=utcnow)


class Pair(db.Model):
    """A query-chunk pair in the labeling pool; `priority` orders the queue (lower first)."""

    __tablename__ = "pair"

    id: Mapped[int] = mapped_column(primary_key=True)
    test_set_id: Mapped[int] = mapped_column(
        sa.ForeignKey("test_set.id", ondelete="CASCADE"), index=True
    )
    query_id: Mapped[int] = mapped_column(sa.ForeignKey("query.id", ondelete="CASCADE"))
    chunk_id: Mapped[int] = mapped_column(sa.ForeignKey("chunk.id", ondelete="CASCADE"))
    source: Mapped[str] = mapped_column(sa.String(200), default="")
    priority: Mapped[int] = mapped_column(default=0)
    created_at: Mapped[datetime] = mapped_column(sa.DateTime(timezone=True), default=utcnow)
    # Stored counters (services/tallies/counters.py keeps them in the grade's own transaction):
    # people's answers that count toward the target (graded or can't tell, imports excluded),
    # and graded judgments of anyone (imports included).
    answers: Mapped[int] = mapped_column(default=0, server_default="0")
    grades: Mapped[int] = mapped_column(default=0, server_default="0")

    __table_args__ = (
        sa.UniqueConstraint("query_id", "chunk_id"),
        sa.Index("ix_pair_test_set_id_query_id", "test_set_id", "query_id"),
        # The queue: the pair with the fewest answers, then the lowest priority.
        sa.Index("ix_pair_queue", "test_set_id", "answers", "priority", "query_id", "id"),
        # Within a query: its pairs by priority.
        sa.Index("ix_pair_query_id_priority", "query_id", "priority", "id"),
    )


# Pairs are counted per number of answers 0..LEVELS-1, the last bucket meaning "that many or
# more" (the target is at most 5, so "at least the target" is always a sum of whole buckets).
LEVELS = 6


class PoolTally(db.Model):
    """A test set's stored counts: pool pairs per number of answers, graded pairs, grades."""

    __tablename__ = "pool_tally"

    test_set_id: Mapped[int] = mapped_column(
        sa.ForeignKey("test_set.id", ondelete="CASCADE"), primary_key=True
    )
    level_0: Mapped[int] = mapped_column(default=0, server_default="0")
    level_1: Mapped[int] = mapped_column(default=0, server_default="0")
    level_2: Mapped[int] = mapped_column(default=0, server_default="0")
    level_3: Mapped[int] = mapped_column(default=0, server_default="0")
    level_4: Mapped[int] = mapped_column(default=0, server_default="0")
    level_5: Mapped[int] = mapped_column(default=0, server_default="0")
    # Pool pairs with at least one grade (imports included); graded judgments of the test set.
    graded_pairs: Mapped[int] = mapped_column(default=0, server_default="0")
    graded_judgments: Mapped[int] = mapped_column(default=0, server_default="0")
    # Pairs outside the pool with at least one grade (given in place on the drill-down or
    # compare page, or by `flask label`): they count in scores but in no pool figure.
    graded_outside: Mapped[int] = mapped_column(default=0, server_default="0")


class AnnotatorTally(db.Model):
    """One person's stored counts in a test set: the pool pairs they answered, by answers."""

    __tablename__ = "annotator_tally"

    test_set_id: Mapped[int] = mapped_column(
        sa.ForeignKey("test_set.id", ondelete="CASCADE"), primary_key=True
    )
    user_id: Mapped[int] = mapped_column(
        sa.ForeignKey("user.id", ondelete="CASCADE"), primary_key=True
    )
    # mine_k: pool pairs I graded or found can't-tell that now have k answers (5: 5 or more).
    mine_1: Mapped[int] = mapped_column(default=0, server_default="0")
    mine_2: Mapped[int] = mapped_column(default=0, server_default="0")
    mine_3: Mapped[int] = mapped_column(default=0, server_default="0")
    mine_4: Mapped[int] = mapped_column(default=0, server_default="0")
    mine_5: Mapped[int] = mapped_column(default=0, server_default="0")
    # Pool pairs I skipped (the queue offers them again only when nothing else is left).
    skipped: Mapped[int] = mapped_column(default=0, server_default="0")


class FiguresCache(db.Model):
    """Figures of a page (team pages, run comparisons' statistics), stored per test set, kind,
    options and the versions they reflect (services/_figures_cache.py)."""

    __tablename__ = "figures_cache"

    id: Mapped[int] = mapped_column(primary_key=True)
    test_set_id: Mapped[int] = mapped_column(sa.ForeignKey("test_set.id", ondelete="CASCADE"))
    kind: Mapped[str] = mapped_column(sa.String(32))
    options: Mapped[str] = mapped_column(sa.String(200))
    # What the figures reflect: labels_version, runs_version and anything else they depend on.
    version: Mapped[str] = mapped_column(sa.String(200))
    payload: Mapped[str] = mapped_column(sa.Text)
    computed_at: Mapped[datetime] = mapped_column(sa.DateTime(timezone=True), default=utcnow)
    # Set while one process recomputes the figures (a lease; stale after a while).
    refreshing_since: Mapped[datetime | None] = mapped_column(sa.DateTime(timezone=True))

    __table_args__ = (sa.UniqueConstraint("test_set_id", "kind", "options"),)
