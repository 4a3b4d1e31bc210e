"""One username rule for `flask user create` and the admin's Users page: the same names are
accepted, stored alike and refused with the same reason by both (they used to differ: the
command took spaces, accents and `<`, the page refused surrounding spaces, and neither knew
`Alice` from `alice`)."""

from __future__ import annotations

import sqlalchemy as sa
from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner

from ndcg_labeler.extensions import db
from ndcg_labeler.models import User

PASSWORD = "quartz-lantern-meadow-71"

# (as typed, as stored)
GOOD = [
    ("alice", "alice"),
    ("Bob.Smith", "Bob.Smith"),
    ("r2-d2", "r2-d2"),
    ("first_last", "first_last"),
    ("ann@example.org", "ann@example.org"),
    ("q", "q"),
    ("x" * 80, "x" * 80),
    ("  padded  ", "padded"),
]

# (as typed, part of the reason given)
BAD = [
    ("", "must not be empty"),
    ("   ", "must not be empty"),
    ("y" * 81, "at most 80 characters"),
    ("import:trec", "reserved for imported qrels"),
    ("Import:TREC", "reserved for imported qrels"),
    ("bob smith", "letters A–Z"),
    ("józef", "letters A–Z"),
    ("tab\tname", "letters A–Z"),
    ("semi;colon", "letters A–Z"),
    ("slash/name", "letters A–Z"),
    ("colon:name", "letters A–Z"),
    ("<script>", "letters A–Z"),
    ("ALICE", "already exists"),  # alice (GOOD, created first) in other letters
]


def _usernames(app: Flask) -> set[str]:
    with app.app_context():
        return set(db.session.scalars(sa.select(User.username)))


def _create_by_command(runner: FlaskCliRunner, name: str) -> tuple[bool, str]:
    result = runner.invoke(args=["user", "create", name], input=f"{PASSWORD}\n")
    return result.exit_code == 0, result.output


def _create_on_the_page(client: FlaskClient, name: str) -> tuple[bool, str]:
    form = {"username": name, "role": "annotator", "password": PASSWORD}
    response = client.post("/users/", data=form)
    return response.status_code == 302, response.get_data(as_text=True)


def test_the_command_follows_the_username_rule(app: Flask, runner: FlaskCliRunner) -> None:
    before = _usernames(app)
    for name, _ in GOOD:
        created, output = _create_by_command(runner, name)
        assert created, (name, output)
    assert _usernames(app) - before == {stored for _, stored in GOOD}
    for name, reason in BAD:
        created, output = _create_by_command(runner, name)
        assert not created and reason in output, (name, output)
        assert output.startswith("Error: ") and output.count("\n") == 1  # one line
    assert _usernames(app) - before == {stored for _, stored in GOOD}


def test_the_users_page_follows_the_username_rule(app: Flask, as_admin: FlaskClient) -> None:
    before = _usernames(app)
    for name, _ in GOOD:
        created, page = _create_on_the_page(as_admin, name)
        assert created, (name, page)
    assert _usernames(app) - before == {stored for _, stored in GOOD}
    for name, reason in BAD:
        created, page = _create_on_the_page(as_admin, name)
        assert not created and reason in page, (name, page)
        assert "<script>" not in page.split("<h2>New user</h2>")[1]  # the name is escaped
    assert _usernames(app) - before == {stored for _, stored in GOOD}
