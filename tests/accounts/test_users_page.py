"""The Users page at a team's size: one page at a time, found by part of a name."""

from __future__ import annotations

import sqlalchemy as sa
from flask import Flask
from flask.testing import FlaskClient

from ndcg_labeler.extensions import db
from ndcg_labeler.models import User
from tests.factory import PASSWORD_HASH


def _people(app: Flask, count: int) -> None:
    """`count` annotators named person-0001 ... (one insert: a thousand take no time)."""
    with app.app_context():
        rows = [
            {"username": f"person-{i:04d}", "role": "annotator", "active": True,
             "password_hash": PASSWORD_HASH}
            for i in range(1, count + 1)
        ]  # fmt: skip
        db.session.execute(sa.insert(User), rows)
        db.session.commit()


def _rows(page: str) -> list[str]:
    return [line.split("</th>")[0].split(">")[-1] for line in page.split('<th scope="row">')[1:]]


def test_a_thousand_people_come_fifty_to_a_page(
    app: Flask, as_admin: FlaskClient, admin_id: int
) -> None:
    _people(app, 1000)
    first = as_admin.get("/users/").get_data(as_text=True)
    assert "1001 people" in first
    assert _rows(first)[:3] == ["admin", "person-0001", "person-0002"]
    assert len(_rows(first)) == 50
    assert "Page 1 of 21" in first and "/users/?page=2" in first
    last = as_admin.get("/users/?page=21").get_data(as_text=True)
    assert _rows(last) == ["person-1000"]
    # The form to add someone is still on every page.
    assert 'value="Create user"' in last


def test_people_are_found_by_part_of_their_name(
    app: Flask, as_admin: FlaskClient, admin_id: int
) -> None:
    _people(app, 120)
    found = as_admin.get("/users/?q=SON-011").get_data(as_text=True)
    assert _rows(found) == [f"person-{i:04d}" for i in range(110, 120)]
    assert "10 of 121 people match “SON-011”" in found
    # The pager keeps the search.
    many = as_admin.get("/users/?q=person").get_data(as_text=True)
    assert "/users/?q=person&amp;page=2" in many
    none = as_admin.get("/users/?q=nobody").get_data(as_text=True)
    assert "No one’s name contains “nobody”." in none


def _sign_in_people(app: Flask) -> None:
    """sso-only (no password), both (a password and a provider's subject), pw-only."""
    with app.app_context():
        db.session.add_all(
            [
                User(username="sso-only", role="annotator", active=True,
                     oidc_issuer="https://idp.example", oidc_subject="s-1"),
                User(username="both", role="annotator", active=True, password_hash=PASSWORD_HASH,
                     oidc_issuer="https://idp.example", oidc_subject="s-2"),
                User(username="pw-only", role="annotator", active=True,
                     password_hash=PASSWORD_HASH),
            ]
        )  # fmt: skip
        db.session.commit()


def _sign_in_cells(page: str) -> dict[str, str]:
    """username -> the text of its Sign-in cell (the column after Active)."""
    found = {}
    for row in page.split('<th scope="row">')[1:]:
        name = row.split("</th>")[0]
        cells = [cell.split("</td>")[0] for cell in row.split("<td>")[1:]]
        found[name] = cells[2]
    return found


def test_the_page_says_who_signs_in_by_sso(
    app: Flask, as_admin: FlaskClient, admin_id: int
) -> None:
    _sign_in_people(app)
    page = as_admin.get("/users/").get_data(as_text=True)
    assert '<th scope="col">Sign-in</th>' in page
    assert _sign_in_cells(page) == {
        "admin": "password",
        "both": "password and single sign-on",
        "pw-only": "password",
        "sso-only": "single sign-on",
    }


def test_the_cli_list_json_has_the_sign_in_beside_the_old_keys(app: Flask, admin_id: int) -> None:
    import json

    _sign_in_people(app)
    done = app.test_cli_runner().invoke(args=["user", "list", "--json"])
    assert done.exit_code == 0, done.output
    people = {p["username"]: p for p in json.loads(done.output)}
    assert {name: p["sign_in"] for name, p in people.items()} == {
        "admin": "password",
        "both": "password+sso",
        "pw-only": "password",
        "sso-only": "sso",
    }
    # The keys that were there stay, with their meaning.
    assert (people["sso-only"]["password"], people["sso-only"]["sso"]) == (False, True)
    assert people["sso-only"]["sso_issuer"] == "https://idp.example"
    assert people["pw-only"]["sso_issuer"] is None
    table = app.test_cli_runner().invoke(args=["user", "list"]).output.splitlines()
    rows = {line.split()[0]: line.split()[3] for line in table[1:]}
    assert rows == {"admin": "password", "both": "password+sso", "pw-only": "password",
                    "sso-only": "sso"}  # fmt: skip
