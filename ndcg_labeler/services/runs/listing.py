"""Lists of runs that do not grow with the run count: search, tags, sorting and pages in SQL.

A list reads only its page's rows. Sorting by quality uses `Run.mean_ndcg`, the mean NDCG@10
the live engine stores whenever it scores a run under the default options, so that neither
the sort nor the overview's "best runs" scores every run on each request.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.orm import selectinload

from ndcg_labeler import sqlite
from ndcg_labeler.extensions import db
from ndcg_labeler.models import Run, RunTag, TestSet, User
from ndcg_labeler.services import ServiceError, audit
from ndcg_labeler.services._db import bump_versions, transaction

# Orders a list offers (CLI --sort, API and page ?sort=); "oldest" is the order lists had.
SORTS = ("oldest", "newest", "name", "best", "worst", "entries")
MAX_LIMIT = 500
MAX_TAG = 64
MAX_TAGS = 20
_TAG = re.compile(r"^[\w.:+-]{1,64}$")


@dataclass(frozen=True)
class RunFilter:
    """Which runs a list shows and in what order (None for archived: archived or not)."""

    search: str = ""
    tag: str = ""
    archived: bool | None = None
    pinned: bool | None = None
    sort: str = "oldest"
    limit: int = 50
    offset: int = 0

    def checked(self) -> RunFilter:
        """Self, after refusing values a user could have typed wrong."""
        if self.sort not in SORTS:
            raise ServiceError(f"sort must be one of {', '.join(SORTS)}, not '{self.sort}'")
        if not 1 <= self.limit <= MAX_LIMIT:
            raise ServiceError(f"limit must be a whole number from 1 to {MAX_LIMIT}")
        if self.offset < 0:
            raise ServiceError("offset must be a whole number of at least 0")
        return self


@dataclass(frozen=True)
class RunPage:
    """One page of a run list, and how many runs the whole list has."""

    runs: list[Run]
    total: int
    filter: RunFilter

    @property
    def has_next(self) -> bool:
        """More runs after this page."""
        return self.filter.offset + len(self.runs) < self.total


def _order(sort: str) -> list[sa.ColumnElement[object]]:
    """ORDER BY terms for a sort (the id last, so that pages never overlap)."""
    unscored = Run.mean_ndcg.is_(None)  # runs never scored yet go last in either direction
    return {
        "oldest": [Run.uploaded_at, Run.id],
        "newest": [Run.uploaded_at.desc(), Run.id.desc()],
        "name": [Run.name, Run.id],
        "best": [unscored, Run.mean_ndcg.desc(), Run.id.desc()],
        "worst": [unscored, Run.mean_ndcg, Run.id],
        "entries": [Run.num_entries.desc(), Run.id],
    }[sort]


def _where(test_set: TestSet, found: RunFilter) -> list[sa.ColumnElement[bool]]:
    """The WHERE terms of a filter."""
    terms: list[sa.ColumnElement[bool]] = [Run.test_set_id == test_set.id]
    text = found.search.strip().lower()
    if text:
        terms.append(
            sa.or_(
                sqlite.lower(Run.name).contains(text, autoescape=True),
                sqlite.lower(Run.notes).contains(text, autoescape=True),
            )
        )
    if found.tag.strip():
        tagged = sa.select(RunTag.run_id).where(RunTag.tag == found.tag.strip())
        terms.append(Run.id.in_(tagged))
    if found.archived is not None:
        terms.append(Run.kept_depth.is_not(None) if found.archived else Run.kept_depth.is_(None))
    if found.pinned is not None:
        terms.append(Run.pinned.is_(found.pinned))
    return terms


def find_runs(test_set: TestSet, wanted: RunFilter | None = None) -> RunPage:
    """One page of the test set's runs matching `wanted`, with the list's total."""
    wanted = (wanted or RunFilter()).checked()
    terms = _where(test_set, wanted)
    total = db.session.scalar(sa.select(sa.func.count(Run.id)).where(*terms)) or 0
    stmt = (
        sa.select(Run)
        .where(*terms)
        .order_by(*_order(wanted.sort))
        .limit(wanted.limit)
        .offset(wanted.offset)
        .options(selectinload(Run.uploader), selectinload(Run.tags))
    )
    return RunPage(list(db.session.scalars(stmt)), int(total), wanted)


def clean_tags(tags: Iterable[str]) -> list[str]:
    """Tags as stored: stripped, unique, sorted; a ServiceError for one that is not a word."""
    out = sorted({tag.strip() for tag in tags if tag.strip()})
    for tag in out:
        if not _TAG.match(tag):
            raise ServiceError(
                f"a tag is 1 to {MAX_TAG} letters, digits or . : + - _ (no spaces), not '{tag}'"
            )
    if len(out) > MAX_TAGS:
        raise ServiceError(f"a run has at most {MAX_TAGS} tags")
    return out


def mark_run(
    run: Run,
    *,
    add: Iterable[str] = (),
    remove: Iterable[str] = (),
    pinned: bool | None = None,
    actor: User | None = None,
) -> Run:
    """Add and remove tags of a run and pin or unpin it (audited as done by `actor`)."""
    adding, removing = clean_tags(add), set(clean_tags(remove))
    kept = [tag for tag in run.tag_names if tag not in removing]
    tags = clean_tags([*kept, *adding])
    with transaction():
        have = {tag.tag: tag for tag in run.tags}
        for name in set(have) - set(tags):
            run.tags.remove(have[name])
        for name in tags:
            if name not in have:
                run.tags.append(RunTag(tag=name))
        if pinned is not None:
            run.pinned = pinned
        audit.record(
            actor,
            "run.mark",
            "run",
            run.id,
            test_set_id=run.test_set_id,
            name=run.name,
            tags=tags,
            pinned=run.pinned,
        )
        bump_versions(run.test_set_id, runs=True)
    return run


def test_set_tags(test_set: TestSet) -> list[str]:
    """Every tag used by a run of the test set (for the list's tag filter)."""
    stmt = (
        sa.select(RunTag.tag)
        .join(Run, Run.id == RunTag.run_id)
        .where(Run.test_set_id == test_set.id)
        .distinct()
        .order_by(RunTag.tag)
    )
    return list(db.session.scalars(stmt))
