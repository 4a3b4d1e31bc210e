"""Slow down password and token guessing: failed attempts are counted per account and address.

Flask-Limiter holds the storage (Redis when NDCG_REDIS_URL is set, so every process and machine
shares the counts; memory otherwise) and the moving-window strategy. Only failures are counted:
once a key has used up one of its limits (NDCG_LOGIN_LIMIT, NDCG_API_AUTH_LIMIT), every attempt
on it is refused with 429 until the window moves on, even with the right password.

When the storage cannot be reached (Redis down), logins go on unthrottled and each attempt
logs an error: the password check still applies, and nobody is locked out by an outage.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from flask import Flask, current_app, request
from flask_limiter import Limiter
from flask_limiter.util import get_remote_address
from limits import RateLimitItem, parse_many
from limits.errors import StorageError

EXTENSION = "ndcg_throttle"
LOGIN = "login"
API_TOKEN = "api-token"


@dataclass(frozen=True)
class Refusal:
    """A refused attempt: which key is blocked and how many seconds until it may try again."""

    key: str
    retry_after: int

    @property
    def retry_at(self) -> str:
        """The moment it may try again, as HH:MM:SS UTC."""
        return time.strftime("%H:%M:%S UTC", time.gmtime(time.time() + self.retry_after))


class Throttle:
    """The app's failure counters: `refused` before checking credentials, `failed` after."""

    def __init__(self, app: Flask) -> None:
        redis_url = app.config.get("NDCG_REDIS_URL")
        self.limiter = Limiter(
            key_func=get_remote_address,
            storage_uri=redis_url or "memory://",
            storage_options={"wrap_exceptions": True},
            strategy="moving-window",
        )
        self.limiter.init_app(app)
        self.prefix = str(app.config.get("NDCG_THROTTLE_PREFIX") or "ndcg")
        self.limits = {
            LOGIN: parse_many(app.config["NDCG_LOGIN_LIMIT"]),
            API_TOKEN: parse_many(app.config["NDCG_API_AUTH_LIMIT"]),
        }

    def _identifiers(self, scope: str, key: str) -> tuple[str, str, str]:
        return (self.prefix, scope, key)

    def refused(self, scope: str, keys: list[str]) -> Refusal | None:
        """The first key that has no failed attempt left in some window, or None."""
        strategy = self.limiter.limiter
        for key in keys:
            waits = [
                self._wait(item, scope, key)
                for item in self.limits[scope]
                if not strategy.test(item, *self._identifiers(scope, key))
            ]
            if waits:
                return Refusal(key, max(waits))
        return None

    def _wait(self, item: RateLimitItem, scope: str, key: str) -> int:
        stats = self.limiter.limiter.get_window_stats(item, *self._identifiers(scope, key))
        return max(1, math.ceil(stats.reset_time - time.time()))

    def failed(self, scope: str, keys: list[str]) -> None:
        """Count one failed attempt against every key."""
        for key in keys:
            for item in self.limits[scope]:
                self.limiter.limiter.hit(item, *self._identifiers(scope, key))


def init_app(app: Flask) -> None:
    """Attach the app's Throttle (after its configuration is final)."""
    app.extensions[EXTENSION] = Throttle(app)


def _throttle() -> Throttle:
    return current_app.extensions[EXTENSION]


def login_keys(username: str) -> list[str]:
    """The keys a login attempt counts against: the account (case-folded) and the address."""
    return [f"user:{username.strip().casefold()}", f"addr:{request.remote_addr or '-'}"]


def token_keys() -> list[str]:
    """The key a failed API token counts against: the address."""
    return [f"addr:{request.remote_addr or '-'}"]


def _storage_down(exc: StorageError) -> None:
    current_app.logger.error(
        "throttle storage unavailable, %s attempt not throttled: %s",
        request.path,
        exc.storage_error,
    )


def refused(scope: str, keys: list[str]) -> Refusal | None:
    """Is this attempt refused? Logs a warning line when it is."""
    try:
        refusal = _throttle().refused(scope, keys)
    except StorageError as exc:
        _storage_down(exc)
        return None
    if refusal is not None:
        current_app.logger.warning(
            "throttled %s attempt: %s has used its failures (%s), retry in %ss, from %s",
            scope,
            refusal.key,
            current_app.config["NDCG_LOGIN_LIMIT" if scope == LOGIN else "NDCG_API_AUTH_LIMIT"],
            refusal.retry_after,
            request.remote_addr,
        )
    return refusal


def failed(scope: str, keys: list[str]) -> None:
    """Count a failed attempt (wrong password, unknown account, bad or revoked token)."""
    try:
        _throttle().failed(scope, keys)
    except StorageError as exc:
        _storage_down(exc)
