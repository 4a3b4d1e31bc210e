"""Real names for the API examples on a person's token pages: their own test set and runs."""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Run, TestSet, User, aware

from .permissions import visible_test_sets


@dataclass(frozen=True)
class ApiExample:
    """A test set the person may open (one with runs when there is one) and two of its runs."""

    test_set: str | None
    runs: tuple[str, ...]


def api_example(user: User) -> ApiExample:
    """Names to put in the example commands: the test set in use and its first two runs;
    placeholders are used where none exists.

    The set in use is the person's most recently active one (its newest run upload, else its
    creation), a demo set only when there is no other: the examples should work on the data
    the person came to evaluate, not on the demo that happens to sort first.
    """
    test_sets = visible_test_sets(user)
    if not test_sets:
        return ApiExample(None, ())
    uploads = dict(
        db.session.execute(
            sa.select(Run.test_set_id, sa.func.max(Run.uploaded_at))
            .where(Run.test_set_id.in_([t.id for t in test_sets]))
            .group_by(Run.test_set_id)
        ).all()
    )

    def recency(test_set: TestSet) -> tuple[bool, float, int]:
        active = aware(uploads.get(test_set.id) or test_set.created_at)
        return (test_set.is_demo, -active.timestamp(), -test_set.id)

    chosen = min(test_sets, key=recency)
    runs = tuple(
        db.session.scalars(
            sa.select(Run.name)
            .where(Run.test_set_id == chosen.id)
            .order_by(Run.uploaded_at, Run.id)
            .limit(2)
        )
    )
    return ApiExample(chosen.name, runs)
