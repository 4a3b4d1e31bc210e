"""Real names for the API examples on a person's token pages: their own test set and runs."""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Run, User

from .permissions import visible_test_sets


@dataclass(frozen=True)
class ApiExample:
    """A test set the person may open (one with runs when there is one) and two of its runs."""

    test_set: str | None
    runs: tuple[str, ...]


def api_example(user: User) -> ApiExample:
    """Names to put in the example commands; placeholders are used where none exists."""
    test_sets = visible_test_sets(user)
    best: tuple[str, ...] = ()
    chosen = test_sets[0].name if test_sets else None
    for test_set in test_sets:
        names = tuple(
            db.session.scalars(
                sa.select(Run.name)
                .where(Run.test_set_id == test_set.id)
                .order_by(Run.uploaded_at, Run.id)
                .limit(2)
            )
        )
        if len(names) > len(best):
            chosen, best = test_set.name, names
            if len(best) == 2:
                break
    return ApiExample(chosen, best)
