"""HTTP side of access: load a test set or 404, admin-only views, blind grades as 403."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar

from flask import abort
from flask_login import current_user

from ndcg_labeler.extensions import db
from ndcg_labeler.models import TestSet
from ndcg_labeler.services import accounts

F = TypeVar("F", bound=Callable[..., Any])
ADMINS_ONLY = "This page is for admins: it changes or shows what only admins manage."


def get_test_set_or_404(test_set_id: int) -> TestSet:
    """The test set, or 404 when it does not exist or the current user may not see it."""
    test_set = db.session.get(TestSet, test_set_id)
    # 404 rather than 403 so that ids of hidden test sets are not confirmed.
    if test_set is None or not accounts.can_view(current_user, test_set):
        abort(404)
    return test_set


def admin_required(view: F) -> F:
    """Decorator: 403 unless the logged-in user is an admin (login is checked globally)."""

    @wraps(view)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        if not current_user.is_authenticated:
            abort(401)
        if not current_user.is_admin:
            abort(403, description=ADMINS_ONLY)
        return view(*args, **kwargs)

    return wrapped  # type: ignore[return-value]


def require_grades_visible(test_set: TestSet) -> None:
    """403 with the reason when the current user may not see per-pair grades."""
    if not accounts.grades_visible(current_user, test_set):
        abort(
            403,
            description=(
                "This test set is judged blind by several annotators per pair, so per-pair "
                "grades are shown to admins only."
            ),
        )


def may_see_grades(test_set: TestSet) -> bool:
    """For templates: link to per-pair grades (drill-downs, qrels) only for those who may."""
    return accounts.grades_visible(current_user, test_set)


def ways_on() -> list[tuple[str, str]]:
    """(text, url) of the places an error page offers: the test set the failed address was
    in (when this person may open it) and its labeling, then the list of test sets."""
    from flask import request, url_for

    links: list[tuple[str, str]] = []
    test_set_id = (request.view_args or {}).get("test_set_id")
    if isinstance(test_set_id, int) and current_user.is_authenticated:
        test_set = db.session.get(TestSet, test_set_id)
        if test_set is not None and accounts.can_view(current_user, test_set):
            ids = {"test_set_id": test_set.id}
            links.append((f"{test_set.name}: overview", url_for("testsets.show", **ids)))
            links.append((f"{test_set.name}: label pairs", url_for("labeling.next", **ids)))
    links.append(("All your test sets", url_for("main.index")))
    return links
