"""Who may see what: roles and test-set membership (the rules; views turn them into 403/404)."""

from __future__ import annotations

import sqlalchemy as sa

from ndcg_labeler.extensions import db
from ndcg_labeler.models import TestSet, TestSetMember, User


def is_member(user: User, test_set_id: int) -> bool:
    """True when the user was given the test set to label."""
    return (
        db.session.get(TestSetMember, {"test_set_id": test_set_id, "user_id": user.id}) is not None
    )


def can_view(user: User, test_set: TestSet) -> bool:
    """Admins see every test set; annotators only those they were given."""
    return bool(user.is_authenticated) and (user.is_admin or is_member(user, test_set.id))


def visible_test_sets(user: User) -> list[TestSet]:
    """The test sets this user may open, by name."""
    stmt = sa.select(TestSet).order_by(TestSet.name)
    if not user.is_admin:
        stmt = stmt.join(TestSetMember).where(TestSetMember.user_id == user.id)
    return list(db.session.scalars(stmt))


def grades_visible(user: User, test_set: TestSet) -> bool:
    """May this user see per-pair grades (drill-downs, qrels)?

    With several annotators per pair, judging is blind: an annotator who could read the grades
    of pairs still waiting in their own queue would be anchored by them. Admins always may.
    """
    return bool(user.is_authenticated) and (user.is_admin or test_set.judgments_per_pair == 1)
