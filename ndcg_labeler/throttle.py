"""Slow down password and token guessing: failed attempts are counted per account and address.

The `limits` library holds the storage (Redis when NDCG_REDIS_URL is set, so every process and
machine shares the counts; memory otherwise) and the moving-window strategy. It is imported on
the first counted attempt, not at start-up: `import limits` costs about 0.1 s (its asyncio
storages), which every CLI command and every new worker would otherwise pay. (Flask-Limiter,
its Flask wrapper, is not used: its request hooks had nothing to do here, and its `flask
limiter` CLI plugin was imported by every `flask` command.) Only failures are counted:
once a key has used up one of its limits (NDCG_LOGIN_LIMIT, NDCG_API_AUTH_LIMIT), every attempt
on it is refused with 429 until the window moves on, even with the right password.

When the storage cannot be reached (Redis down), logins go on unthrottled and each attempt
logs an error: the password check still applies, and nobody is locked out by an outage.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from flask import Flask, current_app, request

if TYPE_CHECKING:
    from limits import RateLimitItem
    from limits.strategies import MovingWindowRateLimiter

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
        self.storage_uri = str(app.config.get("NDCG_REDIS_URL") or "memory://")
        self.prefix = str(app.config.get("NDCG_THROTTLE_PREFIX") or "ndcg")
        self.settings = {
            LOGIN: str(app.config["NDCG_LOGIN_LIMIT"]),
            API_TOKEN: str(app.config["NDCG_API_AUTH_LIMIT"]),
        }
        self._lock = threading.Lock()
        self._strategy: MovingWindowRateLimiter | None = None
        self._limits: dict[str, list[RateLimitItem]] = {}

    def _ready(self) -> tuple[MovingWindowRateLimiter, dict[str, list[RateLimitItem]]]:
        """The storage, strategy and parsed limits, made on first use (once per process)."""
        with self._lock:
            if self._strategy is None:
                from limits import parse_many
                from limits.storage import storage_from_string
                from limits.strategies import MovingWindowRateLimiter

                self._limits = {scope: parse_many(text) for scope, text in self.settings.items()}
                storage = storage_from_string(self.storage_uri, wrap_exceptions=True)
                self._strategy = MovingWindowRateLimiter(storage)
            return self._strategy, self._limits

    def _identifiers(self, scope: str, key: str) -> tuple[str, str, str]:
        return (self.prefix, scope, key)

    def refused(self, scope: str, keys: list[str]) -> Refusal | None:
        """The first key that has no failed attempt left in some window, or None."""
        strategy, limits = self._ready()
        for key in keys:
            waits = [
                self._wait(strategy, item, scope, key)
                for item in limits[scope]
                if not strategy.test(item, *self._identifiers(scope, key))
            ]
            if waits:
                return Refusal(key, max(waits))
        return None

    def _wait(
        self, strategy: MovingWindowRateLimiter, item: RateLimitItem, scope: str, key: str
    ) -> int:
        stats = strategy.get_window_stats(item, *self._identifiers(scope, key))
        return max(1, math.ceil(stats.reset_time - time.time()))

    def failed(self, scope: str, keys: list[str]) -> None:
        """Count one failed attempt against every key."""
        strategy, limits = self._ready()
        for key in keys:
            for item in limits[scope]:
                strategy.hit(item, *self._identifiers(scope, key))


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


def _storage_error() -> type[Exception]:
    from limits.errors import StorageError

    return StorageError


def _storage_down(exc: Any) -> None:
    current_app.logger.error(
        "throttle storage unavailable, %s attempt not throttled: %s",
        request.path,
        exc.storage_error,
    )


def refused(scope: str, keys: list[str]) -> Refusal | None:
    """Is this attempt refused? Logs a warning line when it is."""
    throttle = _throttle()
    try:
        refusal = throttle.refused(scope, keys)
    except Exception as exc:
        if not isinstance(exc, _storage_error()):
            raise
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
    throttle = _throttle()
    try:
        throttle.failed(scope, keys)
    except Exception as exc:
        if not isinstance(exc, _storage_error()):
            raise
        _storage_down(exc)
