"""Password rules: long enough and hard to guess (zxcvbn), and checks that take the same time.

zxcvbn estimates how many guesses a password takes from dictionaries of common passwords,
names and words, keyboard patterns, dates and repeats, and it is told the user's name and the
app's so that "ndcg-labeler2026" counts as weak. Score 3 ("safely unguessable: moderate
protection from offline slow-hash scenario") is the least accepted.
"""

from __future__ import annotations

import functools
import secrets

from werkzeug.security import check_password_hash, generate_password_hash

from ndcg_labeler.models import User
from ndcg_labeler.services import ServiceError

MIN_PASSWORD = 10
MIN_SCORE = 3
APP_WORDS = ("ndcg-labeler", "ndcg", "labeler")
# zxcvbn refuses longer input (its matching is quadratic); the first 72 characters of a
# longer passphrase are judged, which only ever underestimates it.
ESTIMATE_CHARS = 72


class PasswordRefused(ServiceError):
    """A new password the rules refuse: forms show it beside the password field."""


def check_new_password(password: str, username: str) -> None:
    """Refuse a password shorter than MIN_PASSWORD or that zxcvbn scores below MIN_SCORE."""
    if len(password) < MIN_PASSWORD:
        raise PasswordRefused(f"The password must have at least {MIN_PASSWORD} characters.")
    # Imported here: its dictionaries take ~0.05 s to load, and of the many modules that
    # import this package (permissions, tokens) only a new password needs them.
    from zxcvbn import zxcvbn

    result = zxcvbn(password[:ESTIMATE_CHARS], user_inputs=[username, *APP_WORDS])
    if result["score"] < MIN_SCORE:
        feedback = result["feedback"]
        reasons = [feedback["warning"], *feedback["suggestions"]]
        why = " ".join(r for r in reasons if r) or "It follows a common pattern."
        raise PasswordRefused(f"This password is too easy to guess. {why}")


@functools.cache
def _dummy_hash() -> str:
    """A hash of a random password, made once with the method real passwords use."""
    return generate_password_hash(secrets.token_urlsafe(16))


def verify_password(user: User | None, password: str) -> bool:
    """True when `user` has this password; costs one hash check whether or not `user` exists.

    Without the dummy check an unknown name answered in 5 ms and a known one in 166 ms, which
    told anyone which names exist.
    """
    if user is None or not user.password_hash:
        check_password_hash(_dummy_hash(), password)
        return False
    return user.check_password(password)
