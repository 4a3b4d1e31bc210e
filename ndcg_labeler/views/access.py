"""Who may see what: roles and test-set membership, checked by every view."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar

import sqlalchemy as sa
from flask import abort
from flask_login import current_user

from ndcg_labeler.extensions import db
from ndcg_labeler.models import TestSet, TestSetMember, User

F = TypeVar("F", bound=Callable[..., Any])


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


def get_test_set_or_404(test_set_id: int) -> TestSet:
    """The test set, or 404 when it does not exist or the current user may not see it."""
    test_set = db.session.get(TestSet, test_set_id)
    # 404 rather than 403 so that ids of hidden test sets are not confirmed.
    if test_set is None or not can_view(current_user, test_set):
        abort(404)
    return test_set


def admin_required(view: F) -> F:
    """Decorator: 403 unless the logged-in user is an admin (login is checked globally)."""

    @wraps(view)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        if not current_user.is_authenticated:
            abort(401)
        if not current_user.is_admin:
            abort(403)
        return view(*args, **kwargs)

    return wrapped  # type: ignore[return-value]


def grades_visible(user: User, test_set: TestSet) -> bool:
    """May this user see per-pair grades (drill-downs, qrels)?

    With several annotators per pair, judging is blind: an annotator who could read the grades
    of pairs still waiting in their own queue would be anchored by them. Admins always may.
    """
    return bool(user.is_authenticated) and (user.is_admin or test_set.judgments_per_pair == 1)


def require_grades_visible(test_set: TestSet) -> None:
    """403 with the reason when the current user may not see per-pair grades."""
    if not grades_visible(current_user, test_set):
        abort(
            403,
            description=(
                "This test set is judged blind by several annotators per pair, so per-pair "
                "grades are shown to admins only."
            ),
        )
