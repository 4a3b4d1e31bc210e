"""No user enumeration: a login for an unknown or inactive name costs what a known one does.

Before the dummy hash, a wrong password took a median 5 ms for an unknown name and 166 ms for
an existing one. The throttle is widened here so that every attempt reaches the password check.
"""

from __future__ import annotations

import statistics
import time

from flask import Flask
from flask.testing import FlaskClient

from ndcg_labeler import throttle
from ndcg_labeler.extensions import db
from ndcg_labeler.models import User
from tests.factory import PASSWORD, make_user

TRIES = 15


def _unthrottled(app: Flask) -> None:
    app.config["NDCG_LOGIN_LIMIT"] = "10000 per minute"
    throttle.init_app(app)


def _medians_ms(client: FlaskClient, attempts: dict[str, tuple[str, str]]) -> dict[str, float]:
    """The median time of TRIES refused logins of each (username, password), taken in turns:
    a burst of other work on the machine (a parallel test) then slows every kind alike instead
    of the one measured at that moment."""
    times: dict[str, list[float]] = {kind: [] for kind in attempts}
    for _ in range(TRIES):
        for kind, (username, password) in attempts.items():
            start = time.perf_counter()
            response = client.post("/login", data={"username": username, "password": password})
            times[kind].append(time.perf_counter() - start)
            assert response.status_code == 200  # refused, the form again
    return {kind: statistics.median(found) * 1000 for kind, found in times.items()}


def test_unknown_and_inactive_names_take_as_long_as_known_ones(
    app: Flask, admin_id: int, record_property
) -> None:
    _unthrottled(app)
    gone = make_user(app, "gone")
    with app.app_context():
        # make_user stores a cheap test hash; the timing must compare the app's own scrypt.
        for user_id in (admin_id, gone):
            db.session.get_one(User, user_id).set_password(PASSWORD)
        db.session.get_one(User, gone).active = False
        db.session.commit()
    client = app.test_client()
    # The dummy hash and the page are made once, on the first attempts.
    client.post("/login", data={"username": "nobody-here", "password": "warm-up-guess"})
    found = _medians_ms(
        client,
        {
            "known": ("admin", "wrong-guess-1"),
            "unknown": ("nobody-here", "wrong-guess-1"),
            "inactive": ("gone", PASSWORD),
        },
    )
    known, unknown, inactive = found["known"], found["unknown"], found["inactive"]
    assert 0.5 < unknown / known < 2, (known, unknown)
    assert 0.5 < inactive / known < 2, (known, inactive)
    backend = app.config["SQLALCHEMY_DATABASE_URI"].split(":")[0]
    record_property(
        "security-summary",
        f"login timing ({backend}): median of {TRIES} wrong logins {known:.0f} ms for a known "
        f"name, {unknown:.0f} ms unknown, {inactive:.0f} ms inactive",
    )


def _throttled_page(app: Flask, username: str) -> tuple[int, str]:
    client = app.test_client()
    for attempt in range(10):
        client.post("/login", data={"username": username, "password": f"guess-{attempt}"})
    response = client.post("/login", data={"username": username, "password": "guess-last"})
    text = response.get_data(as_text=True)
    # The page's own message; the CSRF token and the retry moment differ between any two.
    return response.status_code, text.split("<section")[1].split("Try again in")[0]


def test_the_throttle_answers_alike_for_known_and_unknown_names(app: Flask, admin_id: int) -> None:
    known = _throttled_page(app, "admin")
    throttle.init_app(app)  # fresh counters, the same limits
    assert _throttled_page(app, "nobody-here") == known
    assert known[0] == 429
