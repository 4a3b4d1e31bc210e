"""Account rules live in services.accounts: self-demotion, password changes, authentication."""

from __future__ import annotations

import pytest
from flask import Flask

from ndcg_labeler.extensions import db
from ndcg_labeler.models import User
from ndcg_labeler.services import ServiceError, accounts
from tests.factory import PASSWORD, make_user


def _user(app: Flask, name: str, role: str) -> User:
    return db.session.get_one(User, make_user(app, name, role))


def test_an_admin_cannot_demote_or_deactivate_themself(app: Flask) -> None:
    with app.app_context():
        admin = _user(app, "root", "admin")
        with pytest.raises(ServiceError, match="your own admin rights"):
            accounts.update_user(admin, admin, role="annotator", active=True)
        with pytest.raises(ServiceError, match="deactivate yourself"):
            accounts.update_user(admin, admin, role="admin", active=False)
        db.session.refresh(admin)
        assert (admin.role, admin.active) == ("admin", True)


def test_an_admin_changes_another_user(app: Flask) -> None:
    with app.app_context():
        admin, ann = _user(app, "root", "admin"), _user(app, "ann", "annotator")
        accounts.update_user(admin, ann, role="admin", active=False, password="new-secret-1")
        db.session.refresh(ann)
        assert (ann.role, ann.active, ann.check_password("new-secret-1")) == ("admin", False, True)
        with pytest.raises(ServiceError, match="at least 10"):
            accounts.update_user(admin, ann, role="admin", active=True, password="short")


def test_own_password_change_checks_the_current_one(app: Flask) -> None:
    with app.app_context():
        ann = _user(app, "ann", "annotator")
        with pytest.raises(ServiceError, match="not your current password"):
            accounts.change_own_password(ann, "wrong", "another-pw-tulip-1")
        accounts.change_own_password(ann, PASSWORD, "another-pw-tulip-1")
        assert accounts.authenticate("ann", "another-pw-tulip-1") is not None
        assert accounts.authenticate("ann", PASSWORD) is None
        assert accounts.authenticate("nobody", PASSWORD) is None


def test_a_person_cannot_take_an_import_sources_name(app: Flask) -> None:
    # `import:NAME` is where qrels imported from source NAME are kept: a person by that name
    # would have been handed those imported grades as their own (counted as a human answer).
    with app.app_context():
        with pytest.raises(ServiceError, match="reserved for imported qrels"):
            accounts.create_user("import:bm25", "correct-horse-battery-77")
        assert accounts.get_by_username("import:bm25") is None


def test_imports_never_land_on_a_person(app: Flask) -> None:
    # A person made before the rule above, under an import source's name.
    make_user(app, "import:legacy")
    with app.app_context(), pytest.raises(ServiceError, match="is a person"):
        accounts.import_source("legacy")


def test_a_username_fits_its_column(app: Flask) -> None:
    # The column holds 80 characters: PostgreSQL refused a longer name with a DataError.
    with app.app_context():
        with pytest.raises(ServiceError, match="at most 80 characters"):
            accounts.create_user("a" * 81, "correct-horse-battery-77")
        assert accounts.create_user("a" * 80, "correct-horse-battery-77").username == "a" * 80


def test_the_users_page_says_which_letters_a_name_may_have(app: Flask, as_admin) -> None:
    # "jürgen" was refused with "Use letters, digits …": ü is a letter, so the admin could
    # not tell what was wrong. Only A–Z are allowed; the message now says so.
    page = as_admin.post(
        "/users/",
        data={"username": "jürgen", "password": "correct-horse-battery-77", "role": "annotator"},
    ).get_data(as_text=True)
    assert "Use the letters A–Z (no accents), digits and _ . @ - only." in page
    with app.app_context():
        assert accounts.get_by_username("jürgen") is None
